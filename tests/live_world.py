"""The two-agent world most cross-process tests start from: `main` (whose key the test uses)
and `research` (scripted by the test), their main sessions, and agent-to-agent allowed."""

from __future__ import annotations

from tests.conftest import make_agent, make_session, set_config
from tests.servers import manage

ANNOUNCE_SKIP = {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"}


def main_and_research(research_rules: list[dict] | None = None, **main: object) -> str:
    """Make the world; `main`'s agent fields (e.g. `subagents`). Returns an agent key of main."""
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    make_agent("main", **main)
    if research_rules is None:
        make_agent("research")
    else:
        make_agent("research", backend={"type": "scripted", "rules": research_rules})
    make_session("main")
    make_session("agent:research:main")
    return manage("create_api_key", "--scope", "agent", "--agent", "main").strip().splitlines()[-1]


def send_to_research(server, token: str, message: str, *, timeout: int = 0) -> dict:
    """sessions_send to agent:research:main through /tools/invoke: the result's details."""
    response = server.request(
        "POST",
        "/tools/invoke",
        token=token,
        body={
            "tool": "sessions_send",
            "args": {
                "sessionKey": "agent:research:main",
                "message": message,
                "timeoutSeconds": timeout,
            },
        },
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]
