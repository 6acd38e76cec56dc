"""Stopping work (9.6 §1.11; docs/orchestration.md, "Stop and cancel"): one session's runs, and
with them every sub-agent below it. The REST abort, `subagents cancel`, the admin's and the
transcript browser's Stop buttons all come here.

- The stopped session's running runs end as `aborted` (its queued ones too with clearQueued).
  If it is a sub-agent, its requester still hears how its task ended (a completion turn, status
  cancelled), unless the requester asked for the stop itself (`subagents cancel`).
- With cascade (the default), every descendant's work is cancelled too, and their completions
  are dismissed: a stopped tree wakes nobody inside it.
- A task waiting for its children or paused for a message has no run to abort: it ends here.
Nothing is deleted; every ended run and task says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from ..models import Run, Session
from . import completions, engine
from .subagent_tasks import build

MAX_TREE = 10_000  # sessions below one stopped session (depth is capped at 5 anyway)


@dataclass
class Stopped:
    own: int = 0  # the stopped session's own runs aborted and tasks ended
    aborted_run_ids: list[str] = field(default_factory=list)
    ended_tasks: int = 0  # waiting or paused tasks ended without a run to abort
    descendants: int = 0  # sub-agent sessions below that were stopped


def descendants(session: Session) -> list[Session]:
    """Every session spawned below `session`, breadth first."""
    found: list[Session] = []
    level = [session.key]
    seen = {session.key}
    while level and len(found) < MAX_TREE:
        children = [
            s for s in Session.objects.filter(spawned_by__in=level).exclude(key__in=seen)[:MAX_TREE]
        ]
        found += children
        seen.update(s.key for s in children)
        level = [s.key for s in children]
    return found


def tree_busy(session: Session) -> bool:
    """Whether anything below `session` is still in flight."""
    below = descendants(session)
    return bool(below) and Run.objects.in_flight().filter(session__in=below).exists()


def stop_session(
    session: Session,
    *,
    reason: str,
    clear_queued: bool = False,
    cascade: bool = True,
    dismiss_own: bool = False,
) -> Stopped:
    """Stop `session`'s work (and, with cascade, everything below it). `dismiss_own`: its own
    task's completion is dismissed too (its requester is the one stopping it)."""
    stopped = Stopped()
    tree = descendants(session) if cascade else []
    token = completions.dismissing.set(reason) if dismiss_own else None
    try:
        _stop_one(session, reason, clear_queued=clear_queued, stopped=stopped)
    finally:
        if token is not None:
            completions.dismissing.reset(token)
    stopped.own = len(stopped.aborted_run_ids) + stopped.ended_tasks
    if tree:
        token = completions.dismissing.set(f"{reason} (a requester above it was stopped)")
        try:
            # Twice: a run a finishing descendant started meanwhile is caught the second time.
            for _ in range(2):
                for child in tree:
                    _stop_one(child, reason, clear_queued=True, stopped=stopped)
        finally:
            completions.dismissing.reset(token)
        stopped.descendants = len(tree)
    return stopped


def _stop_one(session: Session, reason: str, *, clear_queued: bool, stopped: Stopped) -> None:
    states = [Run.RUNNING, Run.QUEUED] if clear_queued else [Run.RUNNING]
    for run in Run.objects.filter(session=session, status__in=states).select_related(
        "session", "session__agent"
    ):
        if engine.finish_run(run, Run.ABORTED, error=reason):
            stopped.aborted_run_ids.append(str(run.pk))
    stopped.ended_tasks += end_idle_task(session, reason)


def end_idle_task(session: Session, reason: str) -> int:
    """A sub-agent task of `session` that waits (for its children, or paused for a message)
    with no run in flight ends now, as cancelled."""
    task_run = Run.objects.filter(session=session, kind="spawn").order_by("-created_at").first()
    if task_run is None or Run.objects.in_flight().filter(session=session).exists():
        return 0
    tasks = build([task_run])
    if not tasks or tasks[0].ended or not (tasks[0].waiting or tasks[0].paused):
        return 0
    with transaction.atomic():
        for follow_up in completions.task_stopped(tasks[0], reason):
            engine.start_follow_up(follow_up)
    return 1
