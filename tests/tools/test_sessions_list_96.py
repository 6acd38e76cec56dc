"""sessions_list as OpenClaw 2026.9.6 calls it (9.6 §4.1): the new filters, the pinned / group /
owner row fields, derivedTitle and lastMessagePreview, and the visibility note. Filters only
narrow; bad values are a 400 naming the parameter."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.access.identity import requester_for
from sessions_app.manage import session_admin
from sessions_app.models import ApiKey, Message, Run, Session
from sessions_app.reads import list_enrichment
from sessions_app.tools.sessions_list import RELATIONSHIP_TEXT, sessions_list
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user
from tests.runs.helpers import completed_spawn


@pytest.fixture
def see_agent(agents):
    return set_config(visibility="agent")


def keys_of(details):
    return sorted(row["key"] for row in details["sessions"])


def listed(api, **args):
    return api.details("sessions_list", args)


def error_of(response):
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


def extra(session, **values):
    Session.objects.filter(pk=session.pk).update(extra={**(session.extra or {}), **values})


def test_pinned_and_group_filter_and_show(agent_main, see_agent):
    pinned = make_session("agent:main:discord:dm:pinned")
    Session.objects.filter(pk=pinned.pk).update(pinned_at=timezone.now(), category="ops")
    plain = make_session("agent:main:discord:dm:plain")
    assert keys_of(listed(agent_main, pinned=True)) == [pinned.key]
    assert plain.key in keys_of(listed(agent_main, pinned=False))
    assert pinned.key not in keys_of(listed(agent_main, pinned="false"))
    assert keys_of(listed(agent_main, group="ops")) == [pinned.key]
    assert pinned.key not in keys_of(listed(agent_main, group=""))  # "" = ungrouped
    assert plain.key in keys_of(listed(agent_main, group=""))
    rows = {r["key"]: r for r in listed(agent_main)["sessions"]}
    assert rows[pinned.key]["pinned"] is True and rows[pinned.key]["group"] == "ops"
    assert rows[plain.key]["pinned"] is False and "group" not in rows[plain.key]


def test_owner_and_creator_filters(agent_main, see_agent):
    owned = make_session("agent:main:discord:dm:owned")
    session_admin.set_owner(owned, {"type": "human", "id": "ann"})
    created = make_session("agent:main:discord:dm:created")
    extra(created, createdActor={"type": "human", "id": "ann"})
    reassigned = make_session("agent:main:discord:dm:reassigned")
    extra(
        reassigned, createdActor={"type": "human", "id": "ann"}, owner={"type": "human", "id": "bo"}
    )
    make_session("agent:main:discord:dm:nobody")

    # ownerId: the current owner, else the creator (9.6)
    assert keys_of(listed(agent_main, ownerId="ann")) == sorted([owned.key, created.key])
    assert keys_of(listed(agent_main, ownerId="bo")) == [reassigned.key]
    assert keys_of(listed(agent_main, creatorId="ann")) == sorted([created.key, reassigned.key])
    row = next(r for r in listed(agent_main)["sessions"] if r["key"] == owned.key)
    assert row["owner"] == {"actor": {"type": "human", "id": "ann"}}


def test_project_and_workspace_filters_read_stored_values(agent_main, see_agent):
    stored = make_session("agent:main:discord:dm:project")
    extra(stored, projectId="p1", workspaceDir="/work/p1")
    make_session("agent:main:discord:dm:other")
    assert keys_of(listed(agent_main, projectId="p1")) == [stored.key]
    assert keys_of(listed(agent_main, workspaceDir="/work/p1")) == [stored.key]
    assert keys_of(listed(agent_main, projectId="p2")) == []


def test_active_only_lists_sessions_with_queued_or_running_work(agent_main, see_agent):
    busy = make_session("agent:main:discord:dm:busy")
    Run.objects.create(session=busy, status=Run.QUEUED)
    busy.show_run_queued()
    idle = make_session("agent:main:discord:dm:idle")
    assert keys_of(listed(agent_main, activeOnly=True)) == [busy.key]
    assert idle.key in keys_of(listed(agent_main, activeOnly=False))
    assert busy.key not in keys_of(listed(agent_main, activeOnly=False))


def test_exclude_subagents_keeps_grouped_spawned_sessions(agent_main, see_agent):
    main = make_session("main")
    sub = make_session("agent:main:subagent:a", spawnedBy=main.key, spawnDepth=1)
    acp = make_session("agent:main:acp:b", spawnedBy=main.key, spawnDepth=1)
    grouped = make_session("agent:main:acp:c", spawnedBy=main.key, spawnDepth=1)
    Session.objects.filter(pk=grouped.pk).update(category="kept")
    found = keys_of(listed(agent_main, excludeSubagents=True))
    assert main.key in found and grouped.key in found
    assert sub.key not in found and acp.key not in found
    assert sub.key in keys_of(listed(agent_main))


def test_relationship_needs_a_requesting_user(agent_main):
    for value in ("owned", "created", "involving"):
        assert error_of(agent_main.invoke("sessions_list", {"relationship": value})) == (
            RELATIONSHIP_TEXT
        )
    assert error_of(agent_main.invoke("sessions_list", {"relationship": "mine"})) == (
        "relationship must be owned, created, or involving"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        ({"pinned": "maybe"}, "pinned must be a boolean"),
        ({"pinned": 1}, "pinned must be a boolean"),
        ({"activeOnly": []}, "activeOnly must be a boolean"),
        ({"excludeSubagents": "x"}, "excludeSubagents must be a boolean"),
        ({"includeDerivedTitles": {}}, "includeDerivedTitles must be a boolean"),
        ({"includeLastMessage": 2}, "includeLastMessage must be a boolean"),
        ({"group": 5}, "group must be a string"),
        ({"group": "g" * 513}, "group must be at most 512"),
        ({"ownerId": ["ann"]}, "ownerId must be a string"),
        ({"creatorId": "c" * 201}, "creatorId must be at most 200"),
        ({"projectId": True}, "projectId must be a string"),
        ({"workspaceDir": 1}, "workspaceDir must be a string"),
        ({"relationship": 1}, "relationship must be owned, created, or involving"),
    ],
)
def test_bad_values_are_400(agent_main, args, message):
    assert error_of(agent_main.invoke("sessions_list", args)).startswith(message)


def test_derived_title_is_the_first_user_message_redacted_and_short(agent_main, see_agent):
    session = make_session("agent:main:discord:dm:titled")
    add_messages(
        session,
        assistant("Hello! How can I help?"),
        user(
            "Please rotate the key sk-abcdefghijklmnopqrstuvwxyz123456 and then tell the whole "
            "team in the ops channel what changed"
        ),
        user("second"),
    )
    untitled = make_session("agent:main:discord:dm:untitled")
    row = next(
        r
        for r in listed(agent_main, includeDerivedTitles=True)["sessions"]
        if r["key"] == session.key
    )
    title = row["derivedTitle"]
    assert title.startswith("Please rotate the key ") and title.endswith("…")
    assert len(title) <= list_enrichment.TITLE_CHARS
    assert "abcdefghijklmnopqrstuvwxyz123456" not in title
    plain = {r["key"]: r for r in listed(agent_main)["sessions"]}
    assert "derivedTitle" not in plain[session.key]
    assert "derivedTitle" not in plain[untitled.key]


def test_last_message_preview_skips_tools_and_silent_rows(agent_main, see_agent):
    session = make_session("agent:main:discord:dm:preview")
    add_messages(
        session,
        user("What is the status of the deploy?"),
        assistant("It finished.\n\nAll   green."),
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "exec", "arguments": {}}],
        },
        tool_result("exit 0"),
        assistant("NO_REPLY"),
        assistant("ANNOUNCE_SKIP"),
    )
    row = next(
        r
        for r in listed(agent_main, includeLastMessage=True)["sessions"]
        if r["key"] == session.key
    )
    assert row["lastMessagePreview"] == "It finished. All green."


def test_last_message_preview_skips_internal_rows(agent_main, see_agent):
    """Issue 29.4: a completion prompt (the real one a finished sub-agent gives its parent), a
    sub-agent announce step and a silent reply beside thinking are never the preview."""
    make_session("main")
    completed_spawn(agent_main, label="papers")
    prompt = Message.objects.get(
        session__key="agent:main:main", provenance__sourceTool="subagent_announce"
    )
    session = make_session("agent:main:discord:dm:after")
    add_messages(
        session,
        user("Any news?"),
        assistant("Still looking."),
        {"role": "user", "content": prompt.content, "provenance": prompt.provenance},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "nothing new"},
                {"type": "text", "text": "REPLY_SKIP"},
            ],
        },
        {
            "role": "user",
            "content": "Sub-agent announce step.",
            "provenance": {"kind": "internal_system", "sourceTool": "sessions_spawn"},
        },
    )
    row = next(
        r
        for r in listed(agent_main, includeLastMessage=True)["sessions"]
        if r["key"] == session.key
    )
    assert row["lastMessagePreview"] == "Still looking."


def test_enrichment_is_two_queries_for_a_page_of_giant_transcripts(agent_main, see_agent):
    for n in range(5):
        session = make_session(f"agent:main:discord:dm:giant{n}")
        add_messages(session, *[user(f"m{i}") for i in range(300)])
    requester = requester_for(ApiKey.objects.get())
    with CaptureQueriesContext(connection) as plain:
        sessions_list(requester=requester, args={})
    with CaptureQueriesContext(connection) as enriched_queries:
        enriched = sessions_list(
            requester=requester, args={"includeDerivedTitles": True, "includeLastMessage": True}
        )
    assert len(enriched_queries) == len(plain) + 2
    titles = {r["key"]: r.get("derivedTitle") for r in enriched["sessions"]}
    previews = {r["key"]: r.get("lastMessagePreview") for r in enriched["sessions"]}
    assert titles["agent:main:discord:dm:giant0"] == "m0"
    assert previews["agent:main:discord:dm:giant0"] == "m299"


def test_visibility_note_when_restricted(agent_main, sandboxed_main):
    make_session("main")
    set_config(visibility="tree")
    note = listed(agent_main)["visibility"]
    assert note == {
        "mode": "tree",
        "restricted": True,
        "warning": "Session visibility is restricted (effective tools.sessions.visibility=tree: "
        "current session + own spawn subtree). Sessions outside that scope are omitted from "
        "results and count.",
    }
    set_config(visibility="self")
    assert "current session only" in listed(agent_main)["visibility"]["warning"]
    set_config(visibility="agent")
    assert "all sessions of this agent" in listed(agent_main)["visibility"]["warning"]
    assert "sandbox: spawned sessions only" in listed(sandboxed_main)["visibility"]["warning"]
    set_config(visibility="all")
    assert "visibility" not in listed(agent_main)


def test_rest_list_takes_the_same_parameters(agent_main, see_agent):
    session = make_session("agent:main:discord:dm:rest")
    add_messages(session, user("hi there"))
    Session.objects.filter(pk=session.pk).update(pinned_at=timezone.now())
    response = agent_main.get("/api/v1/sessions/", {"pinned": "true", "includeLastMessage": "true"})
    assert response.status_code == 200, response.content
    [row] = response.json()["sessions"]
    assert row["key"] == session.key and row["lastMessagePreview"] == "hi there"
    bad = agent_main.get("/api/v1/sessions/", {"pinned": "perhaps"})
    assert bad.status_code == 400 and "pinned must be a boolean" in bad.content.decode()
