"""Running agent turns: start (in the caller's transaction), execute (on a worker), finish, follow up.

A run's input message is appended when the run is created, in the same transaction, so a
redelivered task can never append it twice; the reply is appended in the transaction that moves
the run from running to ok, guarded by that conditional update, so it is stored exactly once and
never after an abort or a timeout. Follow-up steps (ping-pong, announce, sub-agent report) are new
runs created in that same transaction, enqueued after commit.
"""

from __future__ import annotations

import contextvars
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Protocol, TypeVar

from django.conf import settings
from django.db import (
    DatabaseError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.utils import timezone

from openclaw_common import taskqueue
from openclaw_common.errors import ToolError

from .. import send_modes, state_log, store, transcript
from ..lib import rawsql
from ..models import Agent, Run, Session
from ..storage import cold_storage
from . import completions, flows, lanes, notify, outage
from .backends import BackendError, TurnAborted, TurnInput, TurnOutput, get_backend
from .backends.base import ToolSpec
from .chain import Chain, current_turn_messages, turn_notes
from .flow_state import Flow, FollowUp

log = logging.getLogger("openclaw.runs")

TASK = "sessions_app.runs.tasks.execute_run"
# Called after a run of a session that asked to be archived once the run ended.
ARCHIVE_SCHEDULED = "sessions_app.manage.session_admin.archive_scheduled"
# A running run's worker stamps heartbeat_at this often; runs/watchdog.py reads it.
HEARTBEAT_SECONDS = getattr(settings, "RUN_HEARTBEAT_SECONDS", 2)
ABORT_CHECK_SECONDS = 0.5
CONTEXT_MESSAGES = 50


# --- starting ---------------------------------------------------------------------------------


def enqueue(run: Run) -> None:
    lanes.enqueue(run)


def start_run(
    *,
    session: Session,
    kind: str,
    message: str | None,
    chain: Chain,
    provenance: dict | None = None,
    requester_key: str = "",
    requester_channel: str = "",
    extra_system_prompt: str = "",
    parent_run: Run | None = None,
    flow: Flow | None = None,
    timeout_seconds: int = 0,
    model: str = "",
    label: str = "",
    idempotency_key: str = "",
    deliver: bool = False,
    serial: bool = False,
    task_run: Run | None = None,
    sender_is_owner: bool = False,
    sandboxed: bool = False,
) -> Run:
    """Append the input message and create a queued run; the task is enqueued after commit.

    `message` None means the input is already in the transcript (ingest with run=true).
    `flow`: what the run's follow-ups need (flow_state.Flow). `serial`: the run waits for the
    session's older runs in flight, and its input is appended when it starts (lanes.py).
    `task_run`: the sub-agent task this turn continues. `sender_is_owner`: the input came from
    the gateway's owner (owner_turn() below). `sandboxed`: a sandboxed key asked for it; a run
    its parent_run was sandboxed is too (Run.sandboxed).
    """
    assert transaction.get_connection().in_atomic_block, "start_run needs the caller's transaction"
    input_seq: int | None
    if serial:
        input_seq = None  # appended when the run starts (lanes.start_serial)
        session.show_run_queued()
    elif message is not None:
        input_seq = store.append_run_input(session, message, provenance=provenance)
    else:
        input_seq = session.last_seq or None
        session.show_run_queued()
    now = timezone.now()
    run = Run.objects.create(
        lane=Run.SUBAGENT_LANE if session.spawn_depth > 0 else Run.MAIN_LANE,
        serial=serial,
        input_provenance=provenance if serial else None,
        task_run=task_run,
        session=session,
        kind=kind,
        requester_key=requester_key,
        requester_channel=requester_channel,
        parent_run=parent_run,
        idempotency_key=idempotency_key,
        message=message or "",
        extra_system_prompt=extra_system_prompt,
        model=model,
        label=label,
        flow=flow.to_json() if flow is not None else {},
        deliver=deliver,
        timeout_seconds=timeout_seconds,
        deadline=now + timedelta(seconds=timeout_seconds) if timeout_seconds else None,
        input_seq=input_seq,
        created_at=now,
        sender_is_owner=sender_is_owner,
        sandboxed=sandboxed or (parent_run is not None and parent_run.sandboxed),
        **chain.as_fields(),
    )
    followups = _followups.get()
    # Committed, never before: a rolled-back start leaves nothing to run.
    if followups is not None:
        taskqueue.after_commit(followups.append, run)
    else:
        taskqueue.after_commit(enqueue, run)
    return run


# Runs started while a worker task finishes a run (reply steps, announces, reports) are collected
# here and executed by the same task, one after another, while it is younger than
# FOLLOW_UP_INLINE_SECONDS; later ones are enqueued. That saves each follow-up a trip through the
# broker and the cluster (about a tenth of a worker's CPU per run) and keeps the task well within
# django-q's timeout. If the process dies first, the sweeper re-enqueues what stayed queued.
_followups: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "openclaw_followups", default=None
)
FOLLOW_UP_INLINE_SECONDS = 5


# --- executing (the django-q2 task) -------------------------------------------------------------


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Heartbeat:
    """Stamps heartbeat_at every few seconds from a thread while the turn runs, so the sweeper can
    tell a slow model call from a dead worker. Dies with the process, which is the point."""

    def __init__(self, run_id: uuid.UUID) -> None:
        self.run_id = run_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat-{run_id}")

    def _beat(self) -> None:
        watch = outage.Watch()
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                try:
                    Run.objects.filter(pk=self.run_id, status=Run.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                    watch.ok()
                except DatabaseError as exc:
                    # A missed beat, not a dead heart: beat again once the database is back.
                    if not outage.is_connection_lost(exc):
                        raise
                    watch.skipped(exc)
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=HEARTBEAT_SECONDS + 1)


def execute_run(run_id: str, lane: str = Run.MAIN_LANE) -> str:
    """Execute one run, then the follow-up runs it started (see _followups). Safe to call twice
    (a redelivered task): only a queued run is claimed."""
    started = time.monotonic()
    if not connection.in_atomic_block:  # (tests run tasks inside their transaction)
        close_old_connections()
    pending: list[Run] = []
    token = _followups.set(pending)
    try:
        outcome = _execute_one(run_id, lane)
        while pending and time.monotonic() - started < FOLLOW_UP_INLINE_SECONDS:
            follow_up = pending.pop(0)
            _execute_one(follow_up, follow_up.lane)
    finally:
        _followups.reset(token)
        for later in pending:  # past the budget, or after an error: a task each, as usual
            try:
                enqueue(later)
            except Exception:  # the sweeper re-enqueues runs that stay queued
                log.warning("could not enqueue follow-up run %s", later.pk, exc_info=True)
    return outcome


_RUN = rawsql.ModelColumns(Run, "r")
_SESSION = rawsql.ModelColumns(Session, "s")
_AGENT = rawsql.ModelColumns(Agent, "a")


def _run_with_session(run_id: uuid.UUID | str) -> Run:
    """`Run.objects.select_related("session", "session__agent").get(pk=run_id)` as one plain
    join (rawsql: every task reads it, and the queryset's three-model compile was a third of
    its cost). Raises Run.DoesNotExist."""
    found = rawsql.fetchall(
        f"SELECT {_RUN.sql}, {_SESSION.sql}, {_AGENT.sql} FROM {rawsql.table(Run)} r"
        f" JOIN {rawsql.table(Session)} s ON s.id = r.session_id"
        f" JOIN {rawsql.table(Agent)} a ON a.id = s.agent_id WHERE r.id = %s",
        [rawsql.prep(Run, "id", run_id)],
    )
    if not found:
        raise Run.DoesNotExist(f"Run {run_id} does not exist")
    row = found[0]
    run = _RUN.build(row[: len(_RUN)])
    session = _SESSION.build(row[len(_RUN) : len(_RUN) + len(_SESSION)])
    Session.agent.field.set_cached_value(session, _AGENT.build(row[len(_RUN) + len(_SESSION) :]))
    Run.session.field.set_cached_value(run, session)
    return run


def _execute_one(run: Run | str, lane: str) -> str:
    """Claim and execute one run, given by id (a task) or as the Run a finishing transaction
    created moments ago (a follow-up: its row and its session's are as that transaction left
    them, so they are not read again). A run that may not start yet (lanes.py) is deferred."""
    run_id = run.pk if isinstance(run, Run) else run
    claimed_at = lanes.claim(run_id, worker=worker_name(), lane=lane)
    if not claimed_at:
        if not lanes.defer(run_id):
            return "skipped"  # not queued: done, or another worker has it
        # A finish may have committed between the claim and the mark, and missed the mark:
        # one more try, now that whoever finishes next will see it.
        claimed_at = lanes.claim(run_id, worker=worker_name(), lane=lane)
        if not claimed_at:
            return "deferred"
    if isinstance(run, Run):
        run.set_claimed(claimed_at, worker=worker_name())
    else:
        run = _run_with_session(run_id)
    if lane == Run.SUBAGENT_LANE:
        # A sub-agent started: its parent's live followers hear it (live/hub.py).
        Session.objects.update_changed([run.session_id], "run")
    if run.serial:
        lanes.start_serial(run)
    if run.deadline and timezone.now() >= run.deadline:
        finish_run(run, Run.TIMEOUT, error=timeout_text(run))
        return Run.TIMEOUT
    try:
        with Heartbeat(run.pk):
            output = run_turn(run)
    except TurnAborted as exc:
        if str(exc) == "timeout":
            finish_run(run, Run.TIMEOUT, error=timeout_text(run))
            return Run.TIMEOUT
        return Run.ABORTED  # the abort already finished the run
    except BackendError as exc:
        finish_run(run, Run.ERROR, error=str(exc) or "agent error")
        return Run.ERROR
    except outage.DatabaseUnreachable as exc:
        return fail_after_outage(run, str(exc))
    except Exception as exc:  # a bug must end the run, not leave it running for the sweeper
        log.exception("run %s failed", run_id)
        finish_run(run, Run.ERROR, error=f"internal error: {type(exc).__name__}: {exc}")
        return Run.ERROR
    try:
        return complete_run(run, output)
    except outage.DatabaseUnreachable as exc:
        return fail_after_outage(run, str(exc))
    except Exception as exc:  # never leave a run "running" for the sweeper to misreport
        log.exception("finishing run %s failed", run_id)
        finish_run(
            run, Run.ERROR, error=f"the run could not be finished: {type(exc).__name__}: {exc}"
        )
        return Run.ERROR


# Runs this process ended for a database outage but could not write so, the database being
# still away: run id → (run, error). The process's watchdog writes them once it answers.
_unwritten_ends: dict[uuid.UUID, tuple[Run, str]] = {}
_unwritten_lock = threading.Lock()


class RunTools(Protocol):
    """What a turn needs of the tools (tools/offer.py): the schemas it is offered and a call."""

    def specs_for(self, run: Run) -> list[ToolSpec]: ...

    def call_tool(self, run: Run, name: str, arguments: dict) -> dict: ...


class Harnesses(Protocol):
    """What a turn needs of the ACP runtime (acp/runtime.py): a harness instead of a model."""

    def is_acp_session(self, key: str) -> bool: ...

    def run_turn(self, run: Run, *, check_abort: Callable[[], None]) -> TurnOutput: ...


@dataclass(frozen=True)
class Installed:
    tools: RunTools
    harnesses: Harnesses


_installation: Installed | None = None


def install(*, tools: RunTools, harnesses: Harnesses) -> None:
    """Hand the engine the tools and the ACP runtime, which sit above it (they start runs
    themselves): the app does it once at start (apps.ready), in every process."""
    global _installation
    _installation = Installed(tools=tools, harnesses=harnesses)


def _installed() -> Installed:
    if _installation is None:
        raise RuntimeError("the run engine has no tools: SessionsAppConfig.ready() installs them")
    return _installation


def fail_after_outage(run: Run, error: str) -> str:
    """End `run` as error with `error` (the outage that outlasted RUN_DB_OUTAGE_SECONDS). The
    finish waits out the bound once more; if the database is still away, the ending is kept
    for write_unwritten_ends, so the run does not sit "running" until a watchdog ends it as a
    dead worker's, the false reason (issue 16 item 11)."""
    try:
        finish_run(run, Run.ERROR, error=error)
    except outage.DatabaseUnreachable:
        log.warning("run %s ended (%s); written when the database is back", run.pk, error)
        with _unwritten_lock:
            _unwritten_ends[run.pk] = (run, error)
    return Run.ERROR


def write_unwritten_ends() -> int:
    """The endings fail_after_outage could not write, written now (the watchdog calls this as
    soon as the database answers). One that fails again is kept for the next call."""
    with _unwritten_lock:
        pending = list(_unwritten_ends.values())
    written = 0
    for run, error in pending:
        written += finish_run(run, Run.ERROR, error=error)  # raises while the database is away
        with _unwritten_lock:
            _unwritten_ends.pop(run.pk, None)
    return written


def timeout_text(run: Run) -> str:
    return f"run timed out after {run.timeout_seconds}s (runTimeoutSeconds)"


def run_turn(run: Run) -> TurnOutput:
    # Runs the turn's own tool calls start (sessions_send, sessions_spawn) are enqueued at once,
    # to run beside this one: only the finishing transaction's follow-ups wait for this task.
    token = _followups.set(None)
    notes: dict[str, str] = {}
    notes_token = turn_notes.set(notes)
    try:
        output = _run_turn(run)
    finally:
        turn_notes.reset(notes_token)
        _followups.reset(token)
    if run.yielded and notes.get("acknowledgment"):
        # sessions_yield's waiting reply (9.6 §1.7): the turn's last words.
        output.messages.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": notes["acknowledgment"]}],
                "stopReason": "stop",
            }
        )
    return output


def _run_turn(run: Run) -> TurnOutput:
    session = run.session
    harnesses = _installed().harnesses
    if harnesses.is_acp_session(session.key):
        # An ACP harness, not a model: it streams into the transcript itself (docs/acp.md).
        return harnesses.run_turn(run, check_abort=abort_checker(run))
    # The turn's reads ride out a database outage as its writes do (issue 16 item 11): the
    # worker claimed the run a moment ago, and a restart now must not end it.
    turn = outage.through_outage(partial(_turn_input, run))
    # sessions_spawn context="fork" from this turn copies what it has said so far.
    progress_token = current_turn_messages.set(turn.progress)
    try:
        return get_backend(turn.backend).run(
            turn,
            call_tool=partial(_installed().tools.call_tool, run),
            check_abort=abort_checker(run),
        )
    finally:
        current_turn_messages.reset(progress_token)


def _turn_input(run: Run) -> TurnInput:
    """What the model is given: reads only, but one of them consumes the notifications, in one
    statement (so trying again after a lost connection neither loses nor repeats them)."""
    session = run.session
    agent: Agent = session.agent
    # sessions_send mode=notify queued these for this turn (9.6 §4.3): context, not a request.
    notes = send_modes.take_notifications(session.pk)
    extra_system_prompt = "\n\n".join(p for p in (run.extra_system_prompt, notes) if p)
    return TurnInput(
        session_key=session.key,
        agent_id=agent.id,
        kind=run.kind,
        model=run.model or session.model,
        backend=agent.backend or {"type": "scripted"},
        messages=recent_messages(session, up_to=run.input_seq),
        extra_system_prompt=extra_system_prompt,
        tools=_installed().tools.specs_for(run),
    )


def owner_turn(run: Run) -> bool:
    """Whether the turn's input came from the gateway's owner (9.6's owner/interactive gate):
    the run says so (an operator key's send, an ingested senderIsOwner message), and it is not
    a sub-agent's turn, whose input is its parent's, whoever started the parent."""
    return run.sender_is_owner and run.session.spawn_depth == 0


def session_tool_overrides(session: Session) -> dict | None:
    """sessions.patch `toolOverrides` ({allow?, deny?}): narrows this session's tools."""
    overrides = (session.extra or {}).get("toolOverrides")
    return overrides if isinstance(overrides, dict) else None


def recent_messages(session: Session, *, up_to: int | None) -> list[dict]:
    """The transcript the turn sees: up to and including its own input message, so a turn never
    answers what another run appended to the same session after it was started."""
    cold_storage.ensure_hot(
        session
    )  # a message sent to a cold session: the turn sees its whole history
    return transcript.context_messages(session.pk, up_to=up_to, limit=CONTEXT_MESSAGES)


def abort_checker(run: Run) -> Callable[[], None]:
    # The run was claimed (queued → running) just before the turn started: the first check
    # within ABORT_CHECK_SECONDS of that needs no query.
    state = {"checked": time.monotonic()}
    watch = outage.Watch()

    def check_abort() -> None:
        if run.deadline and timezone.now() >= run.deadline:
            raise TurnAborted("timeout")
        now = time.monotonic()
        if now - state["checked"] < ABORT_CHECK_SECONDS:
            return
        state["checked"] = now
        try:
            status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        except DatabaseError as exc:
            # The database is away for a moment: the turn goes on, and is checked again
            # when it is back (outage.py). Past the bound, the run ends saying so.
            if watch.skipped(exc):
                return
            raise outage.DatabaseUnreachable(
                outage.reason(exc, outage.bound_seconds(), outage.DURING_TURN)
            ) from exc
        watch.ok()
        if status != Run.RUNNING:
            raise TurnAborted("aborted")

    return check_abort


# --- finishing --------------------------------------------------------------------------------

RETRIES = 5
T = TypeVar("T")


def retrying(operation: Callable[[], T]) -> T:
    """Run a finishing transaction again when the database refuses it for contention.

    Follow-ups lock a second session (the requester's, for a reply step) while another run's
    follow-up may lock the two the other way round; PostgreSQL then aborts one transaction with
    "deadlock detected" (SQLite: "database is locked" past the busy timeout). The transaction
    rolled back whole, so doing it again is safe.
    """
    for attempt in range(RETRIES):
        try:
            # A lost connection is waited out (outage.py); contention is tried again here.
            return outage.through_outage(operation)
        except OperationalError as exc:
            if attempt == RETRIES - 1 or not outage.is_contention(exc):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def lock_sessions(run: Run) -> dict[str, Session]:
    """Lock every session this finish may write (its own, and the flow's requester and target,
    where follow-up steps go) in primary-key order, so two finishing runs can never lock the
    same two sessions the other way round (a PostgreSQL deadlock).

    Returns them by key, read under the lock, so the follow-ups need no lookup, and makes the
    fresh row the run's session (keeping its loaded agent)."""
    flow = Flow.from_json(run.flow)
    wanted = [k for k in (flow.requester, flow.target) if k]
    # A raw query (see rawsql): no queryset to build, the model's own column conversions.
    # SQLite has no FOR UPDATE: its IMMEDIATE transactions serialise writers, so nothing moves
    # under us there either.
    sql = f"SELECT * FROM {rawsql.table(Session)} WHERE id = %s"
    if wanted:
        sql += f" OR {rawsql.column('key')} IN ({', '.join(['%s'] * len(wanted))})"
    sql += " ORDER BY id"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    sessions = {s.key: s for s in Session.objects.raw(sql, [run.session_id, *wanted])}
    if Run.session.is_cached(run) and Session.agent.is_cached(run.session):
        agent = run.session.agent
        for session in sessions.values():
            if session.agent_id == agent.pk:
                Session.agent.field.set_cached_value(session, agent)
    run.session = next(s for s in sessions.values() if s.pk == run.session_id)
    return sessions


def complete_run(run: Run, output: TurnOutput) -> str:
    """Store the reply and finish as ok, exactly once; discard it if the run was aborted meanwhile."""
    try:
        [store.read_message(i, m) for i, m in enumerate(output.messages)]
    except ToolError as exc:
        finish_run(
            run, Run.ERROR, error=f"the agent backend returned an invalid message: {exc.message}"
        )
        return Run.ERROR

    def store_reply() -> str:
        # Messages are rebuilt on each attempt: a rolled-back attempt may have given them seqs.
        messages = [store.read_message(i, m) for i, m in enumerate(output.messages)]
        with transaction.atomic():
            sessions = lock_sessions(run)
            usage = output.usage or None
            if not store.finish_run_with_reply(run, messages, reply=output.reply, usage=usage):
                return "discarded"
            record_run_end(run, Run.OK)
            # Before after_finish(): on-commit callbacks run in order, so the waiter's hint goes
            # out before the follow-up runs are enqueued.
            taskqueue.after_commit(notify.run_finished, run.id)
            after_finish(run, sessions)
        return Run.OK

    return retrying(store_reply)


def finish_run(run: Run, status: str, *, error: str = "") -> bool:
    """End a run that produced no reply (error, timeout, aborted) and run its follow-ups."""

    def finish() -> bool:
        with transaction.atomic():
            sessions = lock_sessions(run)
            if not run.mark_finished(status, error=error):
                return False
            record_run_end(run, status, error=error)
            taskqueue.after_commit(notify.run_finished, run.id)
            after_finish(run, sessions)
        return True

    return retrying(finish)


# A finished run in the state log's words (9.6 §2.2 payload.outcome).
_OUTCOMES = {Run.ERROR: "error", Run.TIMEOUT: "timeout", Run.ABORTED: "cancelled"}


def record_run_end(run: Run, status: str, *, error: str = "") -> None:
    """`run_completed` / `run_failed` in the session's state log, in the finishing transaction
    (which holds the session's lock)."""
    ok = status == Run.OK
    outcome = "completed" if ok else _OUTCOMES.get(status, "error")
    state_log.record(
        run.session_id,
        "run_completed" if ok else "run_failed",
        actor_type="agent",
        actor_id=run.session.agent_id,
        run_id=run.id,
        summary=f"Run {run.kind} {outcome}" + (f": {error}" if error and not ok else ""),
        payload=None if ok else {"outcome": outcome},
    )


def abort_run(run: Run) -> bool:
    """Abort a queued or running run (the worker notices within half a second)."""
    return finish_run(run, Run.ABORTED, error="aborted")


def start_follow_up(follow_up: FollowUp) -> Run:
    """Start a run flows.py or completions.py asked for (in the caller's transaction)."""
    run = start_run(**follow_up.start_run_arguments())
    completions.mark_carried(run)
    return run


def after_finish(run: Run, sessions: dict[str, Session]) -> None:
    """Follow-up steps, in the finishing transaction (so they are never lost between steps):
    flows says which runs to start next, in order, and this starts them; then the runs this
    finish lets start (lanes.kick) go after them."""
    for follow_up in flows.after_finish(run, sessions):
        start_follow_up(follow_up)
    for ready in lanes.kick(run, run.session):
        followups = _followups.get()
        if followups is not None:
            taskqueue.after_commit(followups.append, ready)
        else:
            taskqueue.after_commit(enqueue, ready)
    if (run.session.extra or {}).get("archiveAfterRun"):
        # The session archived itself during this run (the sessions tool defers it). Managing
        # sessions is above the engine (archiving stops runs), so it is named, not imported.
        taskqueue.call_after_commit(ARCHIVE_SCHEDULED, run.session_id)
