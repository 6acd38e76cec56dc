"""The sweep's fast path: a thread in every worker process that, every RUN_WATCH_SECONDS (2),
finds the runs a dead worker left behind, so they are dealt with within seconds of its death
rather than minutes (the minute sweep stays as the backstop).

- **A running run whose heartbeat stopped** (the engine beats every 2 s) for
  RUN_DEAD_AFTER_SECONDS (10) is ended as `error`, saying the worker stopped. It is never run
  again: the turn may have had effects (a send, a spawn) that must not happen twice.
- **A queued run whose task was lost** (a worker killed after taking it from the broker, a
  Redis broker that dropped it) is handed to the workers again once it has waited
  RUN_ORPHAN_AFTER_SECONDS (10) unclaimed, then at most that often. Claiming is a conditional
  UPDATE, so a task that was only slow, not lost, and its copy run the turn once between them.
  Runs that wait on purpose (deferred: their session busy, the sub-agent lane full) are left to
  the finish that will start them.

Every worker process runs one; they share the work through conditional UPDATEs (the requeue
stamp below, finish_run's), so two watchdogs never act on the same run. A watchdog that cannot
reach the database judges no heartbeat until it has been back for RUN_DEAD_AFTER_SECONDS: the
runs it watches may have spent the outage waiting too (outage.py), with their beats unwritten.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.db.models import Q
from django.utils import timezone

from ..models import ApiKey, Run
from . import engine, outage

log = logging.getLogger("openclaw.runs")

_started = threading.Lock()
_thread: threading.Thread | None = None


def interval() -> float:
    return float(getattr(settings, "RUN_WATCH_SECONDS", 2))


def dead_after() -> int:
    return int(getattr(settings, "RUN_DEAD_AFTER_SECONDS", 10))


def orphan_after() -> int:
    return int(getattr(settings, "RUN_ORPHAN_AFTER_SECONDS", 10))


def dead_worker_text(seconds: int) -> str:
    return (
        f"the worker running this run stopped (no heartbeat for {seconds}s); the run was ended "
        "and can be sent again"
    )


def start(**_signal_kwargs: object) -> None:
    """django-q2's post_spawn: a worker process has started; watch from it (once per process)."""
    global _thread
    with _started:
        if _thread is not None and _thread.is_alive():
            return
        _thread = threading.Thread(target=Watchdog().loop, daemon=True, name="run-watchdog")
        _thread.start()


class Watchdog:
    def __init__(self) -> None:
        self.healthy_since: float | None = None

    def loop(self) -> None:
        while True:
            time.sleep(interval())
            try:
                self.once()
            except DatabaseError as exc:
                if not outage.is_connection_lost(exc):
                    log.exception("run watchdog failed")
                self.healthy_since = None
                outage.reset_connection()
            except Exception:  # a bug must not stop the watching
                log.exception("run watchdog failed")
            finally:
                close_old_connections()

    def once(self, now: datetime | None = None) -> dict[str, int]:
        now = now or timezone.now()
        requeued = requeue_orphans(now)
        # The database answers: first the runs this process ended for an outage and could not
        # write so (before a watchdog takes their silence for a dead worker's).
        engine.write_unwritten_ends()
        if self.healthy_since is None:
            self.healthy_since = time.monotonic()
        dead = 0
        if time.monotonic() - self.healthy_since >= dead_after():
            dead = end_dead_runs(now)
        if dead or requeued:
            log.info("watchdog: %s dead, %s requeued", dead, requeued)
        return {"dead": dead, "requeued": requeued}


def end_dead_runs(now: datetime, *, seconds: int | None = None) -> int:
    """Running runs whose heartbeat is `seconds` old end as error, saying so (the sweep calls
    this too, with its longer backstop)."""
    seconds = dead_after() if seconds is None else seconds
    stale = Run.objects.filter(
        status=Run.RUNNING, heartbeat_at__lt=now - timedelta(seconds=seconds)
    )
    ended = 0
    for run in stale[:500]:
        ended += engine.finish_run(run, Run.ERROR, error=dead_worker_text(seconds))
    if ended:
        # An ACP turn whose worker died could not revoke its session-tools key (acp/
        # session_tools.py): revoked now, with the run's end. The sweep does it for the rest.
        ApiKey.objects.revoke_ended_acp_runs(now)
    return ended


def requeue_orphans(now: datetime, *, seconds: int | None = None) -> int:
    """Queued runs nobody has claimed for `seconds`, not waiting on purpose: enqueued again.
    heartbeat_at, unused while a run is queued, stamps the requeue so that it happens once per
    `seconds` however many watchdogs look (a claim overwrites it)."""
    seconds = orphan_after() if seconds is None else seconds
    cutoff = now - timedelta(seconds=seconds)
    unstamped = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff)
    candidates = (
        Run.objects.filter(status=Run.QUEUED, deferred_at__isnull=True, created_at__lt=cutoff)
        .filter(unstamped)
        .only("pk", "lane")[:200]
    )
    requeued = 0
    for run in candidates:
        mine = (
            Run.objects.filter(pk=run.pk, status=Run.QUEUED)
            .filter(unstamped)
            .update(heartbeat_at=now)
        )
        if mine:
            engine.enqueue(run)
            requeued += 1
    return requeued
