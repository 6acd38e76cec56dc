"""django-q2 entry points. Tasks take ids, are idempotent, and never wait on another run."""

from __future__ import annotations

from .engine import execute_run as execute
from .sweeper import sweep as run_sweep


def execute_run(run_id: str, lane: str = "main") -> str:
    return execute(run_id, lane)


def sweep() -> dict:
    return run_sweep()
