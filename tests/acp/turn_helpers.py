"""What the ACP tests that run a child's turn in the test process share (test_acp_turns,
test_acp_warm, test_acp_session_tools): the task the echo harness says back, and a spawn of an
ACP child through the agent's API. Their fixtures (`no_heartbeat`, `home`) are in conftest.py."""

from __future__ import annotations

from sessions_app.models import Run, Session
from tests.runs.helpers import drain

TASK = "Hello there, this is the task text to echo back."


def spawn(api, **args) -> tuple[Session, Run]:
    """An ACP child of the API's session with TASK (queued: the test drains when it wants)."""
    result = api.details("sessions_spawn", {"task": TASK, "runtime": "acp", **args})
    assert result["status"] == "accepted", result
    return Session.objects.get(key=result["childSessionKey"]), Run.objects.get(pk=result["runId"])


def spawn_and_run(api, **args) -> tuple[Session, Run]:
    """spawn(), then its turn run to its end (tests/runs/helpers.drain: the worker's own entry)."""
    result = api.details("sessions_spawn", {"task": TASK, "runtime": "acp", **args})
    assert result["status"] == "accepted", result
    drain()
    return Session.objects.get(key=result["childSessionKey"]), Run.objects.get(pk=result["runId"])
