"""sessions_send (reference §4, api.md §1): message another session and optionally wait for its reply.

`start_send()` validates, resolves and starts the run in one transaction; the wait happens in async
code (`sessions_send_async`), holding no thread, and can be rejoined at /api/v1/runs/{id}/wait/.
A wait that times out leaves the run going; the reply loop and announce still happen.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.utils import timezone

from openclaw_common import keys
from openclaw_common.errors import Forbidden, NotFound, Refusal

from .. import visibility
from ..identity import Requester
from ..models import Run, Session
from ..resolve import canonical_for, resolve_session
from ..runs import prompts
from ..runs.chain import Chain, current_run, next_hop
from ..runs.completion_model import Completion
from ..runs.flow_state import Flow
from ..runs.provenance import inter_session
from .declaration import Declaration, Integer, String, Tool
from .shapes import BOOLEAN, DELIVERY, STRING, obj

DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 600
MAX_MESSAGE_CHARS = 100_000
DELIVERY_PENDING = {"status": "pending", "mode": "announce"}
DELIVERY_SKIPPED = {"status": "skipped", "mode": "announce"}

DECLARATION = Declaration(
    name="sessions_send",
    description=(
        "Send a message into another session and, unless timeoutSeconds is 0, wait for "
        "its reply. Returns {runId, status: accepted|ok|timeout|error|forbidden, reply?}. "
        "On timeout the run goes on; read sessions_history later."
    ),
    # `message` first: it is checked first, as it always was.
    params=(
        String("message", "The message to send.", required=True, max_length=MAX_MESSAGE_CHARS),
        String(
            "sessionKey",
            "Target session key or sessionId from sessions_list.",
            max_length=keys.MAX_KEY_LENGTH,
        ),
        String(
            "label", "Target session label (instead of sessionKey).", min_length=1, max_length=200
        ),
        String("agentId", "Agent whose session has that label.", min_length=1, max_length=64),
        Integer(
            "timeoutSeconds",
            f"Seconds to wait for the reply (default {DEFAULT_TIMEOUT_SECONDS}, at most "
            f"{MAX_TIMEOUT_SECONDS}; 0 = do not wait).",
            default=DEFAULT_TIMEOUT_SECONDS,
        ),
    ),
    result=obj(
        {
            "runId": {"type": ["string", "null"]},
            "status": {
                "type": "string",
                "enum": ["accepted", "ok", "timeout", "error", "forbidden"],
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
            "mode": {"type": "string", "enum": ["resume"]},
            "taskRunId": STRING,
            "completion": {"type": "string", "enum": ["task"]},
        },
        ("runId", "status"),
    ),
    group="sessions",
)


@dataclass
class SendPlan:
    result: dict | None  # already decided (a refusal or an error): no run to wait for
    run_id: str | None = None
    session_key: str = ""  # display key of the target
    timeout: int = DEFAULT_TIMEOUT_SECONDS
    created: bool = False  # this call created the run (not an idempotent repeat)


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


def start_send(
    *, requester: Requester, args: dict[str, Any] | None, idempotency_key: str | None = None
) -> SendPlan:
    a = DECLARATION.read(args)
    message, raw_key, label, agent_id = a.message, a.sessionKey, a.label, a.agentId
    timeout = min(a.timeoutSeconds, MAX_TIMEOUT_SECONDS)
    if raw_key and label:
        return _refused("Provide either sessionKey or label (not both).")
    if not raw_key and not label:
        return _refused("Either sessionKey or label is required")
    try:
        if raw_key:
            session = resolve_session(requester, raw_key, action="send")
        else:
            session = resolve_label(requester, label, agent_id)
    except Refusal as exc:
        shown = (
            keys.display_key(canonical_for(requester, raw_key), requester.key_settings)
            if raw_key
            else None
        )
        return _refused(exc.message, status=exc.status, session_key=shown)
    shown = keys.display_key(session.key, requester.key_settings)

    from policies_app.send_policy import check_send, send_blocked_error

    if not check_send(session).allowed:
        return _refused(send_blocked_error(), session_key=shown)
    if session.spawned_by == requester.session_key:
        resumed = resume_paused_child(requester, session, message, shown)
        if resumed is not None:
            return SendPlan(result=resumed)
    if idempotency_key:
        existing = Run.objects.filter(
            requester_key=requester.session_key, idempotency_key=idempotency_key
        ).first()
        if existing is not None:
            return SendPlan(
                result=None, run_id=str(existing.pk), session_key=shown, timeout=timeout
            )
    try:
        chain = send_hop(requester, session.agent_id)
    except Forbidden as exc:
        return _refused(exc.message, status="forbidden", session_key=shown)

    requester_session = (
        Session.objects.filter(key=requester.session_key).only("row_channel").first()
    )
    requester_channel = requester_session.row_channel if requester_session else ""
    from ..runs.engine import start_run

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


def send_result(run: Run | None, *, session_key: str, timeout: int) -> dict:
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
        return {**base, "status": "accepted", "delivery": DELIVERY_PENDING}
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
            "delivery": DELIVERY_PENDING,
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
        "error": run.error or "agent error",
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
    from ..runs.engine import start_run

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


def accepted(plan: SendPlan) -> dict:
    """The result of a started send that is not waited for: it needs nothing from the run."""
    return {
        "runId": plan.run_id,
        "sessionKey": plan.session_key,
        "delivered": True,
        "status": "accepted",
        "delivery": DELIVERY_PENDING,
    }


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
    """Start the send, then wait on the server for up to timeoutSeconds holding no thread."""
    from ..runs.wait import wait_for_run

    plan = await sync_to_async(start_send)(
        requester=requester, args=args, idempotency_key=idempotency_key
    )
    if plan.result is not None:
        return plan.result
    if plan.timeout == 0:
        return accepted(plan)
    assert plan.run_id is not None  # a plan without a result has a run
    run = await wait_for_run(
        plan.run_id, plan.timeout, fields=RESULT_FIELDS, just_started=plan.created
    )
    return send_result(run, session_key=plan.session_key, timeout=plan.timeout)


TOOL = Tool(DECLARATION, sessions_send, run_async=sessions_send_async)
