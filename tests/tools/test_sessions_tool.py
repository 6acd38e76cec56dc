"""The `sessions` tool (9.6 §2.3) through /tools/invoke: patch (one session and batches), the
expectedSessionId guards, reset (old transcript kept), delete (archive, then delete), the group
catalog, assign_owner, who may manage what, and bad input with 9.6's texts."""

from __future__ import annotations

import uuid

import pytest

from sessions_app.models import Run, Session, SessionGroup
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import execute_run, start_run
from sessions_app.tools.sessions import TARGETS_TEXT
from tests.conftest import add_messages, assistant, make_session, set_config, user

DEV = "agent:main:discord:group:dev"


def call(api, **args):
    return api.invoke("sessions", args)


def details(api, **args) -> dict:
    response = call(api, **args)
    assert response.status_code == 200, response.content
    return response.json()["result"]["details"]


def error(api, status: int = 400, **args) -> str:
    response = call(api, **args)
    assert response.status_code == status, response.content
    return response.json()["error"]["message"]


@pytest.fixture
def dev(agents):
    session = make_session(DEV, label="dev")
    add_messages(session, user("hello"), assistant("hi there"))
    return session


def row(key: str) -> Session:
    return Session.objects.get(key=key)


# --- patch ----------------------------------------------------------------------------------


def test_patch_sets_and_clears_the_organisation_fields(operator, dev):
    result = details(
        operator,
        action="patch",
        sessionKey=DEV,
        label="Dev chat",
        icon="kanban",
        color="#336699",
        group="Work",
        statusNote="waiting on CI",
        attention="bot",
        ttlMinutes=45,
        pinned=True,
    )
    assert result == {
        "status": "updated",
        "sessionKey": DEV,
        "updated": [
            "label",
            "icon",
            "color",
            "statusNote",
            "pinned",
            "group",
            "attention",
            "ttlMinutes",
        ],
    }
    session = row(DEV)
    assert (session.label, session.icon, session.color, session.category) == (
        "Dev chat",
        "kanban",
        "#336699",
        "Work",
    )
    assert session.status_note == "waiting on CI" and session.pinned_at is not None
    assert session.extra["attention"] == "bot" and session.extra["statusTtlMinutes"] == 45
    assert list(SessionGroup.objects.values_list("name", flat=True)) == ["Work"]

    details(operator, action="patch", sessionKey=DEV, label="", group=None, statusNote="")
    session = row(DEV)
    assert (session.label, session.category, session.status_note) == ("", "", "")
    assert "attention" not in session.extra


def test_a_status_note_lasts_its_ttl(operator, dev):
    """9.6: a statusNote is active for ttlMinutes (default 30) from when it was set; an expired
    one is no longer shown (nor its attention) and takes no new attention; "clear" always works."""
    from sessions_app.manage import patch_fields

    details(operator, action="patch", sessionKey=DEV, statusNote="deploying", attention="bot")
    session = row(DEV)
    shown = patch_fields.entry_fields(session)
    assert shown["statusNote"] == "deploying" and shown["attention"] == "bot"
    set_at = session.extra["statusSetAt"]
    minute = 60_000
    assert patch_fields.status_note_active("deploying", session.extra, set_at + 29 * minute)
    assert not patch_fields.status_note_active("deploying", session.extra, set_at + 30 * minute)
    details(operator, action="patch", sessionKey=DEV, ttlMinutes=120)
    assert patch_fields.status_note_active("deploying", row(DEV).extra, set_at + 119 * minute)
    # Expired: set an hour and a minute ago with a 60-minute ttl.
    extra = {**row(DEV).extra, "statusSetAt": set_at - 61 * minute, "statusTtlMinutes": 60}
    Session.objects.filter(key=DEV).update(extra=extra)
    assert not {"statusNote", "attention"} & set(patch_fields.entry_fields(row(DEV)))
    assert error(operator, action="patch", sessionKey=DEV, attention="book") == (
        "attention needs an active statusNote"
    )
    details(operator, action="patch", sessionKey=DEV, attention="clear")
    assert "attention" not in row(DEV).extra
    details(operator, action="patch", sessionKey=DEV, statusNote="again", attention="book")
    assert patch_fields.entry_fields(row(DEV))["attention"] == "book"


def test_patch_model_thinking_and_send_policy_report_resolved(operator, dev):
    result = details(
        operator,
        action="patch",
        sessionKey=DEV,
        model="openai/gpt-5",
        thinkingLevel="high",
        sendPolicy="deny",
    )
    assert result["updated"] == ["model", "thinkingLevel", "sendPolicy"]
    assert result["resolved"] == {
        "modelProvider": "openai",
        "model": "openai/gpt-5",
        "thinkingLevel": "high",
    }
    assert row(DEV).send_policy == "deny"
    details(operator, action="patch", sessionKey=DEV, sendPolicy="inherit")
    assert row(DEV).send_policy == ""


def test_patch_defaults_to_the_callers_own_session(agent_main, agents):
    make_session("agent:main:main")
    result = details(agent_main, action="patch", label="home")
    assert result["sessionKey"] == "agent:main:main" and row("agent:main:main").label == "home"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({}, "Patch setting required"),
        ({"label": 3}, "label must be a string"),
        ({"pinned": "yes"}, "pinned must be boolean"),
        ({"archived": 1}, "archived must be boolean"),
        ({"group": 5}, "group must be a string"),
        ({"statusNote": "x" * 121}, "statusNote must be at most 120 characters"),
        ({"ttlMinutes": 0}, "ttlMinutes must be an integer from 1 to 120"),
        ({"attention": "bot"}, "attention needs an active statusNote"),
        (
            {"icon": "star"},
            "icon must be one emoji, one of braces, book, monitor, bot, kanban, coins, or SVG markup",
        ),
        ({"sendPolicy": "maybe"}, 'sendPolicy must be "allow", "deny" or "inherit"'),
        ({"archived": True}, "Session lifecycle action requires a durable session identity"),
        ({"archived": False}, "Session lifecycle action requires a durable session identity"),
        (
            {"expectedSessionId": "nope", "label": "x"},
            f"Session {DEV} changed before patch. Retry.",
        ),
    ],
)
def test_patch_refusals(operator, dev, args, text):
    assert error(operator, action="patch", sessionKey=DEV, **args) == text


def test_icons_emoji_and_svg(operator, dev):
    for icon in ("🚀", "<svg xmlns='http://www.w3.org/2000/svg'><circle r='4'/></svg>"):
        details(operator, action="patch", sessionKey=DEV, icon=icon)
        assert row(DEV).icon == icon
    big = "<svg>" + "x" * 17000 + "</svg>"
    assert error(operator, action="patch", sessionKey=DEV, icon=big) == (
        "icon: the SVG must be at most 16 KiB"
    )
    script = "<svg><script>alert(1)</script></svg>"
    assert "self-contained" in error(operator, action="patch", sessionKey=DEV, icon=script)


def test_pin_refusals(operator, dev, agents):
    make_session("agent:main:subagent:c1", spawnedBy=DEV)
    assert error(operator, action="patch", sessionKey="agent:main:subagent:c1", pinned=True) == (
        "cannot pin a child session; pin its parent session instead"
    )
    details(
        operator, action="patch", sessionKey=DEV, archived=True, expectedSessionId=dev.session_id
    )
    assert error(operator, action="patch", sessionKey=DEV, pinned=True) == (
        "cannot pin an archived session; restore it first"
    )


def test_archive_clears_the_pin_and_restore_brings_it_back(operator, dev):
    details(operator, action="patch", sessionKey=DEV, pinned=True)
    result = details(
        operator, action="patch", sessionKey=DEV, archived=True, expectedSessionId=dev.session_id
    )
    assert result["updated"] == ["archived"]
    session = row(DEV)
    assert session.archived and session.pinned_at is None
    assert session.archive_reason == "manual"
    details(
        operator, action="patch", sessionKey=DEV, archived=False, expectedSessionId=dev.session_id
    )
    assert not row(DEV).archived


def test_main_and_unknown_sessions_cannot_be_archived(operator, agents):
    main = make_session("agent:main:main")
    unknown = make_session("unknown")
    make_session("agent:main:other")

    def archive(key, expected):
        args = {
            "action": "patch",
            "sessionKey": key,
            "archived": True,
            "expectedSessionId": expected,
        }
        return operator.invoke("sessions", args, sessionKey="agent:main:other").json()

    assert archive("agent:main:main", main.session_id)["error"]["message"] == (
        "Cannot archive an agent's main session."
    )
    assert archive("unknown", unknown.session_id)["error"]["message"] == (
        "Cannot archive the unknown session sentinel."
    )
    assert archive("agent:main:main", "stale")["error"]["message"] == (
        "Session agent:main:main changed before patch. Retry."
    )


def test_archiving_a_session_with_work_in_flight_stops_the_work(operator, dev):
    run = start_run(session=dev, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    details(
        operator, action="patch", sessionKey=DEV, archived=True, expectedSessionId=dev.session_id
    )
    run.refresh_from_db()
    assert run.status == Run.ABORTED and row(DEV).archived


def test_archiving_the_current_session_during_its_run_is_scheduled(
    agents, django_capture_on_commit_callbacks
):
    from sessions_app.access.identity import requester_for_session
    from sessions_app.tools import TOOLS

    session = make_session("agent:main:work")
    run = start_run(session=session, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    result = TOOLS.call(
        "sessions",
        requester=requester_for_session(session, owner_turn=True),
        args={"action": "patch", "archived": True},
    )
    assert result == {
        "status": "scheduled",
        "sessionKey": "agent:main:work",
        "message": "Session will be archived after the current agent run finishes.",
    }
    assert not row("agent:main:work").archived
    with django_capture_on_commit_callbacks(execute=True):
        assert execute_run(str(run.pk)) == Run.OK
    session = row("agent:main:work")
    assert session.archived and "archiveAfterRun" not in session.extra


# --- batches --------------------------------------------------------------------------------


def test_targets_patch_each_index_alone(operator, dev, agents):
    other = make_session("agent:main:other")
    result = details(
        operator,
        action="patch",
        archived=True,
        targets=[
            {"sessionKey": DEV, "expectedSessionId": dev.session_id},
            {"sessionKey": "agent:main:other"},
            {"sessionKey": "agent:main:missing", "expectedSessionId": "x"},
        ],
    )
    assert result["status"] == "partial"
    assert result["succeeded"] == [0] and result["failed"] == [1, 2]
    assert result["errors"] == [
        {"index": 1, "message": "Session lifecycle action requires a durable session identity"},
        {
            "index": 2,
            "message": "Session not found: agent:main:missing (use the full sessionKey from sessions_list)",
        },
    ]
    assert row(DEV).archived and not Session.objects.get(pk=other.pk).archived
    all_ok = details(
        operator, action="patch", pinned=True, targets=[{"sessionKey": "agent:main:other"}]
    )
    assert all_ok == {"status": "updated", "succeeded": [0], "failed": [], "errors": []}


def test_a_batch_result_fits_3840_bytes(operator, dev):
    """9.6 §2.3: each error message is at most 512 bytes, and the whole result at most 3,840:
    the error details that do not fit are dropped (their indexes stay in `failed`) and the
    warning says so."""
    import orjson

    from sessions_app.manage.session_admin import BUDGET_WARNING

    missing = [{"sessionKey": f"agent:main:{n:03d}" + "x" * 480} for n in range(99)]
    result = details(operator, action="patch", label="x", targets=[{"sessionKey": DEV}, *missing])
    assert result["status"] == "partial" and result["succeeded"] == [0]
    assert result["failed"] == list(range(1, 100))
    assert len(orjson.dumps(result)) <= 3840
    assert result["warning"] == BUDGET_WARNING
    kept = result["errors"]
    assert 0 < len(kept) < 99 and [e["index"] for e in kept] == list(range(1, len(kept) + 1))
    for error in kept:  # "Session not found: <key> (use …)" is longer: cut to 512 bytes
        assert len(error["message"].encode()) == 512
        assert error["message"].startswith("Session not found: agent:main:")
    # Within the budget, nothing is dropped and there is no warning.
    few = details(operator, action="patch", label="y", targets=missing[:3])
    assert len(few["errors"]) == 3 and "warning" not in few


def test_resolved_is_left_out_when_it_does_not_fit(operator, dev, monkeypatch):
    from sessions_app.manage import session_admin

    assert "resolved" in details(operator, action="patch", sessionKey=DEV, model="a/b")
    # No real patch result reaches 3,840 bytes here (keys ≤ 512, models ≤ 200 characters): the
    # rule is checked with a smaller budget.
    monkeypatch.setattr(session_admin, "RESULT_BUDGET_BYTES", 100)
    result = details(operator, action="patch", sessionKey=DEV, thinkingLevel="high")
    assert "resolved" not in result
    assert result["resolvedOmitted"] == {"reason": "response_budget_exceeded"}
    assert "resolved" not in details(operator, action="patch", sessionKey=DEV, label="z")


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"action": "reset", "targets": [{"sessionKey": DEV}]}, TARGETS_TEXT),
        ({"action": "patch", "sessionKey": DEV, "targets": [{"sessionKey": DEV}]}, TARGETS_TEXT),
        (
            {"action": "patch", "label": "x", "targets": []},
            "targets must be an array of 1 to 100 entries",
        ),
        (
            {"action": "patch", "label": "x", "targets": [{"sessionKey": DEV}] * 2},
            "targets must not repeat a session",
        ),
        (
            {"action": "patch", "label": "x", "targets": [{"key": DEV}]},
            "targets[0] must be {sessionKey, expectedSessionId?}",
        ),
        (
            {"action": "patch", "label": "x", "targets": [{"sessionKey": DEV}] * 101},
            "targets must be an array of 1 to 100 entries",
        ),
    ],
)
def test_target_refusals(operator, dev, args, text):
    assert error(operator, **args) == text


def test_archiving_the_current_session_in_a_batch_fails_that_index(agent_main, agents):
    main = make_session("agent:main:main")
    result = details(
        agent_main,
        action="patch",
        archived=True,
        targets=[{"sessionKey": "agent:main:main", "expectedSessionId": main.session_id}],
    )
    assert result["status"] == "error"
    assert result["errors"][0]["message"] == (
        "Archive the current session with a single patch; it is deferred until this run finishes."
    )


# --- reset ----------------------------------------------------------------------------------


def test_reset_starts_a_new_transcript_and_keeps_the_old_one(operator, dev):
    old_id = dev.session_id
    result = details(operator, action="reset", sessionKey=DEV)
    session = row(DEV)
    assert result["ok"] is True and result["key"] == DEV
    assert result["previousSessionId"] == old_id and session.session_id == result["sessionId"]
    assert session.session_id != old_id and session.last_seq == 0
    assert session.messages.count() == 0 and session.label == "dev"
    previous = Session.objects.get(session_id=old_id)
    assert previous.archived and previous.key == result["previousKey"]
    assert [m.seq for m in previous.messages.order_by("seq")] == [1, 2]
    # The old transcript is still browsable by its sessionId (by whoever may read history).
    set_config(visibility="agent")
    jsonl = operator.get(f"/api/v1/transcripts/{old_id}.jsonl")
    assert jsonl.status_code == 200 and b"hi there" in b"".join(jsonl.streaming_content)
    # And the session goes on: a new message is seq 1 of the new transcript.
    add_messages(session, user("again"))
    assert row(DEV).last_seq == 1


def test_reset_refusals(operator, dev, agents):
    assert error(operator, action="reset") == "sessionKey required"
    assert error(operator, action="reset", sessionKey="agent:main:main") in (
        "Cannot reset the session running this tool",
        "Session not found: agent:main:main (use the full sessionKey from sessions_list)",
    )
    make_session("agent:main:main")
    assert error(operator, action="reset", sessionKey="agent:main:main") == (
        "Cannot reset the session running this tool"
    )
    assert error(operator, action="reset", sessionKey=DEV, expectedSessionId="old") == (
        f"Session {DEV} changed before reset. Retry."
    )


def test_reset_while_a_run_is_in_flight_is_refused_until_it_ends(operator, dev):
    run = start_run(session=dev, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    assert error(operator, action="reset", sessionKey=DEV) == (
        f"Session {DEV} has a run in progress. Abort it first, then reset it."
    )
    assert row(DEV).session_id == dev.session_id  # nothing changed
    assert execute_run(str(run.pk)) == Run.OK
    assert details(operator, action="reset", sessionKey=DEV)["ok"] is True
    # The finished run went with the old transcript.
    assert Run.objects.get(pk=run.pk).session.session_id == dev.session_id


# --- delete ---------------------------------------------------------------------------------


def test_delete_archives_then_deletes(operator, dev):
    result = details(operator, action="delete", sessionKey=DEV, expectedSessionId=dev.session_id)
    assert result == {"ok": True, "key": DEV, "deleted": True, "archived": []}
    assert not Session.objects.filter(key=DEV).exists()


def test_delete_refusals(operator, dev, agents):
    main = make_session("agent:main:main")
    assert error(operator, action="delete", expectedSessionId="x") == "sessionKey required"
    assert error(operator, action="delete", sessionKey=DEV) == "expectedSessionId required"
    assert error(operator, action="delete", sessionKey=DEV, expectedSessionId="stale") == (
        f"Session {DEV} changed before deletion. Retry."
    )
    assert error(
        operator, action="delete", sessionKey="agent:main:main", expectedSessionId=main.session_id
    ) == ("Cannot delete the session running this tool")
    response = operator.invoke(
        "sessions",
        {"action": "delete", "sessionKey": "agent:main:main", "expectedSessionId": main.session_id},
        sessionKey=DEV,
    )
    assert (
        response.json()["error"]["message"] == "Cannot delete the main session (agent:main:main)."
    )
    assert Session.objects.filter(key=DEV).exists()


def test_delete_while_a_run_is_in_flight_stops_it_first(operator, dev):
    run = start_run(session=dev, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    details(operator, action="delete", sessionKey=DEV, expectedSessionId=dev.session_id)
    assert not Session.objects.filter(key=DEV).exists()
    assert not Run.objects.filter(pk=run.pk).exists()
    # The worker's task for the deleted run finds nothing to do.
    assert execute_run(str(run.pk)) == "skipped"


# --- owners, groups, other actions ----------------------------------------------------------


def test_assign_owner(operator, dev):
    result = details(
        operator, action="assign_owner", sessionKey=DEV, ownerType="agent", ownerId="research"
    )
    assert result == {
        "status": "updated",
        "sessionKey": DEV,
        "owner": {"type": "agent", "id": "research", "label": "Research"},
    }
    human = details(
        operator, action="assign_owner", sessionKey=DEV, ownerType="human", ownerId="ada"
    )
    assert (
        human["owner"] == {"type": "human", "id": "ada"} and row(DEV).extra["owner"]["id"] == "ada"
    )
    text = "assign_owner requires ownerType and ownerId"
    assert (
        error(operator, action="assign_owner", sessionKey=DEV, ownerType="robot", ownerId="x")
        == text
    )
    assert error(operator, action="assign_owner", sessionKey=DEV, ownerType="human") == text
    assert (
        error(operator, action="assign_owner", sessionKey=DEV, ownerType="agent", ownerId="ghost")
        == "Unknown agent: ghost"
    )


def test_the_group_catalog(operator, dev, agents):
    assert details(operator, action="group_list") == {"groups": []}
    result = details(operator, action="group_set", names=[" Work ", "Home"])
    assert result == {
        "ok": True,
        "groups": [{"name": "Work", "position": 0}, {"name": "Home", "position": 1}],
    }
    details(operator, action="patch", sessionKey=DEV, group="Work")
    assert error(operator, action="group_set", names=["Home"]) == (
        "Cannot drop a group that has sessions: Work (group_rename or group_delete it first)"
    )
    renamed = details(operator, action="group_rename", name="Work", to="Projects")
    assert renamed["updatedSessions"] == 1 and row(DEV).category == "Projects"
    assert [g["name"] for g in renamed["groups"]] == ["Projects", "Home"]
    deleted = details(operator, action="group_delete", name="Projects")
    assert deleted == {
        "ok": True,
        "groups": [{"name": "Home", "position": 1}],
        "updatedSessions": 1,
    }
    assert row(DEV).category == ""


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"action": "group_set"}, "names required"),
        ({"action": "group_set", "names": []}, "names required"),
        ({"action": "group_set", "names": ["a", " "]}, "names[1] required"),
        ({"action": "group_set", "names": ["x" * 513]}, "names[0] too long"),
        ({"action": "group_set", "names": "Work"}, "names required"),
        ({"action": "group_rename", "to": "b"}, "name required"),
        ({"action": "group_rename", "name": "a"}, "to required"),
        ({"action": "group_rename", "name": "a", "to": "b"}, "Unknown group: a"),
        ({"action": "group_delete"}, "name required"),
        ({"action": "group_delete", "name": "nope"}, "Unknown group: nope"),
        ({"action": "fly"}, "Unknown action: fly"),
        ({}, "action required"),
        # (a name the tool does not take is ignored: the patch then names no setting)
        ({"action": "patch", "bogus": 1}, "Patch setting required"),
        ({"action": "cloud_profiles"}, "cloud_profiles is available on cloud workers only"),
    ],
)
def test_bad_input_is_a_400(operator, agents, args, text):
    assert error(operator, **args) == text


# --- who may manage what --------------------------------------------------------------------


def test_agent_keys_manage_what_their_visibility_shows(agent_main, outsider, dev):
    set_config(visibility="agent")
    assert details(agent_main, action="patch", sessionKey=DEV, pinned=True)["status"] == "updated"
    # Another agent's key: not visible, and the session's existence is not told.
    assert error(outsider, 403, action="patch", sessionKey=DEV, pinned=False) == (
        f"Session not visible from session tools: {DEV}"
    )
    assert error(outsider, 403, action="patch", sessionKey="agent:main:nothing", label="x") == (
        "Session not visible from session tools: agent:main:nothing"
    )
    set_config(visibility="tree")
    assert error(agent_main, 403, action="reset", sessionKey=DEV) == (
        f"Session not visible from session tools: {DEV}"
    )


def test_sandboxed_keys_manage_only_what_they_spawned(sandboxed_main, dev, agents):
    assert error(sandboxed_main, 403, action="patch", sessionKey=DEV, label="x") == (
        f"Session not visible from session tools: {DEV}"
    )


def test_the_tool_declares_every_96_patch_field():
    from sessions_app.tools.sessions import DECLARATION

    fields_96 = {"label", "icon", "color", "group", "statusNote", "attention", "ttlMinutes"}
    fields_96 |= {"pinned", "archived", "model", "thinkingLevel"}  # 9.6 §2.3
    assert fields_96 <= set(DECLARATION.parameters()["properties"])


def test_sub_agents_are_not_offered_the_tool(agents):
    from sessions_app.runs.tool_policy import catalog

    assert "sessions" in catalog().subagent_default_deny and "sessions" in catalog().owner_only
    # The rest, turn by turn: tests/tools/test_sessions_tool_owner.py


def test_ingest_keys_cannot_use_it(ingest, dev):
    assert call(ingest, action="group_list").status_code == 403
