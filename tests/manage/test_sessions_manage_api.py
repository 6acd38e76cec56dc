"""The sessions tool's operations over REST: PATCH with the organisation fields, POST …/reset/,
DELETE /api/v1/sessions/{key}/, and /api/v1/groups/ (9.6 §2.3/§2.4)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest

from sessions_app.models import Run, Session
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import start_run
from tests.conftest import add_messages, assistant, make_session, set_config, user

DEV = "agent:main:discord:group:dev"
URL = f"/api/v1/sessions/{quote(DEV)}/"


@pytest.fixture
def dev(agents):
    session = make_session(DEV, label="dev")
    add_messages(session, user("hello"), assistant("hi there"))
    return session


def message(response, status: int) -> str:
    assert response.status_code == status, response.content
    return response.json()["error"]["message"]


def test_patch_with_the_tools_fields(operator, dev):
    response = operator.patch(URL, {"pinned": True, "group": "Work", "label": "Dev"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "updated",
        "sessionKey": DEV,
        "updated": ["label", "pinned", "group"],
    }
    session = Session.objects.get(key=DEV)
    assert session.pinned_at and session.category == "Work" and session.label == "Dev"


def test_null_clears_the_pin_the_attention_and_the_send_policy(operator, dev):
    """9.6's sessions.patch: null clears, also where the tool's spelling has no empty value
    (the tool itself answers `pinned must be boolean`); archived: null stays a 400."""
    set_all = {"pinned": True, "statusNote": "on it", "attention": "bot", "sendPolicy": "deny"}
    assert operator.patch(URL, set_all).status_code == 200
    cleared = operator.patch(URL, {"pinned": None, "attention": None, "sendPolicy": None})
    assert cleared.status_code == 200, cleared.content
    session = Session.objects.get(key=DEV)
    assert session.pinned_at is None and session.send_policy == ""
    assert "attention" not in session.extra and session.status_note == "on it"
    assert message(operator.patch(URL, {"archived": None}), 400) == "archived must be boolean"


def test_the_old_patch_body_still_answers_a_row(operator, dev):
    response = operator.patch(URL, {"label": "x", "displayName": "Dev"})
    assert response.status_code == 200 and response.json()["label"] == "x"


def test_patch_archive_needs_the_expected_session_id(operator, dev):
    assert message(operator.patch(URL, {"archived": True}), 400) == (
        "Session lifecycle action requires a durable session identity"
    )
    ok = operator.patch(URL, {"archived": True, "expectedSessionId": dev.session_id})
    assert ok.status_code == 200 and Session.objects.get(key=DEV).archived


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"pinned": "yes"}, "pinned must be boolean"),
        ({"pinned": True, "displayName": "x"}, "Unknown field: displayName"),
        ({"group": 1}, "group must be a string"),
        ({"statusNote": "x" * 121}, "statusNote must be at most 120 characters"),
    ],
)
def test_patch_bad_input(operator, dev, body, text):
    assert message(operator.patch(URL, body), 400) == text


def test_patch_by_an_agent_that_cannot_see_it(outsider, dev):
    assert message(outsider.patch(URL, {"pinned": True}), 403) == (
        f"Session not visible from session tools: {DEV}"
    )


def test_reset_over_rest(operator, dev):
    response = operator.post(URL + "reset/", {"expectedSessionId": dev.session_id})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["previousSessionId"] == dev.session_id and body["sessionId"] != dev.session_id
    assert Session.objects.get(session_id=dev.session_id).archived
    # An empty body is fine; a stale id, an unknown field and a bad reason are not.
    assert operator.post(URL + "reset/", "").status_code == 200
    stale = operator.post(URL + "reset/", {"expectedSessionId": "old"})
    assert message(stale, 400) == f"Session {DEV} changed before reset. Retry."
    # The reason a client can act on, as 9.6's RPC frame gives it.
    assert stale.json()["error"]["details"] == {"reason": "session-changed"}
    assert "x" in message(operator.post(URL + "reset/", {"x": 1}), 400)
    assert message(operator.post(URL + "reset/", {"reason": "why"}), 400) == (
        'reason must be "new" or "reset"'
    )


def test_reset_own_main_session_is_allowed_over_rest(agent_main, agents):
    make_session("agent:main:main")
    assert agent_main.post("/api/v1/sessions/main/reset/", "").status_code == 200


def test_reset_with_a_run_in_flight_is_a_400(operator, dev):
    start_run(session=dev, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    assert message(operator.post(URL + "reset/", ""), 400) == (
        f"Session {DEV} has a run in progress. Abort it first, then reset it."
    )


def test_delete_over_rest(operator, dev):
    assert message(operator.client.delete(URL, **operator.headers()), 400) == (
        "expectedSessionId required"
    )
    stale = operator.client.delete(URL + "?expectedSessionId=nope", **operator.headers())
    assert message(stale, 400) == f"Session {DEV} changed before deletion. Retry."
    assert stale.json()["error"]["details"] == {"reason": "session-changed"}
    bogus = operator.client.delete(URL + "?force=1", **operator.headers())
    assert "force" in message(bogus, 400)
    run = start_run(session=dev, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    response = operator.client.delete(
        URL + f"?expectedSessionId={dev.session_id}", **operator.headers()
    )
    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "key": DEV, "deleted": True, "archived": []}
    assert (
        not Session.objects.filter(key=DEV).exists() and not Run.objects.filter(pk=run.pk).exists()
    )


def test_delete_main_session_is_refused(operator, agents):
    main = make_session("agent:main:main")
    response = operator.client.delete(
        f"/api/v1/sessions/agent:main:main/?expectedSessionId={main.session_id}",
        **operator.headers(),
    )
    assert message(response, 400) == "Cannot delete the main session (agent:main:main)."


def test_the_group_catalog_is_the_owners(operator, agent_main, sandboxed_main, dev):
    """A rename or delete repoints every session of the group, seen by the caller or not, and
    the catalog is the gateway's sidebar: an operator key's (or the owner's turn), on every way
    in. An agent key reads the catalog; a sandboxed one changes nothing (the audit's case: a
    sandboxed key renamed a group holding a session it could not read)."""
    operator.put("/api/v1/groups/", {"names": ["Work"]})
    operator.patch(URL, {"group": "Work"})
    for key in (agent_main, sandboxed_main):
        assert key.get("/api/v1/groups/").status_code == 200
        for action, response in (
            ("group_set", key.put("/api/v1/groups/", {"names": ["Mine"]})),
            ("group_rename", key.post("/api/v1/groups/rename/", {"name": "Work", "to": "Mine"})),
            ("group_delete", key.delete("/api/v1/groups/Work/")),
            (
                "group_rename",
                key.invoke("sessions", {"action": "group_rename", "name": "Work", "to": "Mine"}),
            ),  # fmt: skip
        ):
            assert message(response, 403) == (
                f"{action} changes the gateway's group catalog: it needs an operator key"
            )
    assert Session.objects.get(key=DEV).category == "Work"
    assert operator.get("/api/v1/groups/").json()["groups"] == [{"name": "Work", "position": 0}]


def test_an_agent_key_may_not_lift_a_send_policy_block(operator, agent_main, dev):
    """A session's sendPolicy overrides the operator's send policy: the ingest PATCH refused it
    to an agent key, but the tool's patch (and the REST body with a tool field) took it, so a
    key blocked by policy could allow itself (audit, 28 Nov)."""
    set_config(visibility="agent")  # main's key manages main's sessions
    text = "sendPolicy can be patched with an operator or ingest key only"
    tool = agent_main.invoke("sessions", {"action": "patch", "sessionKey": DEV,
                                          "sendPolicy": "allow"})  # fmt: skip
    assert message(tool, 403) == text
    assert message(agent_main.patch(URL, {"sendPolicy": "allow", "pinned": False}), 403) == text
    assert Session.objects.get(key=DEV).send_policy == ""
    assert operator.patch(URL, {"sendPolicy": "allow", "pinned": False}).status_code == 200
    assert Session.objects.get(key=DEV).send_policy == "allow"


def test_groups_over_rest(operator, dev):
    assert operator.get("/api/v1/groups/").json() == {"groups": []}
    put = operator.put("/api/v1/groups/", {"names": ["Work", "Home"]})
    assert put.status_code == 200 and [g["name"] for g in put.json()["groups"]] == ["Work", "Home"]
    operator.patch(URL, {"group": "Work"})
    renamed = operator.post("/api/v1/groups/rename/", {"name": "Work", "to": "Jobs"})
    assert renamed.json()["updatedSessions"] == 1
    deleted = operator.client.delete("/api/v1/groups/Jobs/", **operator.headers())
    assert deleted.json() == {
        "ok": True,
        "groups": [{"name": "Home", "position": 1}],
        "updatedSessions": 1,
    }
    assert message(operator.put("/api/v1/groups/", {"names": "x"}), 400) == "names required"
    assert message(operator.put("/api/v1/groups/", {"names": ["a"], "y": 1}), 400).endswith("y")
    assert message(operator.post("/api/v1/groups/rename/", {"name": "a"}), 400) == "to required"
    assert message(operator.put("/api/v1/groups/", ""), 400) == (
        "request body is empty; send a JSON object"
    )
    missing = operator.client.delete("/api/v1/groups/nope/", **operator.headers())
    assert message(missing, 400) == "Unknown group: nope"


def test_ingest_keys_and_anonymous_callers(ingest, anonymous, dev):
    assert ingest.get("/api/v1/groups/").status_code == 403
    assert anonymous.get("/api/v1/groups/").status_code == 401
    assert anonymous.post(URL + "reset/", "").status_code == 401


def test_agent_keys_reset_what_they_may_see(agent_main, dev):
    set_config(visibility="tree")
    assert message(agent_main.post(URL + "reset/", ""), 403) == (
        f"Session not visible from session tools: {DEV}"
    )
    set_config(visibility="agent")
    assert agent_main.post(URL + "reset/", "").status_code == 200
