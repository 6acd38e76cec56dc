"""Sub-agent tasks as `subagents` and `sessions_yield` see them, read from the runs we already store
(no second ledger): a task is a spawn run and the turns that continue it in the child session
(successor turns after a yield, a continuation after a pause); its Completion, once it exists,
says how it ended and where its result stands.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from ..models import Completion, Run, Session

# 9.6 task status from a run's final status (`lost` → failed).
FINAL_STATUS = {
    Run.OK: "completed",
    Run.ERROR: "failed",
    Run.TIMEOUT: "timed_out",
    Run.ABORTED: "cancelled",
}


@dataclass
class Task:
    run: Run  # the spawn run
    session: Session  # the child
    latest: Run  # the task's latest turn in the child session
    completion: Completion | None

    @property
    def task_id(self) -> str:
        return str(self.run.pk)

    @property
    def task_name(self) -> str:
        """sessions_spawn's taskName, if one was given."""
        return str((self.run.flow or {}).get("taskName") or "")

    @property
    def ended(self) -> bool:
        return self.completion is not None

    @property
    def paused(self) -> bool:
        return (
            not self.ended
            and self.latest.finished
            and self.latest.yielded == Run.YIELDED_FOR_MESSAGE
        )

    @property
    def waiting(self) -> bool:
        return (
            not self.ended
            and self.latest.finished
            and self.latest.yielded == Run.YIELDED_FOR_CHILDREN
        )

    @property
    def status(self) -> str:
        if self.completion is not None:
            # The outcome, not the last turn's status: a waiting task that was stopped ended
            # "aborted" though its last turn (the one that yielded) was ok.
            ended = self.completion.outcome.get("status") or self.completion.child_run.status
            return FINAL_STATUS.get(ended, "failed")
        if self.latest.status == Run.QUEUED and self.latest.pk == self.run.pk:
            return "queued"
        return "running"

    @property
    def state(self) -> str:
        """9.6 execution.state: queued | running | waiting | finished."""
        if self.ended:
            return "finished"
        if self.paused or self.waiting:
            return "waiting"
        return "queued" if self.status == "queued" else "running"

    @property
    def delivery_status(self) -> str:
        return self.completion.status if self.completion is not None else "pending"

    @property
    def owes_completion(self) -> bool:
        return self.completion is None or self.completion.status in (
            Completion.PENDING,
            Completion.SESSION_QUEUED,
        )

    @property
    def updated_at(self) -> datetime:
        return self.latest.finished_at or self.latest.started_at or self.latest.created_at


def tasks_of(session_key: str, *, since: datetime | None = None) -> list[Task]:
    """The tasks `session_key` spawned, newest first: all in flight, and (with `since`) those that
    ended after it."""
    runs = list(
        Run.objects.filter(kind="spawn", requester_key=session_key)
        .select_related("session")
        .order_by("-created_at")[:500]
    )
    return [t for t in build(runs) if since is None or not t.ended or t.updated_at >= since]


def build(spawn_runs: list[Run]) -> list[Task]:
    """Tasks for spawn runs, with their latest turns and completions (three queries)."""
    if not spawn_runs:
        return []
    session_ids = [r.session_id for r in spawn_runs]
    latest: dict[int, Run] = {}
    for turn in Run.objects.filter(session_id__in=session_ids).order_by("session_id", "created_at"):
        latest[turn.session_id] = turn
    completions = {
        c.task_run_id: c
        for c in Completion.objects.filter(task_run__in=spawn_runs)
        .select_related("child_run")
        .order_by("created_at")
    }
    return [
        Task(
            run=r,
            session=r.session,
            latest=latest.get(r.session_id, r),
            completion=completions.get(r.pk),
        )
        for r in spawn_runs
    ]


def task_by_id(session_key: str, task_id: str) -> Task | None:
    """One of `session_key`'s tasks, by its id (the spawn run's id), its child session key, or
    its taskName (exact, else an unambiguous prefix, among the tasks in flight or ended within
    the last RECENT_MINUTES: 9.6 §4.4)."""
    runs = Run.objects.filter(kind="spawn", requester_key=session_key).select_related("session")
    found = runs.filter(session__key=task_id).order_by("-created_at").first()
    if found is None:
        try:
            found = runs.filter(pk=uuid.UUID(task_id)).first()
        except ValueError:  # not a key nor a run id: perhaps a taskName
            return task_by_name(session_key, task_id)
    tasks = build([found]) if found is not None else []
    return tasks[0] if tasks else None


# The children a taskName is looked up among: those in flight, and those ended this recently
# (subagents list's default window).
RECENT_MINUTES = 30


def task_by_name(session_key: str, name: str) -> Task | None:
    found = tasks_named(session_key, name)
    return found[0] if len(found) == 1 else None


def tasks_named(session_key: str, name: str) -> list[Task]:
    """The recent tasks `name` designates: the newest with exactly that taskName (a name reused
    later points at the later task), else the newest of each taskName it is a prefix of (more
    than one: ambiguous)."""
    named = [t for t in tasks_of(session_key, since=recent_since(RECENT_MINUTES)) if t.task_name]
    exact = [t for t in named if t.task_name == name]
    if exact:
        return exact[:1]
    prefixed = {t.task_name: t for t in reversed(named) if t.task_name.startswith(name)}
    return sorted(prefixed.values(), key=lambda t: t.task_name)


def recent_since(minutes: int) -> datetime:
    return timezone.now() - timedelta(minutes=minutes)


def owed_by_turn(turn: Run) -> list[Task]:
    """Children `turn` spawned whose completion is still owed."""
    runs = list(Run.objects.filter(parent_run=turn, kind="spawn").select_related("session"))
    return [t for t in build(runs) if t.owes_completion]


def owed_by_earlier_turns(session_key: str, turn: Run) -> list[Task]:
    """Children the session's other turns spawned whose completion is still owed."""
    runs = list(
        Run.objects.filter(kind="spawn", requester_key=session_key)
        .exclude(parent_run=turn)
        .select_related("session", "parent_run")
        .order_by("created_at")[:200]
    )
    return [t for t in build(runs) if t.owes_completion]
