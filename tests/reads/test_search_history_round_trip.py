"""9.6 §3 "Follow-up. Pass a hit's sessionKey, messageId and sessionId to sessions_history to
read the context around it": for messages this service wrote, for imported ones, across a reset
(a new sessionId; the old transcript kept), and for a sub-agent's run, whose completion prompt
history hides (so search leaves it out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.manage import session_admin
from sessions_app.models import Session
from tests.conftest import add_messages, assistant, make_session, set_config, user
from tests.history_helpers import texts
from tests.manage.test_import_openclaw import (
    T0,
    entry_line,
    header,
    run_import,
    sessions_dir,
    write_store,
    write_transcript,
)
from tests.runs.helpers import drain

IMPORTED_ID = "77777777-7777-4777-8777-777777777777"


def search(api, query, **args) -> list[dict]:
    return api.details("sessions_search", {"query": query, **args})["results"]


def around(api, hit, **args) -> dict:
    return api.details(
        "sessions_history",
        {
            "sessionKey": hit["sessionKey"],
            "messageId": hit["messageId"],
            "sessionId": hit["sessionId"],
            **args,
        },
    )


def ids(details) -> list[str]:
    return [m["__openclaw"]["id"] for m in details["messages"]]


def test_a_hit_of_a_message_this_service_stored(agent_main, ingest):
    set_config(visibility="agent")
    key = "agent:main:discord:group:dev"
    make_session(key, channel="discord", chatType="group")
    # Through the ingest API, as a gateway posts them; one carries an id of its own.
    response = ingest.post(
        f"/api/v1/sessions/{key}/messages/",
        {
            "messages": [
                user("first"),
                user("second"),
                user("the heron landed", id="gateway-42"),
                assistant("fourth"),
                user("fifth"),
            ]
        },
    )
    assert response.status_code == 201, response.content
    (hit,) = search(agent_main, "heron")
    assert hit["messageId"] == "00000003" and hit["sessionKey"] == key
    assert hit["sessionId"] == Session.objects.get(key=key).session_id
    details = around(agent_main, hit, limit=3)
    assert texts(details) == ["second", "the heron landed", "fourth"]
    assert ids(details)[1] == hit["messageId"]
    assert details["sessionKey"] == key


def test_a_hit_of_an_imported_message(agent_main, tmp_path: Path):
    set_config(visibility="agent")
    root = tmp_path / "state"
    write_store(root, "main", {"agent:main:imported": {"sessionId": IMPORTED_ID, "updatedAt": T0}})
    write_transcript(
        sessions_dir(root, "main"),
        f"{IMPORTED_ID}.jsonl",
        header(IMPORTED_ID),
        *[
            entry_line(message, n)
            for n, message in enumerate(
                [
                    user("one", timestamp=T0 + 1),
                    assistant("two", timestamp=T0 + 2),
                    user("where is the lighthouse", timestamp=T0 + 3),
                    assistant("three", timestamp=T0 + 4),
                ],
                start=1,
            )
        ],
    )
    run_import(root)
    (hit,) = search(agent_main, "lighthouse")
    # The id history gives the message here, not the entry id it had in the file ("e3").
    assert hit["messageId"] == "00000003" and hit["sessionId"] == IMPORTED_ID
    details = around(agent_main, hit, limit=1)
    assert texts(details) == ["where is the lighthouse"] and ids(details) == ["00000003"]
    assert texts(around(agent_main, hit)) == ["one", "two", "where is the lighthouse", "three"]


@pytest.fixture
def reset_session(agents):
    """agent:main:main with an old transcript (before a reset) and a new one (after it). The
    old one is a session of its own (`<key>:reset:<id>`, archived), outside the key's tree:
    visibility `agent` lets main's key search it."""
    set_config(visibility="agent")
    session = make_session("agent:main:main")
    add_messages(session, user("alpha"), assistant("the old walrus"), user("omega"))
    old_id = session.session_id
    reset = session_admin.reset(session)
    session.refresh_from_db()
    add_messages(session, user("new start"), assistant("a new walrus"), user("new end"))
    return session, old_id, reset


def test_a_hit_in_the_transcript_before_a_reset(agent_main, reset_session):
    session, old_id, reset = reset_session
    assert session.session_id != old_id
    found = {h["sessionId"]: h for h in search(agent_main, "walrus")}
    old, new = found[old_id], found[session.session_id]
    # Both generations hold seq 2: the sessionId says which one.
    assert old["messageId"] == new["messageId"] == "00000002"
    assert old["sessionKey"] == reset["previousKey"] and new["sessionKey"] == "agent:main:main"
    assert texts(around(agent_main, old)) == ["alpha", "the old walrus", "omega"]
    assert texts(around(agent_main, new)) == ["new start", "a new walrus", "new end"]


def test_the_current_key_with_an_earlier_session_id_reads_that_transcript(
    agent_main, reset_session
):
    session, old_id, _ = reset_session
    set_config(visibility="tree")  # the key's own access covers its earlier transcripts
    args = {"sessionKey": "agent:main:main", "messageId": "00000002", "limit": 1}
    earlier = agent_main.details("sessions_history", {**args, "sessionId": old_id})
    assert texts(earlier) == ["the old walrus"] and earlier["totalMessages"] == 3
    assert earlier["sessionKey"] == "agent:main:main"
    now = agent_main.details("sessions_history", {**args, "sessionId": session.session_id})
    assert texts(now) == ["a new walrus"]
    # Another key's sessionId is still refused.
    other = make_session("agent:main:other")
    response = agent_main.invoke("sessions_history", {**args, "sessionId": other.session_id})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "sessionId does not belong to sessionKey"


def test_every_hit_of_a_sub_agent_run_can_be_read_around(agent_main, home):
    set_config(visibility="all", a2a_enabled=True)
    spawned = agent_main.details(
        "sessions_spawn", {"task": "Find papers on SQLite WAL", "agentId": "research"}
    )
    assert spawned["status"] == "accepted"
    drain()
    hits = search(agent_main, "papers", limit=25)
    # The child's task and reply; the parent's completion prompt (which carries the reply) is
    # one of the rows history hides, so search leaves it out.
    assert {h["sessionKey"] for h in hits} >= {spawned["childSessionKey"]}
    parent = Session.objects.get(key="agent:main:main")
    hidden = parent.messages.filter(provenance__sourceTool="subagent_announce")
    assert hidden.exists()
    assert not any(
        h["sessionId"] == parent.session_id and int(h["messageId"], 16) == m.seq
        for h in hits
        for m in hidden
    )
    for hit in hits:
        assert hit["messageId"] in ids(around(agent_main, hit, limit=3)), hit
