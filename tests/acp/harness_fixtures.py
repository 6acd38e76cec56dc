"""Harness definitions for the ACP tests: the demo's echo agent and a misbehaving one, as real
processes run by this test environment's Python."""

from __future__ import annotations

import sys
from pathlib import Path

from sessions_app.manage import config

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "sessions_app" / "acp_agents" / "echo.py"
MISBEHAVING = Path(__file__).resolve().parent / "misbehaving_agent.py"
# What the deployment lets a harness run and pass on, in these tests (conftest.py, tests/servers.py).
ACP_COMMANDS = [
    (sys.executable, str(ECHO)),
    (sys.executable, str(MISBEHAVING)),
    ("/usr/bin/env", "true"),  # a harness that is saved, never run to a turn
    ("no-such-harness-binary",),  # a command that is not there
    ("npx", "-y", "@zed-industries/codex-acp"),  # the README's example, registered not run
]
ACP_ENV = [
    "HOME",
    "LANG",
    "OPENAI_API_KEY",
    "OPENCLAW_TEST_VISIBLE",
]  # the README names OPENAI_API_KEY


def echo(root: Path, *, mode: str = "read-only", args: tuple[str, ...] = (), **extra) -> dict:
    return {
        "command": sys.executable,
        "args": [str(ECHO), *args],
        "cwdRoot": str(root),
        "permissionMode": mode,
        **extra,
    }


def misbehaving(root: Path, behaviour: str, **extra) -> dict:
    return {
        "command": sys.executable,
        "args": [str(MISBEHAVING), behaviour],
        "cwdRoot": str(root),
        **extra,
    }


def register(allowed: list[str] | None = None, default: str = "echo", **harnesses: dict) -> None:
    """acp.agents = harnesses (through the operator's config path), allowed = all of them."""
    config.update_config(
        api_key=None,
        changes={
            "acp.agents": harnesses,
            "acp.allowedAgents": allowed if allowed is not None else sorted(harnesses),
            "acp.defaultAgent": default,
        },
    )
