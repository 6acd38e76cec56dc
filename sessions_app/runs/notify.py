"""Wake-up hints for waiters. The database is the truth: a waiter re-reads the run on every hint
and also polls, so a lost hint only delays.

With REDIS_URL the hint is a Redis PUBLISH on `openclaw:run:<id>` (milliseconds across
processes); waiters listen with one connection per event loop (wait.py). Without Redis, on
SQLite, a version file beside the database is rewritten (lib/shared_version.RUNS_FINISHED),
which each process's waits look at every few milliseconds; on PostgreSQL without Redis there is
nothing to publish and waiters poll (lib/wakeups.py).
"""

from __future__ import annotations

from ..lib import wakeups
from ..lib.shared_version import RUNS_FINISHED

RUN_CHANNEL_PREFIX = "openclaw:run:"


def run_channel(run_id: object) -> str:
    return f"{RUN_CHANNEL_PREFIX}{run_id}"


def run_finished(run_id: object) -> None:
    wakeups.send(run_channel(run_id), RUNS_FINISHED, f"the finish of run {run_id}")
