"""The periodic sweep (a django-q2 schedule, every minute): ends runs whose worker died, times out
runs past their deadline, re-enqueues runs whose task was lost, archives finished sub-agent
sessions, retries due deliveries and due sub-agent completions. Every action is a conditional
update: safe to run twice."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from openclaw_common.taskqueue import keep_schedule

from ..delivery import retry_due_deliveries
from ..models import ApiKey, GatewayConfig, Run, Session
from . import completions, engine, watchdog

log = logging.getLogger("openclaw.runs")

SCHEDULE_NAME = "openclaw-sweep"
STATE_LOG_SCHEDULE_NAME = "openclaw-state-log-prune"
# The backstop for runs/watchdog.py (which ends them after 10 s from inside the workers): a
# running run's heartbeat (every 2 s) older than this means its worker died. Longer than a
# database outage a run rides out (runs/outage.py, 30 s), since this sweep cannot tell one.
HEARTBEAT_TIMEOUT_SECONDS = getattr(settings, "RUN_HEARTBEAT_TIMEOUT_SECONDS", 60)
# A queued run not picked up by then lost its task (a Redis broker drops in-flight tasks).
REQUEUE_AFTER_SECONDS = getattr(settings, "RUN_REQUEUE_AFTER_SECONDS", 120)


def sweep(*, now: datetime | None = None, heartbeat_timeout: int | None = None) -> dict[str, int]:
    now = now or timezone.now()
    timeout = HEARTBEAT_TIMEOUT_SECONDS if heartbeat_timeout is None else heartbeat_timeout
    counts = {
        "dead": 0,
        "timedOut": 0,
        "requeued": 0,
        "archived": 0,
        "deliveries": 0,
        "completions": 0,
        "acpKeysRevoked": 0,
    }

    counts["dead"] = watchdog.end_dead_runs(now, seconds=timeout)

    overdue = Run.objects.in_flight().filter(deadline__lt=now)
    for run in overdue:
        counts["timedOut"] += engine.finish_run(run, Run.TIMEOUT, error=engine.timeout_text(run))

    stale = Run.objects.filter(
        status=Run.QUEUED, created_at__lt=now - timedelta(seconds=REQUEUE_AFTER_SECONDS)
    )
    for run in stale.only("pk", "lane")[:500]:
        engine.enqueue(run)
        counts["requeued"] += 1

    counts["archived"] = archive_finished_subagents(now=now)
    # Session-tools keys of ACP turns that ended without revoking them (acp/session_tools.py).
    counts["acpKeysRevoked"] = ApiKey.objects.revoke_ended_acp_runs(now)

    counts["deliveries"] = retry_due_deliveries(now)
    counts["completions"] = retry_due_completions(now)
    if any(counts.values()):
        log.info("sweep: %s", counts)
    return counts


def retry_due_completions(now: datetime) -> int:
    """Sub-agent results whose requester turn failed get another turn once their backoff is
    over; those past the retry window fail, visibly (runs/completions.py)."""
    with transaction.atomic():
        follow_ups = completions.due_turns(now)
        for follow_up in follow_ups:
            engine.start_follow_up(follow_up)
    return len(follow_ups)


def archive_finished_subagents(*, now: datetime | None = None) -> int:
    """Sub-agent sessions idle for archiveAfterMinutes with no run in flight (0 = never)."""
    minutes = GatewayConfig.load().subagent_archive_after_minutes
    if not minutes:
        return 0
    now = now or timezone.now()
    cutoff_ms = int((now - timedelta(minutes=minutes)).timestamp() * 1000)
    busy = Run.objects.in_flight().filter(session=OuterRef("pk"))
    idle = list(
        Session.objects.active()
        .filter(spawn_depth__gt=0, updated_at__lt=cutoff_ms)
        .exclude(Exists(busy))
        .values_list("pk", flat=True)[:1000]
    )
    return Session.objects.active().update_changed(idle, "archived", archived_at=now)


def ensure_schedule() -> None:
    """Create or update the sweep schedule (idempotent; called from a migration and `serve`)."""
    keep_schedule(SCHEDULE_NAME, "sessions_app.runs.tasks.sweep", minutes=1)
    # The state log's retention (state_log.prune: 30 days, 50,000 rows a session): hourly, as
    # it reads the whole log and nothing depends on it being prompt.
    keep_schedule(STATE_LOG_SCHEDULE_NAME, "sessions_app.state_log.prune")
