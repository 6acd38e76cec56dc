"""Harness definitions for the ACP tests: the demo's echo agent, a misbehaving one and a probe,
as real processes run by this test environment's packages (PYTHON)."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

from sessions_app.acp.sandbox import unreachable_part
from sessions_app.manage import config

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "sessions_app" / "acp_agents" / "echo.py"
MISBEHAVING = Path(__file__).resolve().parent / "misbehaving_agent.py"
PROBE = Path(__file__).resolve().parent / "sandbox_probe.py"
LAUNCHER = Path(__file__).resolve().parent / "venv_python.py"


def _harness_python() -> tuple[str, ...]:
    """How a harness runs a Python script with these packages. Run as root, the tests' harnesses
    run as users of their own (sessions_app/acp/sandbox.py), who cannot start an interpreter
    kept where others cannot go (a pyenv under /root): then the system's Python of the same
    version runs it, with the test environment's site-packages first (venv_python.py)."""
    if os.geteuid() != 0 or unreachable_part(sys.executable) is None:
        return (sys.executable,)
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.path.exists(system) and unreachable_part(system) is None:
        return (system, str(LAUNCHER), sysconfig.get_paths()["purelib"])
    return (sys.executable,)


PYTHON = _harness_python()

# Run as root from a checkout (or a venv) other users cannot reach (cloned under /root, or into
# a 0700 temporary directory), a harness user could read neither these scripts nor the packages:
# the tests then run harnesses as the worker's user (OPENCLAW_ACP_SANDBOX=none, conftest.py and
# tests/servers.py) and skip those that prove the sandbox, saying where the way is closed.
# (.ci/run opens its checkout's way, so CI proves it.)
CLOSED = (
    next(
        filter(
            None,
            (
                unreachable_part(str(ECHO.parent)),
                unreachable_part(str(MISBEHAVING.parent)),
                unreachable_part(sysconfig.get_paths()["purelib"]),
            ),
        ),
        None,
    )
    if os.geteuid() == 0
    else None
)
NEEDS_SANDBOX = pytest.mark.skipif(
    CLOSED is not None,
    reason=f"a harness user cannot reach the checkout or its packages ({CLOSED} is closed to "
    "other users), so the harnesses run as the worker's user here",
)
# What the deployment lets a harness run and pass on, in these tests (conftest.py, tests/servers.py).
ACP_COMMANDS = [
    (*PYTHON, str(ECHO)),
    (*PYTHON, str(MISBEHAVING)),
    (*PYTHON, str(PROBE)),
    (sys.executable, str(ECHO)),  # seed_demo's echo (tests/acp/test_acp_demo.py)
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
        "command": PYTHON[0],
        "args": [*PYTHON[1:], str(ECHO), *args],
        "cwdRoot": str(root),
        "permissionMode": mode,
        **extra,
    }


def misbehaving(root: Path, behaviour: str, **extra) -> dict:
    return {
        "command": PYTHON[0],
        "args": [*PYTHON[1:], str(MISBEHAVING), behaviour],
        "cwdRoot": str(root),
        **extra,
    }


def probe(root: Path, **extra) -> dict:
    return {"command": PYTHON[0], "args": [*PYTHON[1:], str(PROBE)], "cwdRoot": str(root), **extra}


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
