"""Wake-ups across processes: "something you wait for may have happened, look again" (the
live updates' session hints are lib/hints.py, over the channel layer).

The database is the truth: whoever waits re-reads it on a wake-up and also looks on its own now and
then, so a lost wake-up only delays. With REDIS_URL a wake-up is a PUBLISH on a channel (milliseconds
across processes and hosts), through one client per process; without Redis, on SQLite, it
rewrites a version file beside the database (lib/shared_version), which waiters read every few
milliseconds; on PostgreSQL without Redis there is nowhere to send it, and waiters poll.

Used for a run's finish (runs/notify.py: the waits) and a queued task (runs/broker.py: the
worker's pusher).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from django.conf import settings

from .shared_version import SharedVersion

log = logging.getLogger("openclaw.wakeups")

TIMEOUT_SECONDS = 0.25
# After Redis failed: wake-ups are skipped (not each a connection timeout) for this long.
RETRY_SECONDS = 1.0

# (pid, url, redis.Redis): a forked worker makes its own, and so does a changed REDIS_URL (tests)
_client: tuple[int, str, Any] | None = None
_down_until = 0.0  # for the client's URL


def send(channel: str, version: SharedVersion, what: str) -> None:
    """Say that `what` happened: PUBLISH on `channel` with Redis, else move `version` (SQLite).
    Best effort: a failure is logged, never raised."""
    global _down_until
    if not settings.REDIS_URL:
        version.bump_now()
        return
    client = _redis()
    if time.monotonic() < _down_until:
        return
    try:
        client.publish(channel, b"1")
    except Exception:  # noqa: BLE001 (any client error: the waiters poll anyway)
        _down_until = time.monotonic() + RETRY_SECONDS
        log.warning("could not publish the wake-up of %s", what, exc_info=True)


def _redis() -> Any:
    global _client
    url = settings.REDIS_URL
    if _client is None or _client[:2] != (os.getpid(), url):
        import redis

        forget()
        _client = (
            os.getpid(),
            url,
            redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
            ),
        )
    return _client[2]


def forget() -> None:
    """Drop the client and its backoff."""
    global _client, _down_until
    _client, _down_until = None, 0.0
