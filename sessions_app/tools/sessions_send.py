"""sessions_send (reference §4, api.md §1): message another session and optionally wait for its reply.

`start_send()` validates, resolves and starts the run in one transaction; the wait happens in async
code (`sessions_send_async`), holding no thread, and can be rejoined at /api/v1/runs/{id}/wait/.
A wait that times out leaves the run going; the reply loop and announce still happen.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction

from .. import keys, visibility
from ..args import Args
from ..errors import Forbidden, NotFound, Refusal
from ..identity import Requester
from ..models import Run, Session
from ..resolve import canonical_for, resolve_session
from ..runs import prompts
from ..runs.chain import current_run, next_hop
from ..runs.provenance import inter_session

ARGS = frozenset({"sessionKey", "label", "agentId", "message", "timeoutSeconds"})
DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 600
MAX_MESSAGE_CHARS = 100_000
DELIVERY_PENDING = {"status": "pending", "mode": "announce"}
DELIVERY_SKIPPED = {"status": "skipped", "mode": "announce"}


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
    a = Args(args, ARGS, tool="sessions_send")
    message = a.string("message", required=True, max_length=MAX_MESSAGE_CHARS)
    raw_key = a.string("sessionKey", max_length=keys.MAX_KEY_LENGTH)
    label = a.string("label", max_length=200)
    agent_id = a.string("agentId", max_length=64)
    timeout = min(
        a.integer("timeoutSeconds", minimum=0, default=DEFAULT_TIMEOUT_SECONDS), MAX_TIMEOUT_SECONDS
    )
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
    if idempotency_key:
        existing = Run.objects.filter(
            requester_key=requester.session_key, idempotency_key=idempotency_key
        ).first()
        if existing is not None:
            return SendPlan(
                result=None, run_id=str(existing.pk), session_key=shown, timeout=timeout
            )
    try:
        chain = next_hop(
            tool="sessions_send",
            from_agent=requester.agent_id,
            to_agent=session.agent_id,
            config=requester.config,
        )
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
                flow={
                    "type": "a2a",
                    "requester": requester.session_key,
                    "requesterChannel": requester_channel,
                    "target": session.key,
                    "targetChannel": session.row_channel,
                    "original": message,
                    "maxTurns": max(0, min(5, requester.config.max_ping_pong_turns)),
                },
            )
    except IntegrityError:
        # The same idempotency key raced us: the other request created the run.
        run = Run.objects.get(requester_key=requester.session_key, idempotency_key=idempotency_key)
        created = False
    return SendPlan(
        result=None, run_id=str(run.pk), session_key=shown, timeout=timeout, created=created
    )


# What send_result() reads from a run.
RESULT_FIELDS = ("status", "reply", "error")


def send_result(run: Run | None, *, session_key: str, timeout: int) -> dict:
    """The result shape for a started send, from the run as it stands."""
    if run is None:
        return {
            "runId": None,
            "status": "error",
            "error": "run not found",
            "sessionKey": session_key,
        }
    base = {"runId": str(run.pk), "sessionKey": session_key}
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
            "delivery": DELIVERY_PENDING,
        }
    if run.status == Run.OK:
        result = {**base, "status": "ok"}
        if run.reply:
            result["reply"] = run.reply
        result["delivery"] = DELIVERY_PENDING
        return result
    status = "timeout" if run.status == Run.TIMEOUT else "error"
    return {
        **base,
        "status": status,
        "error": run.error or "agent error",
        "delivery": DELIVERY_SKIPPED,
    }


def _load_run(run_id: str) -> Run | None:
    return Run.objects.filter(pk=run_id).first()


def sessions_send(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """Synchronous form, for agents calling the tool during their own run: it never holds the
    worker waiting for another run (that could deadlock the worker pool), so it answers
    `accepted` at once; the reply comes back through the reply loop and announce step.
    Outside a run it polls the database until the reply or the timeout."""
    plan = start_send(requester=requester, args=args)
    if plan.result is not None:
        return plan.result
    if current_run.get() is not None or plan.timeout == 0:
        return send_result(_load_run(plan.run_id), session_key=plan.session_key, timeout=0)
    deadline = time.monotonic() + plan.timeout
    while time.monotonic() < deadline:
        run = _load_run(plan.run_id)
        if run is None or run.finished:
            break
        time.sleep(0.1)
    return send_result(_load_run(plan.run_id), session_key=plan.session_key, timeout=plan.timeout)


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
        # accepted: the result needs nothing from the run but its id
        return {
            "runId": plan.run_id,
            "sessionKey": plan.session_key,
            "status": "accepted",
            "delivery": DELIVERY_PENDING,
        }
    run = await wait_for_run(
        plan.run_id, plan.timeout, fields=RESULT_FIELDS, just_started=plan.created
    )
    return send_result(run, session_key=plan.session_key, timeout=plan.timeout)
