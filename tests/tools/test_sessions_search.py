"""sessions_search (9.6 §3) on the backend the run uses (SQLite by default; PostgreSQL with
DATABASE_URL): query rules, ranking, snippets, caps, visibility before the limit, the index in the
message's transaction, bad input, and GET /api/v1/search/."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from sessions_app.models import Session
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user


def search(api, **args) -> dict:
    return api.details("sessions_search", args)


def hits(details) -> list[tuple[str, str]]:
    return [(r["sessionKey"], r["snippet"]) for r in details["results"]]


@pytest.fixture
def world(main_session):
    """main (the caller's own), a child of main, and another agent's session."""
    # Particular: the words each session holds are what the searches find.
    main = main_session
    add_messages(main, user("deploy the nightly build"), assistant("The nightly build is green"))
    child = make_session("agent:main:subagent:c1", spawnedBy="agent:main:main")
    add_messages(child, assistant("Nightly deploy finished; build artifacts uploaded"))
    other = make_session("agent:other:main")
    add_messages(other, user("nightly build secrets for the other agent"))
    return {"main": main, "child": child, "other": other}


def test_every_word_must_match_and_results_are_user_and_assistant_text(agent_main, world):
    found = search(agent_main, query="nightly build")
    keys = {k for k, _ in hits(found)}
    assert keys == {"agent:main:main", "agent:main:subagent:c1"}
    assert {r["role"] for r in found["results"]} == {"user", "assistant"}
    assert search(agent_main, query="nightly unicorn")["results"] == []


def test_a_result_has_the_fields_to_read_around_it(agent_main, world):
    add_messages(world["main"], assistant("zebra crossing", id="msg-7"))
    (result,) = search(agent_main, query="zebra")["results"]
    assert result["sessionKey"] == "agent:main:main"
    assert result["sessionId"] == world["main"].session_id
    assert result["messageId"] == "00000003"
    assert result["seq"] == 3 and result["role"] == "assistant"
    assert isinstance(result["timestamp"], int) and result["score"] > 0
    assert result["snippet"] == "zebra crossing"
    assert "truncated" not in search(agent_main, query="zebra")


def test_whole_words_no_prefixes_no_operators(agent_main, world):
    assert search(agent_main, query="night")["results"] == []  # no prefix matching
    # Operators are plain words (OR must be in the text); quotes are quoted, not syntax.
    assert search(agent_main, query="nightly OR unicorn")["results"] == []
    assert len(search(agent_main, query='"nightly" build*')["results"]) == 3
    assert search(agent_main, query="... nightly")["results"] == []  # a token with no word


def test_case_and_diacritics_are_ignored(agent_main, world):
    add_messages(world["main"], user("Un café crème à Zürich"))
    assert len(search(agent_main, query="CAFE creme zurich")["results"]) == 1
    assert len(search(agent_main, query="café")["results"]) == 1


def test_ranking_best_first_then_newest(agent_main, agents):
    session = make_session("agent:main:main")
    add_messages(
        session,
        user("kiwi once among many other words here", timestamp=1000),
        user("kiwi kiwi kiwi", timestamp=2000),
        user("kiwi once among many other words here", timestamp=3000),
    )
    results = search(agent_main, query="kiwi")["results"]
    assert [r["timestamp"] for r in results] == [2000, 3000, 1000]
    scores = [r["score"] for r in results]
    assert scores[0] > scores[1] == scores[2]


def test_tool_results_only_with_include_tools(agent_main, agents):
    session = make_session("agent:main:main")
    add_messages(session, tool_result("exit status banana"))
    assert search(agent_main, query="banana")["results"] == []
    (hit,) = search(agent_main, query="banana", includeTools=True)["results"]
    assert hit["role"] == "toolResult"


def test_snippets_are_redacted_and_capped(agent_main, agents):
    session = make_session("agent:main:main")
    secret = "sk-" + "a1b2c3d4" * 6
    add_messages(session, user(f"the rotation key is {secret} please"))
    (hit,) = search(agent_main, query="rotation")["results"]
    assert secret not in hit["snippet"] and "sk-a1b" in hit["snippet"]
    long = (
        " ".join(f"word{i}" for i in range(200))
        + " needle "
        + " ".join("x" * 9 for _ in range(200))
    )
    add_messages(session, assistant(long))
    (hit,) = search(agent_main, query="needle")["results"]
    assert hit["snippet"].startswith("… ") and "needle" in hit["snippet"]
    assert len(hit["snippet"]) <= 301 and hit["snippet"].endswith("…")


def test_limit_default_cap_and_truncated(agent_main, agents):
    session = make_session("agent:main:main")
    add_messages(session, *[user(f"apple number {i}") for i in range(30)])
    assert len(search(agent_main, query="apple")["results"]) == 10
    found = search(agent_main, query="apple", limit=25)
    assert len(found["results"]) == 25 and found["truncated"] is True
    assert "truncated" not in search(agent_main, query="apple number 7")


def test_visibility_is_applied_before_the_limit(agent_main, agents):
    mine = make_session("agent:main:main")
    add_messages(mine, user("mango"))
    for i in range(30):
        hidden = make_session(f"agent:other:s{i}")
        add_messages(hidden, user("mango mango mango"))  # better ranked, and invisible
    found = search(agent_main, query="mango", limit=1)
    assert [k for k, _ in hits(found)] == ["agent:main:main"]
    assert "truncated" not in found  # hidden hits are not counted either


def test_visibility_follows_the_configuration(agent_main, world):
    assert "agent:other:main" not in {k for k, _ in hits(search(agent_main, query="nightly"))}
    set_config(visibility="all", a2a_enabled=True)
    assert "agent:other:main" in {k for k, _ in hits(search(agent_main, query="nightly"))}
    set_config(visibility="self")
    assert {k for k, _ in hits(search(agent_main, query="nightly"))} == {"agent:main:main"}


def test_a_scope_holding_a_deep_session_is_read_by_the_text_index(agent_main, world):
    """PostgreSQL: past DEEP_SCOPE_MESSAGES the scope's sessions filter the text index's
    matches instead of being ANDed in by the (session, seq) index, which would read every entry
    of a deep session (90 ms at 1.2M messages, BENCHMARKS.md). The answer is the same."""
    from django.test.utils import CaptureQueriesContext

    from sessions_app.reads import search as search_module

    before = hits(search(agent_main, query="nightly build"))
    Session.objects.filter(pk=world["main"].pk).update(
        last_seq=search_module.DEEP_SCOPE_MESSAGES + 1  # what the decision reads
    )
    with CaptureQueriesContext(connection) as queries:
        after = hits(search(agent_main, query="nightly build"))
    assert after == before and len(after) == 3
    text_driven = any("(m.session_id + 0)" in q["sql"] for q in queries.captured_queries)
    assert text_driven == (connection.vendor == "postgresql")
    # On both, the matches are read between the scope's first and last message id.
    assert any("BETWEEN" in q["sql"] for q in queries.captured_queries)
    # PostgreSQL: a query with few matches in the whole table keeps the span out of the index
    # (no BitmapAnd with the primary key over the span); one with many walks the span.
    rare_span = any("(m.id + 0) BETWEEN" in q["sql"] for q in queries.captured_queries)
    assert rare_span == (connection.vendor == "postgresql")


def test_a_deep_scope_answers_the_same_for_a_rare_and_a_common_query(
    agent_main, world, monkeypatch
):
    """search._few_matches picks how a deep scope's span is read on PostgreSQL; either way the
    answer is the same (SQLite never asks)."""
    from django.test.utils import CaptureQueriesContext

    from sessions_app.reads import search as search_module

    Session.objects.filter(pk=world["main"].pk).update(
        last_seq=search_module.DEEP_SCOPE_MESSAGES + 1
    )
    rare = hits(search(agent_main, query="nightly build"))
    monkeypatch.setattr(search_module, "FEW_MATCHES", 0)  # every query is "common" now
    with CaptureQueriesContext(connection) as queries:
        common = hits(search(agent_main, query="nightly build"))
    assert common == rare and len(common) == 3
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not any("(m.id + 0)" in sql for sql in sqls)
    assert any("m.id BETWEEN" in sql for sql in sqls) == (connection.vendor == "postgresql")


def test_a_deep_old_session_is_searched_between_its_first_and_last_message(agent_main, agents):
    """The id span of a deep scope (search._id_span): an old session's matches are found past
    many newer matches elsewhere, a message appended to it later too, and a scope whose
    transcripts hold nothing in the database matches nothing."""
    from sessions_app.reads import search as search_module

    old = make_session("agent:main:main")
    add_messages(old, user("mango early"), assistant("mango reply"))
    newer = make_session("agent:main:discord:dm:zed")
    add_messages(newer, *[user(f"mango {i}") for i in range(30)])
    add_messages(old, user("mango late"))
    Session.objects.filter(pk=old.pk).update(last_seq=search_module.DEEP_SCOPE_MESSAGES + 1)
    found = search(agent_main, query="mango", sessionKey="agent:main:main")["results"]
    assert sorted(r["snippet"] for r in found) == ["mango early", "mango late", "mango reply"]
    assert search_module._id_span([]) is None
    empty = make_session("agent:main:cron:none")
    assert search_module._id_span([empty.pk]) is None


def test_sandboxed_caller_searches_itself_and_what_it_spawned(sandboxed_main, world):
    set_config(visibility="all", a2a_enabled=True)
    keys = {k for k, _ in hits(search(sandboxed_main, query="nightly"))}
    assert keys == {"agent:main:main", "agent:main:subagent:c1"}


def test_archived_sessions_are_searched(agent_main, world):
    Session.objects.filter(pk=world["child"].pk).update(archived_at=world["child"].created_at)
    assert "agent:main:subagent:c1" in {k for k, _ in hits(search(agent_main, query="artifacts"))}


def test_session_key_restricts_to_one_visible_session(agent_main, world):
    found = search(agent_main, query="nightly", sessionKey="agent:main:subagent:c1")
    assert {k for k, _ in hits(found)} == {"agent:main:subagent:c1"}
    found = search(agent_main, query="nightly", sessionKey="current")
    assert {k for k, _ in hits(found)} == {"agent:main:main"}
    found = search(agent_main, query="nightly", sessionKey="main")
    assert {k for k, _ in hits(found)} == {"agent:main:main"}
    by_id = search(agent_main, query="nightly", sessionKey=world["child"].session_id)
    assert {k for k, _ in hits(by_id)} == {"agent:main:subagent:c1"}


def test_a_session_the_caller_may_not_see_is_refused_with_the_search_prefix(agent_main, world):
    details = search(agent_main, query="nightly", sessionKey="agent:other:main")
    assert details == {
        "status": "forbidden",
        "error": "Session search visibility is restricted. Set tools.sessions.visibility=all "
        "to allow cross-agent access.",
    }
    set_config(visibility="all", a2a_enabled=False)
    details = search(agent_main, query="nightly", sessionKey="agent:other:main")
    assert details["error"] == (
        "Agent-to-agent search is disabled. Set tools.agentToAgent.enabled=true to allow "
        "cross-agent access."
    )
    set_config(visibility="all", a2a_enabled=True, a2a_allow=["main"])
    details = search(agent_main, query="nightly", sessionKey="agent:other:main")
    assert details["error"] == "Agent-to-agent search denied by tools.agentToAgent.allow."


def test_the_index_is_written_in_the_messages_transaction(agent_main, agents):
    session = make_session("agent:main:main")
    with pytest.raises(RuntimeError), transaction.atomic():
        add_messages(session, user("papaya rolled back"))
        raise RuntimeError
    assert search(agent_main, query="papaya")["results"] == []
    add_messages(session, user("papaya kept"))
    assert len(search(agent_main, query="papaya")["results"]) == 1


def test_an_edited_message_is_found_by_its_new_text(agent_main, agents):
    """The index follows the message (SQLite: the FTS5 trigger; PostgreSQL: the stored
    search_vector's trigger, migration 0023), also when its content changes in place."""
    from sessions_app.models import Message

    session = make_session("agent:main:main")
    add_messages(session, user("tamarind first"))
    Message.objects.filter(session=session).update(content="kumquat second")
    assert search(agent_main, query="tamarind")["results"] == []
    assert len(search(agent_main, query="kumquat")["results"]) == 1
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT role, search_vector IS NULL FROM sessions_app_message ORDER BY id"
            )
            assert cursor.fetchall() == [("user", False)]


def test_deleted_sessions_leave_the_index(agent_main, agents):
    session = make_session("agent:main:main")
    add_messages(session, user("quince"))
    session.delete()
    make_session("agent:main:main")
    assert search(agent_main, query="quince")["results"] == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM sessions_app_message_fts")
            assert cursor.fetchone()[0] == 0


def test_results_are_capped_at_32_kib(agent_main, agents, monkeypatch):
    from sessions_app.reads import message_search

    monkeypatch.setattr(message_search, "RESULTS_MAX_BYTES", 600)
    session = make_session("agent:main:main")
    add_messages(session, *[user("lime " + "pad " * 80) for _ in range(5)])
    found = search(agent_main, query="lime")
    assert 0 < len(found["results"]) < 5 and found["truncated"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "query required"),
        ({"query": "   "}, "query must not be empty"),
        ({"query": "x" * 4097}, "query must not exceed 4096 characters"),
        ({"query": 5}, "query must be a string"),
        ({"query": ["a"]}, "query must be a string"),
        ({"query": "a", "limit": 26}, "limit must be a positive integer"),
        ({"query": "a", "limit": 0}, "limit must be a positive integer"),
        ({"query": "a", "limit": True}, "limit must be a positive integer"),
        ({"query": "a", "limit": "ten"}, "limit must be a positive integer"),
        ({"query": "a", "includeTools": "maybe"}, "includeTools must be a boolean"),
        ({"query": "a", "sessionKey": 3}, "sessionKey must be a string"),
        ({"nope": 1}, "query required"),  # (an unknown name is ignored: below)
        ({"query": None}, "query required"),
    ],
)
def test_bad_input_is_a_400_naming_the_argument(agent_main, world, args, message):
    response = agent_main.invoke("sessions_search", args)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == message


def test_an_unknown_argument_is_ignored(agent_main, world):
    """As OpenClaw 2026.9.6 treats a tool call's unknown names (REST query strings stay closed)."""
    assert search(agent_main, query="nightly", nope=1) == search(agent_main, query="nightly")


def test_limit_25_and_a_4096_character_query_are_accepted(agent_main, world):
    assert search(agent_main, query="x" * 4096, limit=25)["results"] == []


# --- GET /api/v1/search/ -------------------------------------------------------------------


def test_rest_search_is_the_tool(agent_main, world):
    response = agent_main.get("/api/v1/search/", {"q": "nightly build", "limit": "1"})
    assert response.status_code == 200
    body = response.json()
    assert len(body["results"]) == 1 and body["truncated"] is True
    assert body == search(agent_main, query="nightly build", limit=1)


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "query required"),
        ({"q": " "}, 400, "query must not be empty"),
        ({"q": "a", "limit": "99"}, 400, "limit must be a positive integer"),
        ({"q": "a", "query": "b"}, 400, "q and query cannot be used together"),
        ({"q": "a", "x": "1"}, 400, "Unknown argument for sessions_search: x"),
        (
            {"q": "a", "sessionKey": "agent:other:main"},
            403,
            "Session search visibility is restricted. Set tools.sessions.visibility=all "
            "to allow cross-agent access.",
        ),
    ],
)
def test_rest_search_bad_input(agent_main, world, params, status, message):
    response = agent_main.get("/api/v1/search/", params)
    assert response.status_code == status, response.content
    assert response.json()["error"]["message"] == message


def test_rest_search_needs_a_key(anonymous, world):
    assert anonymous.get("/api/v1/search/", {"q": "nightly"}).status_code == 401


def test_a_common_word_reads_a_bounded_number_of_matches(agent_main, agents, monkeypatch):
    from sessions_app.reads import search as message_search

    monkeypatch.setattr(message_search, "MAX_BACKEND_HITS", 3)
    session = make_session("agent:main:main")
    add_messages(session, *[user(f"olive {i}", timestamp=1000 + i) for i in range(6)])
    found = search(agent_main, query="olive", limit=25)
    assert len(found["results"]) == 4 and found["truncated"] is True  # the cap, and one more
    if connection.vendor == "sqlite":  # FTS5 reads the newest matches first
        assert {r["seq"] for r in found["results"]} == {3, 4, 5, 6}
    session.messages.filter(seq__gt=3).delete()
    assert "truncated" not in search(agent_main, query="olive", limit=25)  # exactly the cap


@pytest.mark.parametrize(
    ("config", "sandboxed"),
    [
        ({"visibility": "self"}, False),
        ({"visibility": "tree"}, False),
        ({"visibility": "agent"}, False),
        ({"visibility": "all", "a2a_enabled": True}, False),
        ({"visibility": "all", "a2a_enabled": True, "a2a_allow": ["main", "research"]}, False),
        ({"visibility": "all", "a2a_enabled": True}, True),
    ],
)
def test_the_search_scope_is_what_the_caller_may_list_plus_itself(agents, config, sandboxed):
    """search_scope reads self/tree by two key lookups; it must equal the list's filter."""
    from django.db.models import Q

    from sessions_app.access import visibility
    from sessions_app.access.identity import requester_for
    from sessions_app.access.visibility import visible_filter
    from sessions_app.models import ApiKey
    from sessions_app.tools.sessions_search import search_scope

    for key, spawned_by in [
        ("agent:main:main", ""),
        ("agent:main:cron:x", ""),
        ("agent:main:subagent:a", "agent:main:main"),
        ("agent:research:subagent:b", "agent:main:main"),
        ("agent:main:subagent:c", "agent:main:cron:x"),
        ("agent:research:main", ""),
        ("agent:other:main", ""),
    ]:
        make_session(key, **({"spawnedBy": spawned_by} if spawned_by else {}))
    set_config(**config)
    key, _ = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"], sandboxed=sandboxed)
    requester = requester_for(key)
    policy = visibility.policy_for(requester)
    visible = visible_filter(policy)
    listable = Session.objects.listable(settings=requester.key_settings)
    if visible:  # (Q(key=…) | Q() would be Q(key=…) alone)
        listable = listable.filter(Q(key=requester.session_key) | visible)
    expected = set(listable.values_list("pk", flat=True))
    scope = search_scope(requester, None)
    if scope.ids is not None:
        found = set(scope.ids)
    elif scope.sessions is not None:
        found = set(scope.sessions.values_list("pk", flat=True))
    else:
        found = set(Session.objects.exclude(key__in=scope.unlisted).values_list("pk", flat=True))
    assert found == expected


def test_args_that_are_not_an_object_are_a_400(agent_main, world):
    response = agent_main.invoke("sessions_search", ["nightly"])
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "args must be a JSON object"


def test_an_outsider_sees_only_its_own_agent_and_no_hidden_counts(outsider, world):
    found = search(outsider, query="nightly build", limit=1)
    assert [k for k, _ in hits(found)] == ["agent:other:main"]
    assert "truncated" not in found  # two hidden hits in main's sessions are not counted


def test_an_ingest_key_cannot_search(ingest, world):
    response = ingest.invoke("sessions_search", {"query": "nightly"})
    assert response.status_code == 403
    assert ingest.get("/api/v1/search/", {"q": "nightly"}).status_code == 403


# --- cold transcripts (9.6 §6.1): excluded and counted ----------------------------------------

ARCHIVED = "Search excludes {n} archived transcripts. Restore a transcript to include it in search."


@pytest.fixture
def cold_dir(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    return settings.COLD_STORAGE_DIR


def test_cold_transcripts_are_excluded_and_counted(agent_main, world, cold_dir):
    from sessions_app.storage import cold_storage

    assert "archivedTranscriptsExcluded" not in search(agent_main, query="nightly")
    for name in ("child", "other"):  # `other` is not visible to agent:main:main
        assert cold_storage.freeze(world[name].pk)
    found = search(agent_main, query="nightly build")
    assert [k for k, _ in hits(found)] == ["agent:main:main", "agent:main:main"]
    assert found["archivedTranscriptsExcluded"] == 1  # only the cold ones it may see
    assert found["warning"] == ARCHIVED.format(n=1)
    rest = agent_main.get("/api/v1/search/", {"q": "nightly build"}).json()
    assert rest == found
    # Restricted to the cold session itself: nothing found, and says why.
    one = search(agent_main, query="artifacts", sessionKey="agent:main:subagent:c1")
    assert one["results"] == [] and one["archivedTranscriptsExcluded"] == 1
    # Reading it restores it (sessions_history): searched again, nothing excluded.
    agent_main.details("sessions_history", {"sessionKey": "agent:main:subagent:c1"})
    again = search(agent_main, query="artifacts")
    assert [k for k, _ in hits(again)] == ["agent:main:subagent:c1"]
    assert "archivedTranscriptsExcluded" not in again and "warning" not in again


def test_with_visibility_all_every_cold_transcript_counts(agent_main, world, cold_dir):
    from sessions_app.storage import cold_storage

    set_config(visibility="all", a2a_enabled=True)
    for name in ("child", "other"):
        assert cold_storage.freeze(world[name].pk)
    assert search(agent_main, query="nightly")["archivedTranscriptsExcluded"] == 2
