"""Wake-up hints for waiters. The database is the truth: a waiter re-reads the run on every hint
and also polls, so a lost hint only delays.

With REDIS_URL the hint is a Redis PUBLISH on `openclaw:run:<id>` (milliseconds across
processes), through one client per process; waiters listen with one connection per event loop
(wait.py). Without Redis, on SQLite, a version file beside the database is rewritten
(lib/shared_version.RUNS_FINISHED), which each process's waits look at every few milliseconds;
on PostgreSQL without Redis there is nothing to publish and waiters poll.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from django.conf import settings

from ..lib.shared_version import RUNS_FINISHED

log = logging.getLogger("openclaw.runs")
RUN_CHANNEL_PREFIX = "openclaw:run:"
if TYPE_CHECKING:
    import redis

_client: tuple[int, redis.Redis] | None = None  # (pid, client): a forked worker makes its own


def run_channel(run_id: object) -> str:
    return f"{RUN_CHANNEL_PREFIX}{run_id}"


def _redis() -> redis.Redis:
    global _client
    if _client is None or _client[0] != os.getpid():
        import redis

        _client = (
            os.getpid(),
            redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2),
        )
    return _client[1]


def run_finished(run_id: object) -> None:
    if not settings.REDIS_URL:
        # On SQLite, the version file beside the database: every process's waits look at it
        # every few milliseconds (wait.TokenHub). (PostgreSQL without Redis: nothing; waits poll.)
        RUNS_FINISHED.bump_now()
        return
    try:
        _redis().publish(run_channel(run_id), b"finished")
    except Exception:  # a hint is best effort: waiters poll anyway
        log.warning("could not publish the finish of run %s", run_id, exc_info=True)
