"""sessions_list (reference §2, api.md §1): parameters, defaults, clamps, filters and row fields."""

import uuid

import pytest

from sessions_app.models import Session, now_ms
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user


@pytest.fixture
def see_all(agents):
    """Agent visibility, so these tests exercise the list itself; visibility has its own file."""
    return set_config(visibility="agent")


def keys_of(details):
    return [row["key"] for row in details["sessions"]]


def test_rows_are_sorted_by_updated_at_descending(agent_main, see_all):
    now = now_ms()
    make_session("cron:old", updatedAt=now - 300_000)
    make_session("cron:new", updatedAt=now - 1_000)
    make_session("cron:mid", updatedAt=now - 60_000)
    assert keys_of(agent_main.details("sessions_list")) == [
        "agent:main:cron:new",
        "agent:main:cron:mid",
        "agent:main:cron:old",
    ]


def test_limit_defaults_to_100_and_is_clamped_to_200(agent_main, see_all):
    Session.objects.bulk_create(
        Session(key=f"agent:main:cron:job-{i}", agent_id="main", kind="cron", updated_at=i)
        for i in range(230)
    )
    default = agent_main.details("sessions_list")
    assert default["count"] == 100 and default["limitApplied"] == 100 and default["hasMore"] is True
    clamped = agent_main.details("sessions_list", {"limit": 5000})
    assert clamped["count"] == 200 and clamped["limitApplied"] == 200
    assert clamped["nextOffset"] == 200


def test_limit_floors_finite_numbers(agent_main, see_all):
    for i in range(3):
        make_session(f"cron:j{i}")
    assert agent_main.details("sessions_list", {"limit": 2.7})["count"] == 2


def test_offset_pages_through_without_overlap(agent_main, see_all):
    now = now_ms()
    for i in range(7):
        make_session(f"cron:j{i}", updatedAt=now - i * 1000)
    first = agent_main.details("sessions_list", {"limit": 3})
    second = agent_main.details("sessions_list", {"limit": 3, "offset": first["nextOffset"]})
    third = agent_main.details("sessions_list", {"limit": 3, "offset": second["nextOffset"]})
    assert keys_of(first) + keys_of(second) + keys_of(third) == [
        f"agent:main:cron:j{i}" for i in range(7)
    ]
    assert third["hasMore"] is False and "nextOffset" not in third


def test_kinds_filter_lowercases_and_ignores_unknown_values(agent_main, see_all):
    make_session("main")
    make_session("cron:daily")
    make_session("discord:group:dev", channel="discord")
    make_session("hook:abc")
    make_session("node-mac")
    make_session("agent:main:whatsapp:direct:+1")
    by_kind = lambda kinds: sorted(keys_of(agent_main.details("sessions_list", {"kinds": kinds})))  # noqa: E731
    assert by_kind([" CRON ", "Hook"]) == ["agent:main:cron:daily", "agent:main:hook:abc"]
    assert by_kind(["group", "bogus"]) == ["agent:main:discord:group:dev"]
    assert by_kind(["node"]) == ["agent:main:node-mac"]
    assert by_kind(["main"]) == ["agent:main:main"]
    assert by_kind(["other"]) == ["agent:main:whatsapp:direct:+1"]
    assert len(by_kind(["bogus"])) == 6  # no valid kind → no filter


def test_active_minutes_keeps_recent_sessions(agent_main, see_all):
    now = now_ms()
    make_session("cron:recent", updatedAt=now - 2 * 60_000)
    make_session("cron:stale", updatedAt=now - 90 * 60_000)
    assert keys_of(agent_main.details("sessions_list", {"activeMinutes": 10})) == [
        "agent:main:cron:recent"
    ]


def test_reserved_keys_are_never_listed(agent_main, operator, see_all):
    make_session("global")
    make_session("unknown")
    make_session("main")
    assert keys_of(agent_main.details("sessions_list")) == ["agent:main:main"]


def test_scope_global_lists_the_global_session_as_main(agent_main, see_all):
    set_config(session_scope="global")
    make_session("global", displayName="Everyone")
    make_session("unknown")
    rows = agent_main.details("sessions_list")["sessions"]
    assert [(r["key"], r["kind"]) for r in rows] == [("main", "main")]


def test_message_limit_includes_last_messages_without_tool_results(agent_main, see_all):
    session = make_session("main")
    add_messages(session, user("one"), assistant("two"), tool_result("three"), assistant("four"))
    row = agent_main.details("sessions_list", {"messageLimit": 3})["sessions"][0]
    # the last 3 are two, three (toolResult, dropped) and four — as OpenClaw, fewer may come back
    assert [m["content"][0]["text"] for m in row["messages"]] == ["two", "four"]
    assert [m["__openclaw"]["seq"] for m in row["messages"]] == [2, 4]


def test_message_limit_zero_omits_messages_and_is_clamped_to_20(agent_main, see_all):
    session = make_session("main")
    add_messages(session, *[user(f"m{i}") for i in range(30)])
    assert "messages" not in agent_main.details("sessions_list")["sessions"][0]
    row = agent_main.details("sessions_list", {"messageLimit": 500})["sessions"][0]
    assert len(row["messages"]) == 20 and row["messages"][-1]["content"] == "m29"


def test_agent_label_search_and_archived_filters(agent_main, see_all):
    make_session("cron:a", label="nightly", displayName="Nightly build")
    make_session("cron:b", label="weekly", subject="Release train")
    archived = make_session("cron:c", label="nightly")
    archived.archive()
    assert keys_of(agent_main.details("sessions_list", {"label": "nightly"})) == [
        "agent:main:cron:a"
    ]
    assert keys_of(agent_main.details("sessions_list", {"search": "RELEASE"})) == [
        "agent:main:cron:b"
    ]
    assert keys_of(agent_main.details("sessions_list", {"search": "nightly build"})) == [
        "agent:main:cron:a"
    ]
    assert keys_of(agent_main.details("sessions_list", {"archived": True})) == ["agent:main:cron:c"]
    assert len(agent_main.details("sessions_list", {"archived": "all"})["sessions"]) == 3
    assert agent_main.details("sessions_list", {"agentId": "research"})["sessions"] == []


def test_search_matches_session_id(agent_main, see_all):
    session = make_session("cron:a")
    make_session("cron:b")
    assert keys_of(agent_main.details("sessions_list", {"search": str(session.session_id)})) == [
        "agent:main:cron:a"
    ]


def test_row_has_every_field_of_the_seeds_and_api(agent_main, see_all):
    session_id = str(uuid.uuid4())
    make_session(
        "discord:group:dev",
        sessionId=session_id,
        updatedAt=1_700_000_000_000,
        channel="discord",
        chatType="group",
        displayName="discord:#dev",
        label="dev",
        model="gpt-x",
        contextTokens=128000,
        inputTokens=10,
        outputTokens=5,
        thinkingLevel="low",
        verboseLevel="on",
        systemSent=True,
        abortedLastRun=False,
        sendPolicy="deny",
        deliveryContext={
            "channel": "discord",
            "to": "channel:dev",
            "accountId": "bot",
            "threadId": 42.0,
        },
    )
    child = make_session(
        "agent:main:subagent:abc", spawnedBy="agent:main:discord:group:dev", spawnDepth=1
    )
    rows = {r["key"]: r for r in agent_main.details("sessions_list")["sessions"]}
    row = rows["agent:main:discord:group:dev"]
    assert row == {
        "key": "agent:main:discord:group:dev",
        "kind": "group",
        "channel": "discord",
        "agentId": "main",
        "label": "dev",
        "displayName": "discord:#dev",
        "model": "gpt-x",
        "thinkingLevel": "low",
        "verboseLevel": "on",
        "sendPolicy": "deny",
        "deliveryContext": {
            "channel": "discord",
            "to": "channel:dev",
            "accountId": "bot",
            "threadId": 42,
        },
        "updatedAt": 1_700_000_000_000,
        "stateVersion": 2,  # its state log: created, child_spawned (9.6 §2.2)
        "sessionId": session_id,
        "contextTokens": 128000,
        "totalTokens": 15,
        "systemSent": True,
        "abortedLastRun": False,
        "lastChannel": "discord",
        "lastTo": "channel:dev",
        "lastAccountId": "bot",
        "transcriptPath": f"/api/v1/transcripts/{session_id}.jsonl",
        "spawnDepth": 0,
        "childSessions": [child.key],
        "archived": False,
        "pinned": False,
    }
    assert rows[child.key]["parentSessionKey"] == "agent:main:discord:group:dev"
    assert rows[child.key]["spawnedBy"] == "agent:main:discord:group:dev"


def test_optional_fields_are_omitted_when_absent(agent_main, see_all):
    make_session("cron:bare")
    row = agent_main.details("sessions_list")["sessions"][0]
    for absent in (
        "label",
        "displayName",
        "deliveryContext",
        "sendPolicy",
        "model",
        "lastChannel",
        "status",
        "messages",
    ):
        assert absent not in row
    assert row["channel"] == "internal" and row["totalTokens"] == 0


def test_status_shows_the_latest_run(agent_main, see_all):
    session = make_session("cron:a")
    Session.objects.filter(pk=session.pk).update(run_status="running")
    assert agent_main.details("sessions_list")["sessions"][0]["status"] == "running"


def test_rest_list_takes_the_same_parameters(agent_main, see_all):
    make_session("cron:a")
    make_session("hook:b")
    response = agent_main.get("/api/v1/sessions/", {"kinds": "cron,hook", "limit": "1"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1 and body["hasMore"] is True


def page_queries() -> int:
    """The page, then the children of its rows by the page's keys. PostgreSQL read both in one
    statement until issue 18 added the second on purpose: the children as a correlated subquery
    were planned from statistics alone and scanned the whole table per page row on real data."""
    return 2


def _requester():
    from sessions_app.access.identity import requester_for
    from sessions_app.models import ApiKey

    return requester_for(ApiKey.objects.get(scope="agent", sandboxed=False))


@pytest.mark.parametrize("message_limit", [0, 5])
def test_query_count_does_not_grow_with_rows(
    agent_main, see_all, django_assert_num_queries, message_limit
):
    from sessions_app.tools.sessions_list import sessions_list

    def fill(n):
        for i in range(n):
            session = make_session(f"cron:j{len(Session.objects.all())}-{i}")
            add_messages(session, user("a"), tool_result("b"), assistant("c"))
            make_session(f"agent:main:subagent:{session.pk}", spawnedBy=session.key)

    fill(2)
    requester = _requester()
    # the page, the children of its rows, then the last messages
    expected = page_queries() + (1 if message_limit else 0)
    with django_assert_num_queries(expected):
        small = sessions_list(requester=requester, args={"messageLimit": message_limit})
    fill(40)
    with django_assert_num_queries(expected):
        large = sessions_list(requester=requester, args={"messageLimit": message_limit})
    assert large["count"] > small["count"] >= 4


def test_http_list_query_count_is_fixed(agent_main, see_all, django_assert_max_num_queries):
    for i in range(30):
        add_messages(make_session(f"cron:j{i}"), user("x"))
    agent_main.details("sessions_list")  # first use stamps last_used_at
    # the key with its agent and the gateway settings (one statement since issue 18, which
    # also reads the default agent's sandbox flag), sessions, children, last messages
    with django_assert_max_num_queries(4):
        assert agent_main.details("sessions_list", {"messageLimit": 5})["count"] == 30


@pytest.mark.parametrize(
    ("allow", "agents_read"),
    [
        ([], 0),  # the page and the last messages: every agent is visible, none is read
        (["*"], 0),
        (["main", "res*"], 1),  # + the agent ids, to spell out the visible ones
    ],
)
def test_all_visibility_reads_agents_only_for_a_restrictive_allow_list(
    agent_main, agents, django_assert_num_queries, allow, agents_read
):
    set_config(visibility="all", a2a_enabled=True, a2a_allow=allow)
    for key in ("main", "agent:research:main", "agent:other:main"):
        add_messages(make_session(key), user("hi"), tool_result("t"), assistant("yo"))
    requester = _requester()
    from sessions_app.tools.sessions_list import sessions_list

    with django_assert_num_queries(page_queries() + 1 + agents_read):
        details = sessions_list(requester=requester, args={"messageLimit": 2})
    listed = {row["key"]: row["messages"] for row in details["sessions"]}
    assert set(listed) == (
        {"agent:main:main", "agent:research:main"}
        if agents_read
        else {"agent:main:main", "agent:research:main", "agent:other:main"}
    )
    # the last two are the toolResult (dropped) and the assistant reply
    assert all([m["role"] for m in messages] == ["assistant"] for messages in listed.values())


def test_message_previews_are_sanitised_like_history(agent_main, see_all):
    session = make_session("main")
    add_messages(
        session,
        user("x" * 5000),
        assistant("token=abcdefghijklmnopqrstuvwx"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "text", "text": "short"},
            ],
            "usage": {"input": 1, "output": 2},
            "cost": 0.1,
        },
    )
    row = agent_main.details("sessions_list", {"messageLimit": 3})["sessions"][0]
    long_text, secret, blocks = row["messages"]
    assert len(long_text["content"]) == 4000 and long_text["content"].endswith("…(truncated)…")
    assert secret["content"][0]["text"] == "token=abcdef…uvwx"
    assert "usage" not in blocks and "cost" not in blocks
    assert blocks["content"] == [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "image", "mimeType": "image/png", "omitted": True, "bytes": 8},
        {"type": "text", "text": "short"},
    ]


def test_child_sessions_are_the_active_ones_newest_first(agent_main, see_all):
    parent = make_session("main")
    now = now_ms()
    make_session("agent:main:subagent:old", spawnedBy=parent.key, updatedAt=now - 5_000)
    make_session("agent:main:subagent:new", spawnedBy=parent.key, updatedAt=now - 1_000)
    make_session("agent:main:subagent:gone", spawnedBy=parent.key, updatedAt=now).archive()
    rows = {r["key"]: r for r in agent_main.details("sessions_list")["sessions"]}
    assert rows["agent:main:main"]["childSessions"] == [
        "agent:main:subagent:new",
        "agent:main:subagent:old",
    ]
    assert rows["agent:main:subagent:new"]["childSessions"] == []
    assert "childSessionsTruncated" not in rows["agent:main:main"]


def test_child_sessions_list_the_newest_100_and_say_more_exist(agent_main, see_all):
    """A parent with thousands of children made a page of megabytes: a row lists its newest
    CHILD_SESSIONS_MAX active children and says when there are more (whole rows, no byte cut)."""
    from sessions_app.rows import CHILD_SESSIONS_MAX

    parent = make_session("main")
    other = make_session("cron:few")
    now = now_ms()
    Session.objects.bulk_create(
        Session(
            key=f"agent:main:subagent:c{i:03d}",
            agent_id="main",
            kind="other",
            spawned_by=parent.key,
            updated_at=now - 100_000 + i,
        )
        for i in range(CHILD_SESSIONS_MAX + 5)
    )
    make_session("agent:main:subagent:only", spawnedBy=other.key, updatedAt=now - 200_000)
    rows = {r["key"]: r for r in agent_main.details("sessions_list", {"limit": 200})["sessions"]}

    listed = rows["agent:main:main"]["childSessions"]
    newest = CHILD_SESSIONS_MAX + 4
    assert listed == [f"agent:main:subagent:c{i:03d}" for i in range(newest, 4, -1)]
    assert rows["agent:main:main"]["childSessionsTruncated"] is True
    assert rows["agent:main:cron:few"]["childSessions"] == ["agent:main:subagent:only"]
    assert "childSessionsTruncated" not in rows["agent:main:cron:few"]


def test_tree_pages_through_the_session_and_its_children_newest_first(agent_main, agents):
    """Under `tree` the page is the union of the session itself and its children, each read
    newest first (issue 18: one OR read the whole activity index); paging still walks them in
    one order, the session among its children where its activity puts it."""
    set_config(visibility="tree")
    now = now_ms()
    main = make_session("main", updatedAt=now - 3_500)
    for i in range(7):
        make_session(f"agent:main:subagent:c{i}", spawnedBy=main.key, updatedAt=now - i * 1000)
    make_session("cron:other", updatedAt=now + 1)  # the agent's, not in the tree
    make_session("agent:main:subagent:gone", spawnedBy=main.key, updatedAt=now).archive()

    listed, offset = [], 0
    while offset is not None:
        page = agent_main.details("sessions_list", {"limit": 3, "offset": offset})
        listed += keys_of(page)
        offset = page.get("nextOffset")
    children = [f"agent:main:subagent:c{i}" for i in range(7)]
    assert listed == [*children[:4], "agent:main:main", *children[4:]]
