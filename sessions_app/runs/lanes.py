"""When a queued run may start, beyond "it is queued" (docs/orchestration.md, "Lanes").

- **Serial runs** (a requester's completion turn) start only once no older run of their session
  is in flight, so a busy requester is never given a competing turn; they start in the order
  they were created, and their input message is appended when they start, after whatever the
  turn before them wrote.
- **The sub-agent lane**: runs of sub-agent sessions share `maxConcurrent` across every worker
  process (9.6 `agents.defaults.subagents.maxConcurrent`, default 8). The count and the claim
  are one statement; on PostgreSQL a transaction-scoped advisory lock makes concurrent claims
  take turns, so the cap holds exactly (SQLite serialises writers anyway).

A run that may not start yet is marked deferred (`Run.defer`); whoever finishes a run of its
lane or session starts the oldest deferred one (`kick`). The sweep starts any left behind.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import connection, transaction

from openclaw_common import taskqueue

from .. import store
from ..models import GatewayConfig, Run, Session

log = logging.getLogger("openclaw.runs")

# pg_advisory_xact_lock key of the sub-agent lane ("ocsl").
LANE_LOCK = 0x6F63736C


def claim(run_id: uuid.UUID | str, *, worker: str, lane: str) -> datetime | None:
    """Run.claim with the lane's cap: None when the run is not queued or may not start yet."""
    if lane != Run.SUBAGENT_LANE:
        return Run.claim(run_id, worker=worker)
    cap = GatewayConfig.load().max_concurrent
    if connection.vendor != "postgresql":
        return Run.claim(run_id, worker=worker, max_subagents=cap)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LANE_LOCK])
        return Run.claim(run_id, worker=worker, max_subagents=cap)


def defer(run_id: uuid.UUID | str) -> bool:
    """Mark a run that could not start (and its session, if it waits for its turn there)."""
    if not Run.defer(run_id):
        return False
    run = Run.objects.filter(pk=run_id).only("session_id", "serial").first()
    if run is not None and run.serial:
        Session.objects.filter(pk=run.session_id).update(turns_waiting=True)
    return True


def start_serial(run: Run) -> None:
    """A serial run was just claimed: its input message goes in now, after everything its
    session's earlier turns wrote (the turn sees them)."""
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=run.session_id)
        run.input_seq = store.append_run_input(
            session, run.message, provenance=run.input_provenance
        )
        Run.objects.filter(pk=run.pk).update(input_seq=run.input_seq)


def kick(run: Run, session: Session) -> list[Run]:
    """In a finishing transaction: the deferred runs this finish lets start, to be executed
    after commit (the oldest serial run of the session, the oldest deferred run of the lane)."""
    ready: list[Run] = []
    if session.turns_waiting:
        waiting = (
            Run.objects.filter(session_id=session.pk, status=Run.QUEUED, serial=True)
            .order_by("created_at")
            .first()
        )
        if waiting is None:
            Session.objects.filter(pk=session.pk).update(turns_waiting=False)
            session.turns_waiting = False
        else:
            ready.append(waiting)
    if run.lane == Run.SUBAGENT_LANE:
        deferred = (
            Run.objects.filter(lane=Run.SUBAGENT_LANE, status=Run.QUEUED, deferred_at__isnull=False)
            .order_by("deferred_at")
            .first()
        )
        if deferred is not None and all(r.pk != deferred.pk for r in ready):
            ready.append(deferred)
    return ready


def enqueue(run: Run) -> None:
    """Hand a run to the workers (a task carries its lane, so the claim applies the cap)."""
    taskqueue.enqueue(
        "sessions_app.runs.tasks.execute_run", str(run.pk), run.lane, name=f"run-{run.pk}"
    )
