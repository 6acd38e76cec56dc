"""The ACP runtime as the run engine takes it (runs/engine.Harnesses), its code loaded on the
first ACP turn a process runs.

runtime.py imports the ACP SDK, whose schema (several hundred pydantic models) was more than half
of every process's start: 0.74 s of django.setup()'s 1.28 s of CPU, measured. The web server,
`migrate`, `seed_demo` and a worker that runs no harness never need it, and `make run` starts
five such processes (issue 29.1). Which sessions are ACP ones is a key's grammar and needs none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from openclaw_common import keys

from ..models import Run
from ..runs.backends import TurnOutput

RUNTIME = "sessions_app.acp.runtime"


def is_acp_session(key: str) -> bool:
    """`agent:<harness>:acp:<uuid>` (reference §1.1: rest starting with `acp:`)."""
    parsed = keys.parse_agent_key(key)
    return parsed is not None and parsed[1].startswith("acp:")


def run_turn(run: Run, *, check_abort: Callable[[], None]) -> TurnOutput:
    """runtime.run_turn, importing it (and the SDK) the first time."""
    output: TurnOutput = importlib.import_module(RUNTIME).run_turn(run, check_abort=check_abort)
    return output
