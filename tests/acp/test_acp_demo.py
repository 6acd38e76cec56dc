"""The README's ACP example, for real: `seed_demo` registers the echo harness, and an agent key
spawns it with runtime "acp" and nothing else configured (a real server and worker)."""

from __future__ import annotations

import os
import sys

from sessions_app.acp.sandbox import unreachable_part
from sessions_app.models import GatewayConfig, Message, Run
from tests.servers import manage, start_worker, wait_until


def test_seed_demo_registers_echo_and_a_newcomer_can_spawn_it(demo_server):
    config = GatewayConfig.load()
    assert config.acp_default_agent == "echo" and config.acp_allowed_agents == ["echo"]
    assert config.acp_agents["echo"]["args"][0].endswith("sessions_app/acp_agents/echo.py")
    # seed_demo's echo runs by the server's Python. A worker run as root starts it as a user of
    # its own, who cannot start a Python kept where others cannot go (this machine's pyenv under
    # /root): there the demo is run as the worker's user, as a developer's would be.
    unreachable = os.geteuid() == 0 and unreachable_part(sys.executable)
    worker = start_worker(workers=1, env={"OPENCLAW_ACP_SANDBOX": "none"} if unreachable else {})
    try:
        key = manage("create_api_key", "--scope", "agent", "--agent", "main").strip()
        key = key.splitlines()[-1]
        accepted = demo_server.request(
            "POST",
            "/tools/invoke",
            body={
                "tool": "sessions_spawn",
                "args": {"runtime": "acp", "task": "Say this back to me, please"},
            },
            token=key,
        ).json()["result"]["details"]
        assert accepted["status"] == "accepted"
        assert accepted["childSessionKey"].startswith("agent:echo:acp:")
        run = wait_until(
            lambda: Run.objects.filter(pk=accepted["runId"], status=Run.OK).first(), timeout=40
        )
        assert run.reply == "Say this back to me, please"
        child = Message.objects.filter(session__key=accepted["childSessionKey"])
        assert child.filter(role="toolResult", extra__isError=False).exists()  # read-only: allowed
    finally:
        worker.stop()
    # Seeding again keeps what an operator set.
    manage("seed_demo")
    assert GatewayConfig.load().acp_agents == config.acp_agents
