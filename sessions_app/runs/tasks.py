"""django-q2 entry points. Tasks take ids, are idempotent, and never wait on another run."""

from __future__ import annotations


def execute_run(run_id: str, lane: str = "main") -> str:
    from .engine import execute_run as execute

    return execute(run_id, lane)


def sweep() -> dict:
    from .sweeper import sweep as run_sweep

    return run_sweep()
