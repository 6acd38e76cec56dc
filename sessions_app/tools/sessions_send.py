"""sessions_send (reference §4, api.md §1): message another session and optionally wait for its reply.

`start_send()` validates, resolves and starts the run in one transaction; the wait happens in async
code (`sessions_send_async`), holding no thread, and can be rejoined at /api/v1/runs/{id}/wait/.
A wait that times out leaves the run going; the reply loop and announce still happen.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from openclaw_common import keys, taskqueue
from openclaw_common.dbstep import db_step
from openclaw_common.errors import Forbidden, InvalidArgument, NotFound, Refusal
from policies_app.send_policy import check_send, send_blocked_error

from .. import send_modes, store
from ..access import visibility
from ..access.identity import Requester
from ..access.resolve import canonical_for, forbidden_text, resolve_session
from ..models import Agent, Completion, Run, Session
from ..runs import prompts
from ..runs.chain import Chain, current_run, next_hop
from ..runs.engine import start_run
from ..runs.flow_state import Flow
from ..runs.provenance import inter_session
from ..runs.tokens import is_silent
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from ..runs.wait import wait_for_run
from .declaration import Boolean, Choice, Declaration, Integer, String, Tool
from .shapes import BOOLEAN, DELIVERY, STRING, obj

DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 600
MAX_MESSAGE_CHARS = 100_000
DELIVERY_PENDING = {"status": "pending", "mode": "announce"}
DELIVERY_SKIPPED = {"status": "skipped", "mode": "announce"}
MODES = ("notify", "steer", "followup", "resume")
MESSAGE_ALIASES = ("SendMessage", "content", "text")
# Exact texts (9.6 §4.3).
STEER_IDLE = (
    "Target has no active run that accepts steering. Use mode=followup to start a new turn."
)
RESUME_ADMISSION_ONLY = (
    "mode=resume returns admission only; omit watch and timeoutSeconds or set "
    "timeoutSeconds=0. The task owner delivers completion."
)
RESUME_NOT_PARENT = "Task resume requires an admitted parent tool caller."
RESUME_NO_CHILD = "Task resume requires the existing, unarchived native child session."
MISSING_FOR_MODE = (
    "Cannot notify, steer, or resume a missing session. Use mode=followup to start a new turn."
)
SELF_TARGET = "sessions_send cannot target the calling session; use your own reply instead"
THREAD_TARGET = (
    "sessions_send cannot target a thread session for inter-agent coordination. Use the parent "
    "channel session key instead."
)
NO_REPLY_MESSAGE = "No visible reply or pending announcement. Continue or retry if needed."

DECLARATION = Declaration(
    name="sessions_send",
    policy=Policy(groups=(SESSIONS_GROUP,)),
    description=(
        "Send a message into another session and, unless timeoutSeconds is 0, wait for "
        "its reply. Returns {runId, status: accepted|ok|timeout|error|forbidden, reply?}. "
        "On timeout the run goes on; read sessions_history later."
    ),
    # `message` first: it is checked first, as it always was.
    params=(
        String("message", "The message to send.", max_length=MAX_MESSAGE_CHARS),
        String(
            "sessionKey",
            "Target session key or sessionId from sessions_list.",
            max_length=keys.MAX_KEY_LENGTH,
        ),
        String(
            "label", "Target session label (instead of sessionKey).", min_length=1, max_length=200
        ),
        String(
            "agentId",
            "Agent whose session has that label; alone (no sessionKey, no label), that agent's "
            "main session, created if missing.",
            min_length=1,
            max_length=64,
        ),
        Integer(
            "timeoutSeconds",
            f"Seconds to wait for the reply (default {DEFAULT_TIMEOUT_SECONDS}, at most "
            f"{MAX_TIMEOUT_SECONDS}; 0 = do not wait).",
            default=DEFAULT_TIMEOUT_SECONDS,
        ),
        Choice(
            "mode",
            "followup: a new or queued turn (never steers or resumes); steer: guidance into "
            "the target's active run (no wait); notify: context for the target's next turn, "
            "without waking it; resume: continue your paused sub-agent. Omitted: automatic.",
            choices={m: m for m in MODES},
            enum=MODES,
            describe="notify, steer, followup, or resume",
        ),
        Boolean(
            "watch",
            "After a successful dispatch, watch the target: its changes by others are noticed "
            "(result `watched`).",
        ),
        *(
            String(
                alias,
                "Alias of message (OpenClaw), used when message is blank.",
                advertised=False,
                max_length=MAX_MESSAGE_CHARS,
            )
            for alias in MESSAGE_ALIASES
        ),
    ),
    result=obj(
        {
            "runId": {"type": ["string", "null"]},
            "status": {
                "type": "string",
                "enum": ["accepted", "ok", "no_reply", "queued", "timeout", "error", "forbidden"],
            },
            "sessionKey": STRING,
            "reply": STRING,
            "error": STRING,
            "delivery": DELIVERY,
            "delivered": {
                "type": "boolean",
                "description": "The message is in the target's transcript.",
            },
            "sentBeforeError": BOOLEAN,
            "targetRun": obj(
                {
                    "status": STRING,
                    "startedAt": STRING,
                    "queuedSeconds": {"type": "number"},
                    "error": STRING,
                },
                ("status",),
                "What the target's run is doing, or why it failed.",
            ),
            "targetDisposition": {"type": "string", "enum": ["queued", "steered"]},
            "watched": BOOLEAN,
            "message": STRING,
            "notificationId": STRING,
            "durability": STRING,
            "runStarted": BOOLEAN,
            "mode": {"type": "string", "enum": ["resume"]},
            "taskRunId": STRING,
            "completion": {"type": "string", "enum": ["task"]},
        },
        ("runId", "status"),
    ),
)


@DECLARATION.arguments
@dataclass(frozen=True)
class SendArgs:
    message: str | None
    sessionKey: str | None
    label: str | None
    agentId: str | None
    timeoutSeconds: int
    mode: str | None
    watch: bool
    SendMessage: str | None
    content: str | None
    text: str | None
    raw: Mapping[str, Any]  # the arguments as sent (after camel())


@dataclass
class SendPlan:
    result: dict | None  # already decided (a refusal or an error): no run to wait for
    run_id: str | None = None
    session_key: str = ""  # display key of the target
    timeout: int = DEFAULT_TIMEOUT_SECONDS
    created: bool = False  # this call created the run (not an idempotent repeat)
    watched: bool | None = None  # set when the call passed `watch`


def _refused(message: str, *, status: str = "error", session_key: str | None = None) -> SendPlan:
    result: dict[str, Any] = {"runId": str(uuid.uuid4()), "status": status, "error": message}
    if session_key:
        result["sessionKey"] = session_key
    return SendPlan(result=result)


def resolve_label(requester: Requester, label: str, agent_id: str | None) -> Session:
    """The newest session with `label` of the requested agent (default: the requester's)."""
    policy = visibility.policy_for(requester)
    target_agent = keys.normalize_agent_id(agent_id) if agent_id else requester.agent_id
    if target_agent != requester.agent_id:
        if policy.restrict_to_spawned:
            raise Forbidden("Sandboxed sessions_send label lookup is limited to this agent")
        if not policy.a2a_enabled:
            raise Forbidden(
                "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true "
                "to allow cross-agent sends."
            )
        if not visibility.a2a_allowed(policy, requester.agent_id, target_agent):
            raise Forbidden("Agent-to-agent messaging denied by tools.agentToAgent.allow.")
    found = Session.objects.active().filter(agent_id=target_agent, label=label)
    if policy.restrict_to_spawned:
        found = found.filter(spawned_by=requester.session_key)
    session = found.order_by("-updated_at").first()
    if session is None:
        if policy.restrict_to_spawned:
            raise Forbidden("Session not visible from this sandboxed agent session.")
        raise NotFound(f"No session found with label: {label}")
    denied = visibility.check(
        policy, target_key=session.key, target_spawned_by=session.spawned_by, action="send"
    )
    if denied:
        raise Forbidden(denied)
    return session


def _message_of(a: SendArgs) -> str:
    """`message`, else its aliases (reference §4.1): the first that is not blank."""
    for name in ("message", *MESSAGE_ALIASES):
        value = getattr(a, name)
        if value:
            return value
    raise InvalidArgument("message required")


def _timeout_of(a: SendArgs) -> int:
    """The wait: steer never waits; resume only admits (a positive timeout or watch is a 400)."""
    if a.mode == "resume":
        asked = a.raw.get("timeoutSeconds") is not None and a.timeoutSeconds > 0
        if asked or a.watch:
            raise InvalidArgument(RESUME_ADMISSION_ONLY)
        return 0
    if a.mode == "steer":
        return 0
    return min(a.timeoutSeconds, MAX_TIMEOUT_SECONDS)


def _agent_main(requester: Requester, agent_id: str, mode: str | None) -> Session | SendPlan:
    """`agentId` alone targets `agent:<id>:main`, created if missing (9.6 §4.3)."""
    normalized = keys.normalize_agent_id(agent_id)
    if not Agent.objects.filter(pk=normalized).exists():
        return _refused(f"agent not found: {agent_id}")
    key = keys.main_session_key(normalized, requester.key_settings)
    shown = keys.display_key(key, requester.key_settings)
    if not Session.objects.filter(key=key).exists():
        if mode in ("notify", "steer", "resume"):
            return _refused(MISSING_FOR_MODE, session_key=shown)
        denied = forbidden_text(
            visibility.policy_for(requester), key, canonical=key, spawned_by="", action="send"
        )
        if denied:
            return _refused(denied, status="forbidden", session_key=shown)
        store.upsert_session(api_key=None, key=key, entry={})
    return resolve_session(requester, key, action="send")


def _target(requester: Requester, a: SendArgs) -> Session | SendPlan:
    """The session a send goes to, or the refusal."""
    raw_key, label, agent_id = a.sessionKey, a.label, a.agentId
    if raw_key and label:
        return _refused("Provide either sessionKey or label (not both).")
    if not raw_key and not label and not agent_id:
        return _refused("Either sessionKey or label is required")
    try:
        if raw_key:
            return resolve_session(requester, raw_key, action="send")
        if label:
            return resolve_label(requester, label, agent_id)
        assert agent_id is not None  # with neither sessionKey nor label, refused above
        return _agent_main(requester, agent_id, a.mode)
    except Refusal as exc:
        shown = (
            keys.display_key(canonical_for(requester, raw_key), requester.key_settings)
            if raw_key
            else None
        )
        if isinstance(exc, NotFound) and a.mode in ("notify", "steer", "resume"):
            return _refused(MISSING_FOR_MODE, session_key=shown)
        return _refused(exc.message, status=exc.status, session_key=shown)


def start_send(
    *, requester: Requester, args: dict[str, Any] | None, idempotency_key: str | None = None
) -> SendPlan:
    a = DECLARATION.read(args, SendArgs)
    message = _message_of(a)
    timeout = _timeout_of(a)
    session = _target(requester, a)
    if isinstance(session, SendPlan):
        return session
    shown = keys.display_key(session.key, requester.key_settings)
    refusal = _refusal(requester, session, timeout=timeout)
    if refusal:
        return _refused(refusal, session_key=shown)
    plan = _dispatch(requester, session, a, message, shown, timeout, idempotency_key)
    if a.raw.get("watch") is not None:
        # Registered only after a successful dispatch (9.6 §2.2); reported whenever asked.
        dispatched = plan.result is None or _dispatched(plan)
        plan.watched = bool(
            a.watch and dispatched and send_modes.watch(session, requester.session_key)
        )
        if plan.result is not None:
            plan.result["watched"] = plan.watched
    return plan


def _dispatched(plan: SendPlan) -> bool:
    return plan.result is not None and plan.result.get("status") in ("accepted", "queued")


def _refusal(requester: Requester, session: Session, *, timeout: int) -> str | None:
    """The 9.6 refusals of a resolved target (send policy, self, thread sessions)."""
    if not check_send(session).allowed:
        return send_blocked_error()
    if session.key == requester.session_key and timeout != 0:
        return SELF_TARGET
    if ":thread:" in session.key and session.key != requester.session_key:
        return THREAD_TARGET
    return None


def _dispatch(
    requester: Requester,
    session: Session,
    a: SendArgs,
    message: str,
    shown: str,
    timeout: int,
    idempotency_key: str | None,
) -> SendPlan:
    """Do the send the mode asks for."""
    if a.mode == "resume":
        return SendPlan(result=_explicit_resume(requester, session, message, shown))
    if a.mode is None and session.spawned_by == requester.session_key:
        resumed = resume_paused_child(requester, session, message, shown)
        if resumed is not None:
            return SendPlan(result=resumed)
    if a.mode == "notify":
        return SendPlan(result=_notify(requester, session, message, shown))
    if a.mode == "steer":
        return SendPlan(result=_steer(requester, session, message, shown))
    if idempotency_key:
        existing = Run.objects.filter(
            requester_key=requester.session_key, idempotency_key=idempotency_key
        ).first()
        if existing is not None:
            return SendPlan(
                result=None, run_id=str(existing.pk), session_key=shown, timeout=timeout
            )
    return _start_turn(requester, session, message, shown, timeout, idempotency_key)


def _start_turn(
    requester: Requester,
    session: Session,
    message: str,
    shown: str,
    timeout: int,
    idempotency_key: str | None,
) -> SendPlan:
    try:
        chain = send_hop(requester, session.agent_id)
    except Forbidden as exc:
        return _refused(exc.message, status="forbidden", session_key=shown)

    requester_session = (
        Session.objects.filter(key=requester.session_key).only("row_channel").first()
    )
    requester_channel = requester_session.row_channel if requester_session else ""

    created = True
    try:
        with transaction.atomic():
            run = start_run(
                session=session,
                kind="send",
                message=message,
                provenance=inter_session(
                    requester.session_key, "sessions_send", channel=requester_channel
                ),
                extra_system_prompt=prompts.a2a_context(
                    requester_key=requester.session_key,
                    requester_channel=requester_channel,
                    target_key=shown,
                ),
                requester_key=requester.session_key,
                requester_channel=requester_channel,
                parent_run=current_run.get(),
                chain=chain,
                idempotency_key=idempotency_key or "",
                # An operator key's send is the owner speaking; a session's (an agent's turn,
                # an agent key) is not, whoever started that session's turn.
                sender_is_owner=requester.is_operator,
                sandboxed=requester.sandboxed,
                flow=Flow.a2a(
                    requester=requester.session_key,
                    requester_channel=requester_channel,
                    target=session.key,
                    target_channel=session.row_channel,
                    original=message,
                    max_turns=max(0, min(5, requester.config.max_ping_pong_turns)),
                ),
            )
    except IntegrityError:
        # The same idempotency key raced us: the other request created the run.
        run = Run.objects.get(requester_key=requester.session_key, idempotency_key=idempotency_key)
        created = False
    return SendPlan(
        result=None, run_id=str(run.pk), session_key=shown, timeout=timeout, created=created
    )


def _notify(requester: Requester, session: Session, message: str, shown: str) -> dict:
    """mode=notify: context for the target's next turn; no run is started (9.6 §4.3)."""
    try:
        send_hop(requester, session.agent_id)
    except Forbidden as exc:
        return _refused(exc.message, status="forbidden", session_key=shown).result or {}
    notification_id = send_modes.notify(session, message, source_key=requester.session_key)
    return {
        "status": "queued",
        "sessionKey": shown,
        "notificationId": notification_id,
        "durability": "database",
        "runStarted": False,
    }


def _steer(requester: Requester, session: Session, message: str, shown: str) -> dict:
    """mode=steer: the message goes into the target's transcript during its active run, and
    no turn is started; an idle target is refused (9.6 §4.3). The running turn's next model
    call reads it where its backend re-reads the transcript; otherwise the session's next turn
    does."""
    active = Run.objects.filter(session=session, status=Run.RUNNING).order_by("-created_at").first()
    if active is None:
        return _refused(STEER_IDLE, session_key=shown).result or {}
    try:
        send_hop(requester, session.agent_id)
    except Forbidden as exc:
        return _refused(exc.message, status="forbidden", session_key=shown).result or {}
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        store.append_to_session(
            locked,
            store.read_messages(
                [
                    {
                        "role": "user",
                        "content": message,
                        "provenance": inter_session(requester.session_key, "sessions_send"),
                    }
                ]
            ),
        )
    return {
        "runId": str(active.pk),
        "status": "accepted",
        "sessionKey": shown,
        "targetDisposition": "steered",
        "delivery": DELIVERY_SKIPPED,
    }


def _explicit_resume(requester: Requester, session: Session, message: str, shown: str) -> dict:
    """mode=resume: only for the caller's own paused native child (9.6 §4.3)."""
    if session.spawned_by != requester.session_key:
        return _refused(RESUME_NOT_PARENT, status="forbidden", session_key=shown).result or {}
    if session.archived or session.spawn_depth == 0:
        return _refused(RESUME_NO_CHILD, session_key=shown).result or {}
    resumed = resume_paused_child(requester, session, message, shown)
    if resumed is None:
        return _refused(RESUME_NO_CHILD, session_key=shown).result or {}
    return resumed


# What send_result() reads from a run.
RESULT_FIELDS = ("status", "reply", "error", "created_at", "started_at")


def target_run(run: Run) -> dict:
    """What the target's run is doing, or why it failed: a send whose wait ended without a
    reply says whether the message got there and what became of it (beyond OpenClaw)."""
    state: dict[str, Any] = {"status": run.status}
    if run.started_at:
        state["startedAt"] = run.started_at.isoformat().replace("+00:00", "Z")
    elif run.status == Run.QUEUED and run.created_at:
        state["queuedSeconds"] = round((timezone.now() - run.created_at).total_seconds(), 1)
    if run.error:
        state["error"] = run.error
    return state


def send_hop(requester: Requester, to_agent: str) -> Chain:
    """The chain a send from `requester` to `to_agent` extends (runs/chain.py); raises Forbidden
    for a loop or a chain at its cap."""
    return next_hop(
        tool="sessions_send",
        from_agent=requester.agent_id,
        to_agent=to_agent,
        config=requester.config,
    )


def send_result(
    run: Run | None, *, session_key: str, timeout: int, watched: bool | None = None
) -> dict:
    """send_result_of() plus `watched` when the call passed `watch`."""
    result = send_result_of(run, session_key=session_key, timeout=timeout)
    if watched is not None:
        result["watched"] = watched
    return result


def send_result_of(run: Run | None, *, session_key: str, timeout: int) -> dict:
    """The result shape for a started send, from the run as it stands. `delivered`: the message
    is in the target's transcript (its run exists); with no reply, `targetRun` says more."""
    if run is None:
        return {
            "runId": None,
            "status": "error",
            "error": "run not found",
            "sessionKey": session_key,
        }
    base = {"runId": str(run.pk), "sessionKey": session_key, "delivered": True}
    if timeout == 0:
        return {
            **base,
            "status": "accepted",
            "targetDisposition": "queued",
            "delivery": DELIVERY_PENDING,
        }
    if not run.finished:
        return {
            **base,
            "status": "timeout",
            "error": (
                f"No reply within {timeout}s; the run continues. Wait again at "
                f"/api/v1/runs/{run.pk}/wait/ or read sessions_history later."
            ),
            "sentBeforeError": True,
            "targetRun": target_run(run),
            "targetDisposition": "queued",
            "delivery": DELIVERY_PENDING,
        }
    if run.status == Run.OK and not _visible(run.reply):
        # The waited run ended with no visible text: nothing stays pending (9.6 §4.3).
        return {
            "runId": str(run.pk),
            "sessionKey": session_key,
            "status": "no_reply",
            "message": NO_REPLY_MESSAGE,
        }
    if run.status == Run.OK:
        result: dict[str, Any] = {**base, "status": "ok"}
        if run.reply:
            result["reply"] = run.reply
        result["delivery"] = DELIVERY_PENDING
        return result
    status = "timeout" if run.status == Run.TIMEOUT else "error"
    return {
        **base,
        "status": status,
        # 9.6's defaults when the run left no error text.
        "error": run.error or ("agent run timed out" if status == "timeout" else "agent error"),
        "sentBeforeError": True,
        "targetRun": target_run(run),
        "delivery": DELIVERY_SKIPPED,
    }


def resume_paused_child(
    requester: Requester, child: Session, message: str, shown: str
) -> dict | None:
    """A plain send from the controlling parent to a child paused with sessions_yield
    (waitFor "message") continues the same task (9.6 §1.7): its completion goes to the
    original requester as a completion turn, so the send does not wait. None if not paused."""
    paused = Run.objects.filter(session=child).order_by("-created_at").first()
    if (
        paused is None
        or not paused.finished
        or paused.yielded != Run.YIELDED_FOR_MESSAGE
        or Completion.objects.filter(child_run=paused).exists()
    ):
        return None
    task = paused.task_run or paused
    flow = replace(Flow.from_json(paused.flow), yield_note=None)
    try:
        chain = send_hop(requester, child.agent_id)
    except Forbidden as exc:
        return _refused(exc.message, status="forbidden", session_key=shown).result
    with transaction.atomic():
        run = start_run(
            session=child,
            kind="send",
            message=message,
            chain=chain,
            provenance=inter_session(requester.session_key, "sessions_send"),
            extra_system_prompt=task.extra_system_prompt,
            requester_key=requester.session_key,
            parent_run=paused,
            flow=flow,
            task_run=task,
            sandboxed=requester.sandboxed,
        )
    return {
        "runId": str(run.pk),
        "status": "accepted",
        "mode": "resume",
        "taskRunId": str(task.pk),
        "sessionKey": shown,
        "completion": "task",
        "delivered": True,
        "delivery": DELIVERY_SKIPPED,
    }


def _visible(reply: str) -> bool:
    text = (reply or "").strip()
    return bool(text) and not is_silent(text, "NO_REPLY")


def accepted(plan: SendPlan) -> dict:
    """The result of a started send that is not waited for: it needs nothing from the run."""
    result: dict[str, Any] = {
        "runId": plan.run_id,
        "sessionKey": plan.session_key,
        "delivered": True,
        "status": "accepted",
        "targetDisposition": "queued",
        "delivery": DELIVERY_PENDING,
    }
    if plan.watched is not None:
        result["watched"] = plan.watched
    return result


def sessions_send(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The synchronous form, for an agent's own tool call during its run: it never holds the
    worker waiting for another run (with a small worker pool that could deadlock), so it answers
    `accepted` at once; the reply comes back through the reply loop and the announce step.
    Adapters that can wait call sessions_send_async."""
    plan = start_send(requester=requester, args=args)
    return plan.result if plan.result is not None else accepted(plan)


async def sessions_send_async(
    *, requester: Requester, args: dict[str, Any] | None, idempotency_key: str | None = None
) -> dict:
    """Start the send, then wait on the server for up to timeoutSeconds holding no thread.

    The run's task is held at commit and handed to the broker after the answer when the send
    does not wait (timeoutSeconds 0: the answer needs nothing from the run; issue 26), once the
    wait listens for the run's finish otherwise. Should the process end in between, the run stays queued and the
    watchdog enqueues it (RUN_ORPHAN_AFTER_SECONDS)."""
    with taskqueue.enqueues_held() as held:
        plan = await db_step(start_send)(
            requester=requester, args=args, idempotency_key=idempotency_key
        )
    waits = plan.result is None and plan.timeout != 0
    if held and not waits and not taskqueue.release_later(held):
        await db_step(taskqueue.run_all)(held)
    if plan.result is not None:
        return plan.result
    if plan.timeout == 0:
        return accepted(plan)
    assert plan.run_id is not None  # a plan without a result has a run

    async def enqueue() -> None:
        # Once the wait listens for the run's finish: a quick reply cannot come before it.
        if held:
            await db_step(taskqueue.run_all)(held)

    run = await wait_for_run(
        plan.run_id,
        plan.timeout,
        fields=RESULT_FIELDS,
        just_started=plan.created,
        listening=enqueue,
    )
    return send_result(
        run, session_key=plan.session_key, timeout=plan.timeout, watched=plan.watched
    )


TOOL = Tool(DECLARATION, sessions_send, run_async=sessions_send_async)
