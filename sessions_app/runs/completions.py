"""A sub-agent's result back to its requester as a turn of its own (9.6 §1.2–1.6;
docs/orchestration.md, "The completion path").

When a sub-agent task ends (its last turn finishes, any outcome, without yielding), the finishing
transaction writes a Completion and, unless something says otherwise, the requester's completion
turn: a serial run (lanes.py) in the requester's session whose input is 9.6's completion message.
So the result is never lost between the child's finish and the parent's turn, and a busy parent
gets it after its current turn. Like flows.py, this module never starts runs itself: it returns
FollowUp values and the engine (or the sweep) starts them.

- A requester that yielded for a batch of children gets **one** successor turn once the whole
  batch has settled, carrying every result (9.6 §1.7).
- A nested requester (itself a sub-agent) gets the turn as internal (its reply is not
  delivered); a requester that is gone (archived, deleted) hands it to its own requester.
- `expectsCompletionMessage: false` → not_applicable; a child whose final reply is exactly
  ANNOUNCE_SKIP → delivered (suppressed); a Stop or `subagents cancel` of the requester's tree
  → dismissed.
- A completion turn that fails (error, timeout) is tried again with backoff (15 s doubling to
  5 min, ±20 %) for 30 minutes after the child ended, then the completion is `failed` with the
  last error: visible in the admin and in `subagents list`, never silent.
"""

from __future__ import annotations

import contextvars
import math
import random
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from ..delivery import enqueue_delivery
from ..models import Completion, GatewayConfig, Run, Session
from . import prompts, webhooks
from .backends import ANNOUNCE_SKIP
from .chain import requester_chain
from .flow_state import COMPLETION, SPAWN, Flow, FollowUp
from .provenance import inter_session
from .subagent_tasks import Task
from .tokens import is_silent

RETRY_WINDOW_SECONDS = 30 * 60
FIRST_BACKOFF_SECONDS = 15
MAX_BACKOFF_SECONDS = 300

# Set while control.py stops a tree: the completions of the runs it ends are dismissed (the
# requester asked for the stop, or is being stopped itself).
dismissing: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "openclaw_dismissing_completions", default=None
)


def outcome_of(run: Run, flow: Flow) -> dict:
    """How the task ended, as the completion message and `subagents` show it. The result is the
    child's last visible assistant text (9.6: tool output is never promoted; a failure replays
    nothing; NO_REPLY is no output)."""
    reply = run.reply.strip() if run.status == Run.OK else ""
    if is_silent(reply, "NO_REPLY"):
        reply = ""
    return {
        "status": run.status,
        "error": run.error,
        "result": reply or prompts.NO_OUTPUT,
        "runtimeMs": run.runtime_ms,
        "usage": run.usage or {},
        "label": flow.label or "",
        "task": flow.task or "",
    }


def receiver(key: str, known: dict[str, Session]) -> Session | None:
    """The session a completion for `key` goes to: `key`'s, or, when that one is gone
    (archived or deleted), its own requester's, and so on up."""
    seen: set[str] = set()
    while key and key not in seen:
        seen.add(key)
        session = known.get(key) or Session.objects.filter(key=key).first()
        if session is None:
            return None
        if not session.archived:
            return session
        key = session.spawned_by
    return None


def task_ended(run: Run, flow: Flow, known: dict[str, Session]) -> list[FollowUp]:
    """In the finishing transaction of a sub-agent task's last turn: write its Completion and
    say which requester turn to start, if any."""
    return _owed(run, flow, outcome_of(run, flow), known)


def task_stopped(task: Task, reason: str) -> list[FollowUp]:
    """A task that waited (for its children, or paused) with no run in flight was stopped: it
    ends as cancelled. Call in a transaction."""
    flow = Flow.from_json(task.latest.flow)
    # No run changes here: mark the child changed so its parent's live followers hear it.
    Session.objects.update_changed([task.session.pk], "run")
    outcome = {
        **outcome_of(task.latest, flow),
        "status": Run.ABORTED,
        "error": reason,
        "result": prompts.NO_OUTPUT,
    }
    return _owed(task.latest, flow, outcome, {})


def _owed(run: Run, flow: Flow, outcome: dict, known: dict[str, Session]) -> list[FollowUp]:
    session = receiver(flow.requester or "", known)
    webhooks.finished(run, kind="spawn", requester=session, task_run=run.task_run or run)
    completion = Completion.objects.create(
        child_run=run,
        task_run_id=run.task_run_id or run.pk,
        child_session=run.session,
        requester_key=session.key if session is not None else flow.requester or "",
        outcome=outcome,
        private=flow.completion_target == "parent",
    )
    reason = dismissing.get()
    if reason:
        completion.dismiss(reason)
        return []
    if flow.expects_completion is False:
        return _settle(completion, Completion.NOT_APPLICABLE, "expectsCompletionMessage: false")
    if outcome["status"] == Run.OK and run.reply.strip() == ANNOUNCE_SKIP:
        completion.mark_delivered(note="the child answered ANNOUNCE_SKIP")
        return []
    if session is None:
        return _settle(completion, Completion.PARENT_MISSING, "no requester session is left")
    batch = open_batch(completion.task_run)
    if batch is None:
        return [completion_turn([completion], session)]
    Completion.objects.filter(pk=completion.pk).update(batch_run=batch)
    completion.batch_run = batch
    return settle_batch(batch, session)


def _settle(completion: Completion, status: str, note: str) -> list[FollowUp]:
    Completion.objects.filter(pk=completion.pk).update(status=status, last_error=note)
    completion.status = status
    # A quiet or orphaned child still belongs to its batch: the batch may now be complete.
    batch = open_batch(completion.task_run)
    session = receiver(completion.requester_key, {})
    if batch is None or session is None:
        return []
    Completion.objects.filter(pk=completion.pk).update(batch_run=batch)
    return settle_batch(batch, session)


def open_batch(task_run: Run) -> Run | None:
    """The yielded turn that spawned this task, while its batch waits to settle."""
    # Read now, under the requester's row lock (sessions_yield takes it too), not from a row
    # loaded before it: the yield may have committed meanwhile.
    if task_run.parent_run_id is None:
        return None
    spawning = Run.objects.filter(
        pk=task_run.parent_run_id, yielded=Run.YIELDED_FOR_CHILDREN
    ).first()
    if spawning is None:
        return None
    if Run.objects.filter(parent_run=spawning, kind="completion").exists():
        return None  # already settled: its successor turn exists
    return spawning


def settle_batch(batch: Run, session: Session) -> list[FollowUp]:
    """The successor turn of a yielded turn once every child it spawned has ended; nothing
    while some are still going."""
    tasks = list(Run.objects.filter(parent_run=batch, kind="spawn").values_list("pk", flat=True))
    ended = Completion.objects.filter(task_run_id__in=tasks)
    if ended.count() < len(tasks):
        return []
    carried = list(ended.filter(status=Completion.PENDING).select_related("child_session"))
    flow = Flow.from_json(batch.flow)
    if not carried and flow.type != SPAWN:
        return []  # nothing to report, and no task waits on this turn
    return [completion_turn(carried, batch.session, settles=batch)]


def completion_turn(
    completions: list[Completion], session: Session, *, settles: Run | None = None
) -> FollowUp:
    """The requester's turn that carries `completions` (one child, or a settled batch; the
    engine marks them queued once it exists: mark_carried). `settles`: the yielded turn this
    succeeds (a sub-agent's task continues in it)."""
    config = GatewayConfig.load()
    private = any(c.private for c in completions)
    nested = session.spawn_depth > 0
    if private:
        instruction = prompts.INSTRUCTION_PRIVATE
    elif nested:
        instruction = prompts.INSTRUCTION_NESTED
    else:
        instruction = prompts.INSTRUCTION_TOP_LEVEL
    children = [(c.child_session.key, c.child_session.session_id, c.outcome) for c in completions]
    settles_flow = Flow.from_json(settles.flow) if settles is not None else None
    message = prompts.completion_message(
        children,
        instruction=instruction,
        stats=not private,
        settle=settles is not None,
        note=settles_flow.yield_note or "" if settles_flow is not None else "",
    )
    first = completions[0] if completions else None
    child_run = first.child_run if first is not None else settles
    assert child_run is not None
    attempt = max((c.attempts for c in completions), default=0) + 1
    key = f"announce:v1:{first.child_session.key}:{first.child_run_id}" if first else ""
    continues_task = settles_flow is not None and settles_flow.type == SPAWN
    follow_up = FollowUp(
        session=session,
        kind="completion",
        message=message,
        chain=requester_chain(_spawner(session, first, settles), session.agent_id),
        provenance=inter_session(
            first.child_session.key if first else session.key,
            "subagent_settle" if settles is not None else "subagent_announce",
            channel="internal",
        ),
        requester_key=first.child_session.key if first else session.key,
        parent_run=settles or child_run,
        # A sub-agent that yielded goes on with its task in this turn: its end completes it.
        flow=settles_flow if continues_task else Flow(type=COMPLETION),
        task_run=(settles.task_run or settles) if continues_task and settles else None,
        timeout_seconds=max(1, math.ceil(_announce_timeout_ms(session, config) / 1000)),
        idempotency_key=key if attempt == 1 else f"{key}#{attempt}" if key else "",
        deliver=not private and not nested and config.completion_delivery != "report",
        serial=True,
    )
    return follow_up


def _spawner(session: Session, first: Completion | None, settles: Run | None) -> Run | None:
    """The requester's own run that spawned (or yielded for) these children, if it is still
    this session's (a completion that fell back to a grand-requester has none)."""
    if settles is not None:
        return settles
    spawner = first.task_run.parent_run if first is not None else None
    return spawner if spawner is not None and spawner.session_id == session.pk else None


def mark_carried(run: Run) -> None:
    """A completion turn was just created: the completions it carries are queued on it."""
    if run.kind != "completion":
        return
    children = _carried_by(run)
    for completion in children:
        completion.mark_queued(run)


def _carried_by(run: Run) -> list[Completion]:
    """The pending completions a new completion turn carries: its batch's, or its one child's
    (named by the turn's requester_key and parent run)."""
    if run.parent_run_id is None:
        return []
    parent = run.parent_run
    if parent is not None and parent.yielded == Run.YIELDED_FOR_CHILDREN:
        tasks = Run.objects.filter(parent_run=parent, kind="spawn")
        return list(Completion.objects.filter(task_run__in=tasks, status=Completion.PENDING))
    return list(
        Completion.objects.filter(child_run_id=run.parent_run_id, status=Completion.PENDING)
    )


def turn_finished(run: Run) -> None:
    """A completion turn ended: its completions are delivered, or tried again later, or failed
    once the retry window has closed; an ok reply goes to the requester's channel if the turn
    delivers."""
    carried = list(Completion.objects.filter(turn_run=run, status=Completion.SESSION_QUEUED))
    if run.status == Run.OK:
        for completion in carried:
            completion.mark_delivered()
        reply = run.reply.strip()
        if run.deliver and reply and not is_silent(reply, "NO_REPLY"):
            enqueue_delivery(session=run.session, text=reply, kind="reply", run=run)
        return
    if run.status == Run.ABORTED:
        for completion in carried:
            completion.dismiss(f"the requester's turn was aborted: {run.error or 'aborted'}")
        return
    now = timezone.now()
    for completion in carried:
        error = f"completion turn {run.status}: {run.error or run.status}"
        if completion.retry_window_closed(now, window_seconds=RETRY_WINDOW_SECONDS):
            completion.mark_failed(error)
        else:
            completion.retry_later(error, at=now + backoff(completion.attempts))


def backoff(attempts: int) -> timedelta:
    """15 s after the first failed attempt, doubling, at most 5 minutes, ±20 % (9.6 §1.6)."""
    base = min(FIRST_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS)
    return timedelta(seconds=base * random.uniform(0.8, 1.2))


def due_turns(now: datetime) -> list[FollowUp]:
    """The sweep's share: completions whose backoff is over get a new turn (one per batch or
    child); those past the retry window fail. Call in a transaction; start what it returns."""
    assert transaction.get_connection().in_atomic_block
    follow_ups: list[FollowUp] = []
    handled: set[int] = set()
    for completion in Completion.objects.due(now).select_related("child_session", "child_run"):
        if completion.pk in handled:
            continue
        if completion.retry_window_closed(now, window_seconds=RETRY_WINDOW_SECONDS):
            completion.mark_failed(completion.last_error or "no attempt succeeded in 30 minutes")
            continue
        session = receiver(completion.requester_key, {})
        if session is None:
            completion.mark_failed("no requester session is left")
            continue
        group = [completion]
        if completion.batch_run_id is not None:
            group = list(
                Completion.objects.filter(
                    batch_run_id=completion.batch_run_id, status=Completion.PENDING
                ).select_related("child_session", "child_run")
            )
        handled.update(c.pk for c in group)
        settles = completion.batch_run if completion.batch_run_id else None
        follow_ups.append(completion_turn(group, session, settles=settles))
    return follow_ups


def _announce_timeout_ms(session: Session, config: GatewayConfig) -> int:
    override = (session.agent.subagent_settings or {}).get("announceTimeoutMs")
    return int(override or config.announce_timeout_ms)


def absorb_into_batch(turn: Run) -> list[FollowUp]:
    """A turn yields for its children: those that already ended join its batch (their own
    completion turns, queued behind this very turn, are withdrawn unstarted), and if none is
    still going, the successor turn is due now. Call in a transaction."""
    for completion in Completion.objects.filter(
        task_run__parent_run=turn, status=Completion.SESSION_QUEUED
    ).select_related("turn_run"):
        own = completion.turn_run
        withdrawn = (
            own is not None
            and own.status == Run.QUEUED
            and own.mark_finished(Run.ABORTED, error="carried by the batch of a sessions_yield")
        )
        if withdrawn:
            Completion.objects.filter(pk=completion.pk).update(
                status=Completion.PENDING, turn_run=None
            )
    Completion.objects.filter(task_run__parent_run=turn, status=Completion.PENDING).update(
        batch_run=turn
    )
    session = receiver(turn.session.key, {})
    return settle_batch(turn, session) if session is not None else []
