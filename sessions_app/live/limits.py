"""Tunables of the live endpoints. Each reads `settings.LIVE_<NAME>` at use time (tests override
them with `settings`), then the environment variable `LIVE_<NAME>` (a server started by a test or
an operator), then these defaults."""

from __future__ import annotations

import os

from django.conf import settings

DEFAULTS = {
    # How often a hub re-reads the database when no hint arrives. On the embedded default this
    # is what carries a worker's append to a browser (≤ 0.5 s); with Redis it is a safety net.
    "POLL_SECONDS": 0.25,
    "POLL_SECONDS_WITH_REDIS": 1.0,
    # Frames queued for one connection before it counts as slow. A slow connection stops
    # receiving (its cursor waits) and is cut off after STALL_SECONDS; it resumes by seq.
    "OUTBOX_FRAMES": 1000,
    "STALL_SECONDS": 10.0,
    # Largest frame a client may send, and most subscriptions on one connection.
    "MAX_FRAME_BYTES": 64 * 1024,
    "MAX_SUBSCRIPTIONS": 100,
    # Largest event frame we send; a bigger message goes out as a placeholder naming its seq.
    "MAX_EVENT_BYTES": 256 * 1024,
    "KEEPALIVE_SECONDS": 15.0,
    # How often open streams re-check that their API key or account is still valid.
    "AUTH_RECHECK_SECONDS": 2.0,
    # Seconds a connection may take to authenticate with its first frame.
    "AUTH_TIMEOUT_SECONDS": 10.0,
    # Messages read per session per hub round (a long catch-up continues next round).
    "BATCH_MESSAGES": 500,
}


def get(name: str):
    value = getattr(settings, f"LIVE_{name}", None)
    if value is not None:
        return value
    default = DEFAULTS[name]
    raw = os.environ.get(f"LIVE_{name}")
    return type(default)(raw) if raw else default


def poll_seconds() -> float:
    return get("POLL_SECONDS_WITH_REDIS" if settings.REDIS_URL else "POLL_SECONDS")
