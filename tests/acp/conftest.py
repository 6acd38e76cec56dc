"""The deployment's ACP lists for these tests: the shipped echo harness (the default) and the
tests' misbehaving one may run, and the env test may pass OPENCLAW_TEST_VISIBLE on. Processes
the tests start get the same lists (tests/live.child_env)."""

from __future__ import annotations

import pytest

from sessions_app.acp.client import POOL
from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, CLOSED


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
