"""sessions_history (reference §3, api.md §1): limits, includeTools, sanitisation, the 80 KiB cap,
redaction, paging, and sessionId resolution."""

import json

import pytest

from sessions_app.lib.sanitize import TRUNCATION_SUFFIX
from tests.conftest import add_messages, assistant, set_config, tool_result, user
from tests.history_helpers import history, texts
from tests.runs.helpers import completed_spawn


def test_returns_raw_messages_oldest_first_with_seq(agent_main, main_session):
    add_messages(
        main_session, user("hi", senderName="alice"), assistant("hello", stopReason="stop")
    )
    details = history(agent_main)
    assert details["sessionKey"] == "agent:main:main"
    first, second = details["messages"]
    assert first["role"] == "user" and first["content"] == "hi" and first["senderName"] == "alice"
    assert second["stopReason"] == "stop" and second["__openclaw"]["seq"] == 2
    assert details["truncated"] is False and details["droppedMessages"] is False
    assert details["bytes"] == len(
        json.dumps(details["messages"], ensure_ascii=False, separators=(",", ":")).encode()
    )


def test_include_tools_false_drops_only_tool_result_role(agent_main, main_session):
    add_messages(
        main_session,
        user("a"),
        tool_result("b"),
        {"role": "tool", "content": "c"},
        assistant("d"),
    )
    assert texts(history(agent_main)) == ["a", "c", "d"]
    assert texts(history(agent_main, includeTools=True)) == ["a", "b", "c", "d"]


def test_limit_keeps_the_last_messages_and_defaults_to_200(agent_main, main_session):
    add_messages(main_session, *[user(f"m{i}") for i in range(250)])
    assert texts(history(agent_main, limit=3)) == ["m247", "m248", "m249"]
    default = history(agent_main)
    assert len(default["messages"]) == 200 and default["messages"][0]["content"] == "m50"
    assert default["hasMore"] is True


def test_limit_is_capped_at_1000(agent_main, main_session):
    add_messages(main_session, *[user("x") for _ in range(1000)])
    add_messages(main_session, *[user("y") for _ in range(5)])
    # 1000 rows (plus one to learn whether more exist) are read; with the 9.6 metadata they
    # no longer fit in 80 KiB, so the byte cap then drops the oldest of them.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        details = history(agent_main, limit=10**6)
    assert any("LIMIT 1001" in q["sql"] for q in queries.captured_queries)
    assert details["messages"][-1]["content"] == "y" and details["droppedMessages"] is True


@pytest.mark.parametrize("include_tools", [False, True])
def test_offset_pages_backwards_without_gaps(agent_main, main_session, include_tools):
    add_messages(
        main_session, *[user(f"m{i}") if i % 3 else tool_result(f"m{i}") for i in range(20)]
    )
    seen = []
    offset = 0
    while True:
        page = history(agent_main, limit=4, offset=offset, includeTools=include_tools)
        seen = texts(page) + seen
        if not page["hasMore"]:
            break
        offset = page["nextOffset"]
    expected = [f"m{i}" for i in range(20) if include_tools or i % 3]
    assert seen == expected


def test_session_id_resolves_to_its_key(agent_main, main_session):
    add_messages(main_session, user("by id"))
    details = agent_main.details("sessions_history", {"sessionKey": str(main_session.session_id)})
    assert details["sessionKey"] == "agent:main:main" and texts(details) == ["by id"]


def test_unknown_session_id_is_an_error_with_the_exact_text(agent_main, main_session):
    missing = "5d0c3a52-8f1e-4c7e-9a8e-000000000000"
    details = agent_main.details("sessions_history", {"sessionKey": missing})
    assert details == {
        "status": "error",
        "error": f"Session not found: {missing} (use the full sessionKey from sessions_list)",
    }


def test_unknown_session_id_from_a_sandbox_is_forbidden(sandboxed_main, main_session):
    missing = "5d0c3a52-8f1e-4c7e-9a8e-000000000000"
    details = sandboxed_main.details("sessions_history", {"sessionKey": missing})
    assert details == {
        "status": "forbidden",
        "error": f"Session not visible from this sandboxed agent session: {missing}",
    }


def test_unknown_key_is_not_found(agent_main, agents):
    set_config(visibility="agent")
    details = agent_main.details("sessions_history", {"sessionKey": "cron:nope"})
    assert details["status"] == "error" and details["error"].startswith(
        "Session not found: cron:nope"
    )


def test_long_text_is_truncated_to_4000_with_suffix(agent_main, main_session):
    add_messages(main_session, user("x" * 5000), assistant("y" * 4500))
    details = history(agent_main)
    content, block = details["messages"][0]["content"], details["messages"][1]["content"][0]["text"]
    assert len(content) == 4000 and content.endswith(TRUNCATION_SUFFIX)
    assert len(block) == 4000 and block.endswith(TRUNCATION_SUFFIX)
    assert details["contentTruncated"] is True and details["truncated"] is True


def test_truncation_never_splits_a_surrogate_pair(agent_main, main_session):
    add_messages(main_session, user("😀" * 3000))
    content = history(agent_main)["messages"][0]["content"]
    body = content[: -len(TRUNCATION_SUFFIX)]
    assert set(body) == {"😀"}
    assert len(content.encode("utf-16-le")) // 2 <= 4000


def test_details_usage_cost_and_signatures_are_removed(agent_main, main_session):
    add_messages(
        main_session,
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": "ok"},
            ],
            "usage": {"input": 1},
            "cost": 0.1,
        },
        {**tool_result("r"), "details": {"big": "x"}},
    )
    details = history(agent_main, includeTools=True)
    first, second = details["messages"]
    assert "usage" not in first and "cost" not in first and "details" not in second
    assert first["content"][0] == {"type": "thinking", "thinking": "hmm"}
    assert details["contentTruncated"] is True


def test_image_data_is_replaced_by_its_size(agent_main, main_session):
    data = "QUJD" * 100
    add_messages(
        main_session,
        {"role": "user", "content": [{"type": "image", "data": data, "mimeType": "image/png"}]},
    )
    block = history(agent_main)["messages"][0]["content"][0]
    assert block == {"type": "image", "mimeType": "image/png", "omitted": True, "bytes": len(data)}


def test_credentials_are_redacted_and_flagged(agent_main, main_session):
    add_messages(
        main_session, user("my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456 ok"), user("plain")
    )
    details = history(agent_main)
    assert "abcdefghijklmnopqrstuvwxyz" not in details["messages"][0]["content"]
    assert details["contentRedacted"] is True
    assert details["messages"][1]["content"] == "plain"


def test_byte_cap_drops_oldest_messages_first(agent_main, main_session):
    add_messages(main_session, *[user(f"{i:03d}" + "z" * 3900) for i in range(40)])
    details = history(agent_main)
    assert details["bytes"] <= 80 * 1024
    assert details["droppedMessages"] is True and details["truncated"] is True
    kept = [m["content"][:3] for m in details["messages"]]
    assert kept[-1] == "039" and kept == sorted(kept) and len(kept) < 40
    # the dropped ones come on the next page
    assert details["hasMore"] is True
    older = history(agent_main, offset=details["nextOffset"])
    assert older["messages"][-1]["content"][:3] == f"{int(kept[0]) - 1:03d}"


def test_a_single_message_over_the_cap_becomes_a_placeholder(agent_main, main_session):
    blocks = [{"type": "text", "text": "w" * 3900} for _ in range(30)]
    add_messages(main_session, {"role": "assistant", "content": blocks})
    details = history(agent_main)
    assert details["messages"] == [
        {
            "role": "assistant",
            "content": "[sessions_history omitted: message too large]",
            "__openclaw": {"id": "00000001", "seq": 1},
        }
    ]
    assert details["droppedMessages"] is True and details["truncated"] is True


def test_http_history_pages_by_cursor(agent_main, main_session):
    add_messages(main_session, *[user(f"m{i}") for i in range(10)])
    first = agent_main.get("/api/v1/sessions/main/history/", {"limit": 4}).json()
    assert [m["content"] for m in first["messages"]] == ["m6", "m7", "m8", "m9"]
    # Issue 17.6: one list, `messages` (as the tool and the API schema name it), not twice.
    assert "items" not in first
    assert first["hasMore"] is True and first["nextCursor"] == "7"
    second = agent_main.get(
        "/api/v1/sessions/main/history/", {"limit": 4, "cursor": "seq:7"}
    ).json()
    assert [m["content"] for m in second["messages"]] == ["m2", "m3", "m4", "m5"]
    last = agent_main.get(
        "/api/v1/sessions/main/history/", {"limit": 4, "cursor": second["nextCursor"]}
    ).json()
    assert [m["content"] for m in last["messages"]] == ["m0", "m1"] and last["hasMore"] is False
    assert "nextCursor" not in last


def test_http_history_marks_internal_rows_and_the_tool_and_export_stay_raw(
    agent_main, main_session
):
    """Issue 29.4: on a real completion turn the HTTP history says which rows are internal
    (`internal: {kind, summary}`, absent on the rest); sessions_history keeps 9.6's answer
    (the prompt hidden, NO_REPLY shown, no new field) and the JSONL export stays raw."""
    add_messages(main_session, user("find papers"))
    completed_spawn(agent_main, label="papers")
    page = agent_main.get("/api/v1/sessions/main/history/").json()
    marks = [m.get("internal") for m in page["messages"]]
    assert marks == [
        None,
        {"kind": "completion", "summary": "Sub-agent papers finished: success"},
        {"kind": "skip", "summary": "Replied NO_REPLY (nothing to send)"},
        None,  # the sub-agent's report is content
    ]
    assert page["messages"][1]["content"].startswith("A background task completed.")
    tool = history(agent_main)
    assert texts(tool)[0] == "find papers" and "NO_REPLY" in texts(tool)
    assert len(tool["messages"]) == 3  # the completion prompt is hidden, as in 9.6
    assert not any("internal" in m for m in tool["messages"])
    export = b"".join(
        agent_main.get("/api/v1/sessions/main/transcript.jsonl").streaming_content
    ).decode()
    assert '"internal":' not in export and "A background task completed." in export


def test_http_history_of_a_missing_session_is_404(agent_main, agents):
    set_config(visibility="agent")
    response = agent_main.get("/api/v1/sessions/cron:nope/history/")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"


def test_transcript_jsonl_is_openclaw_shaped(agent_main, main_session):
    add_messages(main_session, user("a"), tool_result("b"), assistant("c"))
    response = agent_main.get("/api/v1/sessions/agent%3Amain%3Amain/transcript.jsonl")
    assert response.status_code == 200
    lines = [
        json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()
    ]
    assert lines[0]["type"] == "session" and lines[0]["id"] == str(main_session.session_id)
    messages = lines[1:]
    assert [line["message"]["role"] for line in messages] == ["user", "toolResult", "assistant"]
    assert messages[0]["parentId"] is None and messages[1]["parentId"] == messages[0]["id"]
    assert messages[1]["message"]["toolCallId"] == "call_1"


def test_history_query_count_is_fixed(agent_main, main_session, django_assert_num_queries):
    from sessions_app.access.identity import requester_for
    from sessions_app.models import ApiKey
    from sessions_app.tools.sessions_history import sessions_history

    add_messages(main_session, *[user("x") for _ in range(300)])
    requester = requester_for(ApiKey.objects.get(scope="agent", sandboxed=False))
    with django_assert_num_queries(3):  # the session, its pending inputs, the page
        sessions_history(requester=requester, args={"sessionKey": "main", "limit": 200})


@pytest.mark.parametrize(
    "secret",
    [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ghp_abcdefghijklmnopqrstuvwx12",
        "github_pat_abcdefghijklmnopqrstuvwx",
        "xoxb-1234567890-abcdefgh",
        "AKIAABCDEFGHIJKLMNOP",
        "AIza" + "b" * 35,
        "ocs_0123456789ab_abcdefghijklmnopqrstuvwx",
        "Authorization: Bearer abcdefghijklmnopqrstuvwx",
        "password=hunter2hunter2",
        "API_KEY: 'abcdefgh12345'",
        "client_secret=abcdefgh12345",
    ],
)
def test_every_credential_shape_is_masked(secret):
    from sessions_app.lib.sanitize import redact

    masked, changed = redact(f"before {secret} after")
    assert changed and masked != f"before {secret} after"
    assert masked.startswith("before ") and masked.endswith(" after")


def test_the_redaction_decision_is_stored_with_the_message(agent_main, main_session):
    from sessions_app.models import Message

    add_messages(main_session, user("token=abcdefgh12345678"), user("nothing to see"))
    assert list(Message.objects.order_by("seq").values_list("redact_needed", flat=True)) == [
        True,
        False,
    ]


def test_rows_of_unknown_status_are_still_redacted(agent_main, main_session):
    from sessions_app.models import Message

    add_messages(main_session, user("placeholder"))
    # A row written around the store (an older import, a bulk load) has no stored decision.
    Message.objects.filter(session=main_session).update(
        content="key sk-proj-abcdefghijklmnopqrstuvwxyz", redact_needed=None
    )
    details = history(agent_main)
    assert "abcdefghijklmnopqrstuvwxyz" not in details["messages"][0]["content"]
    assert details["contentRedacted"] is True


def test_transcript_path_names_the_session_id_and_serves_the_same_export(agent_main, main_session):
    add_messages(main_session, user("a"), assistant("b"))
    rows = agent_main.details("sessions_list")["sessions"]
    path = next(r["transcriptPath"] for r in rows if r["key"] == "agent:main:main")
    assert path == f"/api/v1/transcripts/{main_session.session_id}.jsonl"

    by_id = agent_main.get(path)
    by_key = agent_main.get("/api/v1/sessions/agent%3Amain%3Amain/transcript.jsonl")

    assert by_id.status_code == by_key.status_code == 200
    assert by_id["Content-Type"] == by_key["Content-Type"]
    assert b"".join(by_id.streaming_content) == b"".join(by_key.streaming_content)


def test_transcript_by_session_id_checks_access_and_input(agent_main, outsider, main_session):
    path = f"/api/v1/transcripts/{main_session.session_id}.jsonl"
    assert outsider.get(path).status_code == 403
    missing = agent_main.get("/api/v1/transcripts/0b7c1a52-0000-4000-8000-000000000000.jsonl")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
    # A key is not a sessionId here: it is not looked up as one.
    assert agent_main.get("/api/v1/transcripts/agent:main:main.jsonl").status_code == 404
    assert agent_main.get(path, {"raw": "1"}).status_code == 403  # operator keys only
    assert agent_main.get(path, {"bogus": "1"}).status_code == 400


def test_flags_on_a_small_history_mean_what_the_reference_says(agent_main, main_session):
    """Issue 17.4. Reference §3.3: "Delete `details`, `usage`, `cost` keys if present (each
    deletion marks contentTruncated)" and §3.4: `truncated = droppedMessages || contentTruncated
    || hardCapped`. So the flags follow from those deletions and from cuts, and from nothing else:
    the same four short messages are flagged only when one of them carried `usage`."""
    plain = [user("hi"), assistant("hello"), user("and?"), assistant("done")]
    add_messages(main_session, *plain)
    details = history(agent_main)
    assert len(details["messages"]) == 4 and details["bytes"] < 1000
    flags = ("truncated", "droppedMessages", "contentTruncated", "contentRedacted")
    assert {name: details[name] for name in flags} == dict.fromkeys(flags, False)
    assert not any(TRUNCATION_SUFFIX in str(m["content"]) for m in details["messages"])

    add_messages(main_session, {**assistant("with tokens"), "usage": {"input": 12, "output": 3}})
    details = history(agent_main, limit=4)
    assert "usage" not in details["messages"][-1]
    assert details["contentTruncated"] is True and details["truncated"] is True
    assert details["droppedMessages"] is False and details["contentRedacted"] is False
