"""acp/facts.py's records from what a harness sends (client.py's events): what does not fit
(too long, the wrong type) is cut or left out, never a failed turn."""

from __future__ import annotations

import pytest

from sessions_app.acp.facts import TITLE_CHARS, TurnFacts, page_facts, spawned
from sessions_app.models import AcpChild, AcpPermission, Run
from tests.conftest import make_agent, make_session

KEY = "agent:echo:acp:6f1b0c2e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"


@pytest.fixture
def run(db) -> Run:
    make_agent("echo")
    session = make_session(KEY)
    spawned(session, harness="echo", cwd="/srv/x")  # as sessions_spawn records it
    return Run.objects.create(session=session, kind="spawn", status=Run.RUNNING)


def test_odd_values_are_cut_or_left_out(run):
    facts = TurnFacts(run, "echo", 60)
    facts.seen(
        [
            ("started", {"sessionId": "s" * 900, "cwd": "/srv/x", "pid": "12", "uid": 1.5}),
            ("permission", {"mode": "deny", "allowed": False, "toolCall": "not a dict"}),
            (
                "permission",
                {
                    "mode": "allow-all",
                    "allowed": True,
                    "optionId": "ok",
                    "toolCall": {"title": "t" * 5000, "kind": "execute" * 10},
                    "options": ["not a dict", *[{"optionId": str(i)} for i in range(40)]],
                },
            ),
            ("permission", {"mode": "read-only", "allowed": True, "options": "nope"}),
        ]
    )
    row = AcpChild.objects.get(session=run.session)
    assert len(row.acp_session_id) == 512 and row.cwd == row.turn_cwd == "/srv/x"
    assert row.pid is None and row.uid is None  # not ints: not recorded
    first, second, third = AcpPermission.objects.filter(session=run.session).order_by("decided_at")
    assert (first.title, first.tool_kind, first.options, first.allowed) == ("", "", [], False)
    assert len(second.title) == TITLE_CHARS and len(second.tool_kind) == 32
    assert len(second.options) == 19  # the first 20 given, dicts only
    assert third.options == []
    shown = page_facts(run.session)
    assert [d["title"] for d in shown["decisions"]][-1] == "a tool call"


def test_titles_are_masked_as_transcript_text_is(run):
    facts = TurnFacts(run, "echo", 60)
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    facts.seen(
        [
            (
                "permission",
                {
                    "mode": "deny",
                    "allowed": False,
                    "toolCall": {"title": f"curl -H 'Authorization: Bearer {secret}'"},
                },
            )
        ]
    )
    # Stored as the harness said it (the operator's record); shown masked.
    assert secret in AcpPermission.objects.get(session=run.session).title
    (decision,) = page_facts(run.session)["decisions"]
    assert secret not in decision["title"]


def test_a_turn_that_ends_its_process_makes_every_child_in_it_cold(run):
    facts = TurnFacts(run, "echo", 60)
    facts.seen([("started", {"sessionId": "a", "cwd": "/srv/x", "pid": 4242})])
    facts.ended(kept_warm=True, pid=4242)
    assert AcpChild.objects.get(session=run.session).warm_until is not None
    other = make_session(KEY.replace("6f1b", "7f1b"))
    other_run = Run.objects.create(session=other, kind="spawn", status=Run.RUNNING)
    sharer = TurnFacts(other_run, "echo", 60)
    sharer.seen([("started", {"sessionId": "b", "cwd": "/srv/x", "pid": 4242, "warm": True})])
    sharer.ended(kept_warm=False, pid=4242)  # its turn failed: the process ended
    assert AcpChild.objects.get(session=run.session).warm_until is None
    assert page_facts(run.session)["state"] == "cold"
