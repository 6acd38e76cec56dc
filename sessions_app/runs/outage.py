"""Riding out a short database outage on a worker (a PostgreSQL restart, a failover, a dropped
connection): a run in flight keeps going and finishes, instead of dying with the connection.

- The turn's abort check and the heartbeat skip a beat while the database is unreachable and
  reconnect when it is back (a broken connection is closed, so Django opens a new one).
- The finishing transaction is tried again with backoff (0.2 s doubling to 5 s) until the
  database answers, for up to RUN_DB_OUTAGE_SECONDS (default 30). It rolled back whole, so
  doing it again is safe.
- A tool call the model makes meanwhile gets an error result it can act on, not a dead run.
- Past the bound, the run ends with the true reason: the database was unreachable, not "the
  worker stopped". If the database is still away then, the worker keeps that ending and its
  watchdog writes it as soon as the database answers (engine.fail_after_outage), before any
  watchdog could take the silent run for a dead worker's.

Contention (a deadlock, SQLite's "database is locked") is not an outage: engine.retrying handles
it with a few quick tries.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

log = logging.getLogger("openclaw.runs")

T = TypeVar("T")
FIRST_DELAY = 0.2
MAX_DELAY = 5.0
TOOL_ERROR = "the session store is unreachable for a moment; try again shortly"
CONTENTION = ("deadlock", "locked", "serializ")


def bound_seconds() -> float:
    return float(getattr(settings, "RUN_DB_OUTAGE_SECONDS", 30))


def is_contention(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, OperationalError) and any(word in text for word in CONTENTION)


def is_connection_lost(exc: BaseException) -> bool:
    """The database could not be reached or dropped the connection (not a bad query)."""
    if isinstance(exc, InterfaceError):
        return True
    return isinstance(exc, OperationalError) and not is_contention(exc)


def reset_connection() -> None:
    """Drop this thread's broken connection so the next query opens a new one (outside a
    transaction only: inside one, the transaction's owner rolls back first)."""
    if not connection.in_atomic_block:
        with contextlib.suppress(DatabaseError):
            connection.close()


WHILE_FINISHING = "while the run finished"
DURING_TURN = "during the turn"


def reason(exc: BaseException, seconds: float, during: str = WHILE_FINISHING) -> str:
    """The run's error when an outage outlasted the bound: what happened, for how long, when,
    and the driver's own words (first line)."""
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return f"the database was unreachable for {seconds:.0f}s {during}: {first_line}"


class DatabaseUnreachable(RuntimeError):
    """The outage outlasted RUN_DB_OUTAGE_SECONDS."""


def through_outage(operation: Callable[[], T]) -> T:
    """`operation()`, tried again with backoff while the database is unreachable, for up to
    the bound; then DatabaseUnreachable (its message is the run's true error)."""
    started = time.monotonic()
    delay = FIRST_DELAY
    while True:
        try:
            return operation()
        except DatabaseError as exc:
            # Inside a caller's transaction there is nothing to retry: it rolls back whole.
            if not is_connection_lost(exc) or connection.in_atomic_block:
                raise
            waited = time.monotonic() - started
            left = bound_seconds() - waited
            if left <= 0:
                raise DatabaseUnreachable(reason(exc, waited)) from exc
            log.warning("database unreachable (%s); trying again in %.1fs", exc, delay)
            reset_connection()
            # The last try lands at the bound itself, not a backoff step before it.
            time.sleep(min(delay, left))
            delay = min(delay * 2, MAX_DELAY)


class Watch:
    """For checks that may simply be skipped while the database is away (the abort check, the
    heartbeat): `skipped(exc)` is True for an outage within the bound, so the caller goes on."""

    def __init__(self) -> None:
        self.since: float | None = None

    def ok(self) -> None:
        self.since = None

    def skipped(self, exc: BaseException) -> bool:
        if not is_connection_lost(exc):
            return False
        now = time.monotonic()
        if self.since is None:
            self.since = now
            log.warning("database unreachable (%s); the run goes on", exc)
        reset_connection()
        return now - self.since <= bound_seconds()
