"""Wake-up hints for waiters. The database is the truth: a waiter re-reads the run on every hint
and also polls, so a lost hint only delays.

With REDIS_URL the hint is a Redis PUBLISH on `openclaw:run:<id>` (milliseconds across
processes); without it there is nothing to publish and waiters poll.
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger("openclaw.runs")
_client = None


def run_channel(run_id) -> str:
    return f"openclaw:run:{run_id}"


def _redis():
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2
        )
    return _client


def run_finished(run_id) -> None:
    if not settings.REDIS_URL:
        return
    try:
        _redis().publish(run_channel(run_id), b"finished")
    except Exception:  # a hint is best effort: waiters poll anyway
        log.warning("could not publish the finish of run %s", run_id, exc_info=True)
