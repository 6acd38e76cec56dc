"""sessions_history as OpenClaw 2026.9.6 answers it (9.6 §4.2): messageId/sessionId anchors,
raw-position paging with totalMessages, pendingInputs, hidden control rows, inter-session rows
as the sender's words, and `__openclaw` metadata. Exact texts; bad input is a 400."""

import pytest

from sessions_app.models import Run
from tests.conftest import add_messages, assistant, make_session, tool_result, user
from tests.history_helpers import history, texts


def error_of(response):
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


def test_every_message_carries_the_96_metadata(agent_main, main_session):
    add_messages(main_session, user("hi", timestamp=1700000000000))
    (message,) = history(agent_main)["messages"]
    assert message["__openclaw"] == {
        "id": "00000001",
        "seq": 1,
        "recordTimestampMs": 1700000000000,
        "transcriptPosition": {"source": "transcript", "rawSeq": 1},
    }


def test_total_messages_and_pending_inputs_are_always_present(agent_main, main_session):
    add_messages(main_session, user("a"), assistant("b"))
    details = history(agent_main)
    assert details["totalMessages"] == 2
    assert details["pendingInputs"] == {"items": [], "total": 0}


def test_offset_counts_raw_positions_as_the_reference_observed(agent_main, main_session):
    # 16 rows; tool results at 10, 12 and 14 are positions but not returned rows ([obs] §4.2).
    rows = []
    for seq in range(1, 17):
        rows.append(tool_result(f"t{seq}") if seq in (10, 12, 14) else user(f"m{seq}"))
    add_messages(main_session, *rows)
    first = history(agent_main, limit=3, offset=0)
    assert [m["__openclaw"]["seq"] for m in first["messages"]] == [13, 15, 16]
    assert first["nextOffset"] == 4 and first["totalMessages"] == 16 and first["hasMore"]
    second = history(agent_main, limit=3, offset=first["nextOffset"])
    assert [m["__openclaw"]["seq"] for m in second["messages"]] == [8, 9, 11]
    assert second["nextOffset"] == 9


@pytest.mark.parametrize("include_tools", [False, True])
def test_control_rows_are_hidden_in_both_modes(agent_main, main_session, include_tools):
    add_messages(
        main_session,
        user("question"),
        assistant("REPLY_SKIP"),
        assistant("announce_skip."),
        user("Agent-to-agent announce step."),
        user(
            "A background task completed. …",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:main:subagent:x",
                "sourceTool": "subagent_announce",
            },
        ),
        assistant("NO_REPLY is not hidden"),
        assistant("answer"),
    )
    details = history(agent_main, includeTools=include_tools)
    assert texts(details) == ["question", "NO_REPLY is not hidden", "answer"]
    assert details["totalMessages"] == 7


def test_inter_session_input_renders_as_the_senders_words(agent_main, main_session):
    add_messages(
        main_session,
        user(
            "ping",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:research:main",
                "sourceChannel": "webchat",
                "sourceTool": "sessions_send",
            },
        ),
    )
    (message,) = history(agent_main)["messages"]
    assert message["role"] == "assistant" and message["content"] == "ping"
    assert message["provenance"] == {
        "kind": "inter_session",
        "sourceSessionKey": "agent:research:main",
        "sourceChannel": "webchat",
        "sourceTool": "sessions_send",
    }
    assert message["senderLabel"] == "Forwarded from research"
    assert message["senderSession"] == {"sessionKey": "agent:research:main", "agentId": "research"}


def test_message_id_reads_around_the_anchor(agent_main, main_session):
    add_messages(main_session, *[user(f"m{i}") for i in range(1, 11)])
    details = history(agent_main, messageId="00000005", limit=3, offset=7)
    assert texts(details) == ["m4", "m5", "m6"]
    assert details["totalMessages"] == 10
    assert "offset" not in details and "nextOffset" not in details and "hasMore" not in details
    # at the edge the window grows the other way
    assert texts(history(agent_main, messageId="00000001", limit=3)) == ["m1", "m2", "m3"]


@pytest.mark.parametrize("message_id", ["000000ff", "not-an-id", "0"])
def test_a_missing_message_id_gives_empty_history(agent_main, main_session, message_id):
    add_messages(main_session, user("a"), user("b"))
    details = history(agent_main, messageId=message_id)
    assert details["messages"] == [] and details["totalMessages"] == 2


def test_an_off_path_anchor_gives_empty_history(agent_main, main_session):
    add_messages(main_session, user("a"), tool_result("t"), user("b"))
    assert history(agent_main, messageId="00000002")["messages"] == []
    assert texts(history(agent_main, messageId="00000002", includeTools=True)) == ["a", "t", "b"]


def test_session_id_must_name_the_sessions_transcript(agent_main, main_session):
    add_messages(main_session, user("a"))
    details = history(agent_main, messageId="00000001", sessionId=main_session.session_id)
    assert texts(details) == ["a"]
    other = make_session("agent:main:other")
    response = agent_main.invoke(
        "sessions_history",
        {"sessionKey": "main", "messageId": "00000001", "sessionId": other.session_id},
    )
    assert error_of(response) == "sessionId does not belong to sessionKey"


def test_session_id_requires_message_id(agent_main, main_session):
    response = agent_main.invoke(
        "sessions_history", {"sessionKey": "main", "sessionId": main_session.session_id}
    )
    assert error_of(response) == "sessionId requires messageId"


def _queued(session, text, status=Run.QUEUED):
    return Run.objects.create(
        session=session, kind="send", serial=True, status=status, message=text
    )


def test_pending_inputs_list_queued_and_cancelled_sends(agent_main, main_session):
    add_messages(main_session, user("in the transcript"))
    first = _queued(main_session, "waiting")
    second = _queued(main_session, "stopped", status=Run.ABORTED)
    pending = history(agent_main)["pendingInputs"]
    assert pending["total"] == 2
    assert [(i["id"], i["state"], i["message"]) for i in pending["items"]] == [
        (str(second.pk), "cancelled", {"role": "user", "content": "stopped"}),
        (str(first.pk), "queued", {"role": "user", "content": "waiting"}),
    ]
    assert all(isinstance(i["acceptedAt"], int) for i in pending["items"])


def test_a_send_that_failed_before_it_started_is_interrupted(agent_main, main_session):
    lost = _queued(main_session, "never ran", status=Run.TIMEOUT)
    (item,) = history(agent_main)["pendingInputs"]["items"]
    assert item["id"] == str(lost.pk) and item["state"] == "interrupted"
    # a run whose input is in the transcript is not pending, whatever its end
    Run.objects.filter(pk=lost.pk).update(input_seq=1)
    assert history(agent_main)["pendingInputs"] == {"items": [], "total": 0}


def test_pending_inputs_page_with_pending_before(agent_main, main_session):
    for i in range(25):
        _queued(main_session, f"p{i}")
    first = history(agent_main)["pendingInputs"]
    assert first["total"] == 25 and len(first["items"]) == 20
    assert first["items"][0]["message"]["content"] == "p24"
    assert first["nextBefore"] == 6
    older = history(agent_main, pendingBefore=first["nextBefore"])["pendingInputs"]
    assert [i["message"]["content"] for i in older["items"]] == ["p4", "p3", "p2", "p1", "p0"]
    assert "nextBefore" not in older


def test_an_oversized_pending_input_is_replaced(agent_main, main_session):
    _queued(main_session, "x" * 5000)
    (item,) = history(agent_main)["pendingInputs"]["items"]
    assert item["message"] == {"role": "user", "content": "[Input omitted; request limit: 1]"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"pendingBefore": 0}, "pendingBefore must be a positive integer"),
        ({"pendingBefore": "x"}, "pendingBefore must be a positive integer"),
        ({"messageId": 5}, "messageId must be a string"),
        ({"sessionId": ["a"], "messageId": "1"}, "sessionId must be a string"),
        ({"messageId": "1" * 65}, "messageId must be at most 64 characters"),
    ],
)
def test_bad_new_parameters_are_400(agent_main, main_session, args, message):
    response = agent_main.invoke("sessions_history", {"sessionKey": "main", **args})
    assert error_of(response) == message


def test_snake_case_spellings_of_string_and_number_parameters(agent_main, main_session):
    add_messages(main_session, *[user(f"m{i}") for i in range(1, 6)])
    details = agent_main.details(
        "sessions_history",
        {"session_key": "main", "message_id": "00000003", "limit": 1, "session_id": None},
    )
    assert texts(details) == ["m3"]
    # booleans have no snake_case spelling in 9.6: an unknown argument, which a tool call ignores
    response = agent_main.invoke("sessions_history", {"sessionKey": "main", "include_tools": True})
    plain = agent_main.invoke("sessions_history", {"sessionKey": "main"})
    assert response.status_code == 200 and response.json() == plain.json()
