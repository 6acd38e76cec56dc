"""An ACP child run to the end with the demo's echo harness, for the page tests (the admin's
session page and the browser's panel: docs/browser-and-admin.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import Run, Session
from tests.acp.harness_fixtures import echo, register
from tests.conftest import Api, make_session
from tests.runs.helpers import drain

TASK = "Read this task, then say it back."


@pytest.fixture
def no_heartbeat(monkeypatch):
    # The turn lasts a second or two inside the test's transaction: the heartbeat thread's own
    # connection would wait for that transaction's lock (SQLite).
    monkeypatch.setattr("sessions_app.runs.engine.HEARTBEAT_SECONDS", 3600)


def spawn_echo_child(api: Api, root: Path, *, mode: str = "read-only", **harness) -> Session:
    """Register echo (permissionMode `mode`), spawn an ACP child with it, run its turn here."""
    make_session("main")
    register(echo=echo(root, mode=mode, **harness))
    result = api.details("sessions_spawn", {"task": TASK, "runtime": "acp", "label": "echo it"})
    assert result["status"] == "accepted", result
    drain()
    run = Run.objects.get(pk=result["runId"])
    assert run.status in (Run.OK, Run.ERROR), run.status
    return Session.objects.get(key=result["childSessionKey"])
