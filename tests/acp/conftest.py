"""The deployment's ACP lists for these tests: the shipped echo harness (the default) and the
tests' misbehaving one may run, and the env test may pass OPENCLAW_TEST_VISIBLE on. Processes
the tests start get the same lists (tests/live.child_env)."""

from __future__ import annotations

import pytest

from sessions_app.acp.client import POOL
from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, CLOSED
from tests.conftest import make_session


@pytest.fixture(autouse=True)
def deployment_lists(settings):
    settings.OPENCLAW_ACP_COMMANDS = ACP_COMMANDS
    settings.OPENCLAW_ACP_ENV = ACP_ENV
    if CLOSED is not None:
        settings.OPENCLAW_ACP_SANDBOX = "none"  # (harness_fixtures.CLOSED says why)


@pytest.fixture(autouse=True)
def no_warm_harness_outlives_its_test():
    """Warm harness processes of this (test) process end with the test that started them."""
    yield
    POOL.shutdown()


@pytest.fixture
def no_heartbeat(monkeypatch):
    """For a turn run in the test process (tests/runs/helpers.drain): it lasts seconds (a real
    process starts), inside the test's transaction, where the heartbeat thread's own connection
    would wait for that transaction's lock (SQLite)."""
    monkeypatch.setattr("sessions_app.runs.engine.HEARTBEAT_SECONDS", 3600)


@pytest.fixture
def home(agents, tmp_path):
    """agent:main:main, and a directory for the harness's cwdRoot."""
    make_session("main")
    return tmp_path
