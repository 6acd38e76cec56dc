"""What happens after a run finishes (reference §4.5, §5.3): the agent-to-agent reply loop and
announce step of sessions_send, the announce step and report of sessions_spawn, and delivery of
an ingest reply. Each step is a new run: after_finish() returns them as data and the engine
starts them in the finishing run's transaction (so this module never imports the engine)."""

from __future__ import annotations

import logging
from dataclasses import replace

from openclaw_common import keys

from .. import store
from ..delivery import enqueue_delivery
from ..models import GatewayConfig, Message, Run, Session
from ..rows import transcript_path
from . import completions, prompts, webhooks
from .attachments import remove_staged
from .backends import ANNOUNCE_SKIP, REPLY_SKIP
from .chain import continue_chain, turns_used
from .flow_state import A2A, SPAWN, SUBAGENT_ANNOUNCE, Flow, FollowUp
from .provenance import inter_session

log = logging.getLogger("openclaw.runs")


def after_finish(run: Run, known: dict[str, Session]) -> list[FollowUp]:
    """The follow-up runs to start, in order: the engine starts them in the finishing
    transaction. The rest (deliveries, the sub-agent report, a cleanup) is done here.

    `known`: the sessions the finishing transaction locked (the run's own, the flow's
    requester and target), by key, so follow-ups on them need no lookup."""
    flow = Flow.from_json(run.flow)
    if run.kind == "completion":
        completions.turn_finished(run)
    if flow.type == A2A:
        if run.kind == "send":
            return _a2a_after_primary(run, flow, known)
        if run.kind == "step":
            return _a2a_after_step(run, flow, known)
        if run.kind == "announce":
            _a2a_after_announce(run)
        return []
    if flow.type == SPAWN:
        if run.yielded:
            return []  # the task goes on: after its children settle, or a continuation
        # The requester's completion turn first: it is what the parent waits for. A stopped
        # tree announces nothing.
        turns = completions.task_ended(run, flow, known)
        if completions.dismissing.get():
            return turns
        if flow.runtime == "acp":
            # A harness has no announce step to run: its report goes to the requester as is.
            _report_to_requester(run.session, flow, spawn_outcome(run), "(none)", run, known)
            return turns
        return [*turns, _spawn_announce(run, flow)]
    if flow.type == SUBAGENT_ANNOUNCE:
        _spawn_after_announce(run, flow, known)
    elif run.kind == "ingest":
        _deliver_reply(run)
    return []


def _reply_of(run: Run) -> str:
    return run.reply.strip() if run.status == Run.OK else ""


# --- sessions_send: reply loop and announce -------------------------------------------------------


def _a2a_after_primary(run: Run, flow: Flow, known: dict[str, Session]) -> list[FollowUp]:
    webhooks.finished(run, kind="send", requester=session_by_key(flow.requester or "", known))
    if _is_acp(flow.target or ""):
        # 9.6 §1.12: no reply flow with an ACP session (each step or announce turn would run
        # the harness again); the requester has the reply.
        return []
    reply = _reply_of(run)
    if not reply:
        return []  # no reply: no ping-pong and no announce (reference §4.5 step 1)
    return _a2a_next(run, replace(flow, round1=reply, latest=reply, turn=0), known)


def _a2a_after_step(run: Run, flow: Flow, known: dict[str, Session]) -> list[FollowUp]:
    reply = _reply_of(run)
    if not reply or reply == REPLY_SKIP:
        return _a2a_announce(run, flow, known)
    return _a2a_next(run, replace(flow, latest=reply), known)


def _is_acp(key: str) -> bool:
    parsed = keys.parse_agent_key(key)
    return parsed is not None and parsed[1].startswith("acp:")


def session_by_key(key: str, known: dict[str, Session]) -> Session | None:
    if not key:
        return None
    session = known.get(key)
    return session if session is not None else Session.objects.filter(key=key).first()


def _a2a_next(run: Run, flow: Flow, known: dict[str, Session]) -> list[FollowUp]:
    """The next reply step (the requester and the target speak in turn), or the announce."""
    requester, target = flow.requester or "", flow.target or ""
    turn = int(flow.turn or 0) + 1
    max_turns = int(flow.max_turns or 0)
    can_step = (
        turn <= max_turns
        and requester
        and requester != target
        and turns_used(run.chain_id) < GatewayConfig.load().chain_max_turns
    )
    speaker_key = requester if turn % 2 else target
    speaker = session_by_key(speaker_key, known) if can_step else None
    if speaker is None:
        return _a2a_announce(run, flow, known)
    speaker_is_requester = speaker_key == requester
    listener = target if speaker_is_requester else requester
    step = FollowUp(
        session=speaker,
        kind="step",
        message=flow.latest,
        provenance=inter_session(
            listener,
            "sessions_send",
            channel=flow.target_channel if speaker_is_requester else flow.requester_channel,
        ),
        extra_system_prompt=prompts.reply_step_context(
            speaker_is_requester=speaker_is_requester,
            turn=turn,
            max_turns=max_turns,
            requester_key=requester,
            requester_channel=flow.requester_channel or "",
            target_key=target,
            target_channel=flow.target_channel or "",
        ),
        requester_key=listener,
        parent_run=run,
        chain=continue_chain(run),
        flow=replace(flow, turn=turn),
    )
    return [step]


def _a2a_announce(run: Run, flow: Flow, known: dict[str, Session]) -> list[FollowUp]:
    target = session_by_key(flow.target or "", known)
    if target is None:
        return []
    announce = FollowUp(
        session=target,
        kind="announce",
        message=prompts.ANNOUNCE_STEP_MESSAGE,
        provenance={"kind": "internal_system", "sourceTool": "sessions_send"},
        extra_system_prompt=prompts.announce_context(
            requester_key=flow.requester or "",
            requester_channel=flow.requester_channel or "",
            target_key=flow.target or "",
            target_channel=flow.target_channel or "",
            original=flow.original or "",
            round_one=flow.round1,
            latest=flow.latest,
        ),
        requester_key=flow.requester or "",
        parent_run=run,
        chain=continue_chain(run),
        flow=flow,
    )
    return [announce]


def _a2a_after_announce(run: Run) -> None:
    reply = _reply_of(run)
    if not reply or reply == ANNOUNCE_SKIP:
        return
    enqueue_delivery(session=run.session, text=reply, kind="announce", run=run)


# --- sessions_spawn: announce step and report ------------------------------------------------------


def child_result(run: Run) -> str:
    """The child's final assistant text, else the latest toolResult text, else "(no output)"."""
    if run.status == Run.OK and run.reply.strip():
        return run.reply.strip()
    latest = (
        Message.objects.filter(session_id=run.session_id, role="toolResult")
        .exclude(extra__has_key="forkOf")  # the requester's, copied by a fork (runs/fork.py)
        .order_by("-seq")
        .only("content")
        .first()
    )
    if latest is not None:
        content = latest.content
        if isinstance(content, str) and content.strip():
            return content.strip()
        if isinstance(content, list):
            text = "".join(
                b.get("text", "")
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            )
            if text.strip():
                return text.strip()
    return "(no output)"


def spawn_outcome(run: Run) -> dict:
    """How a child's run ended, as its report tells it."""
    return {
        "runId": str(run.pk),
        "status": run.status,
        "error": run.error,
        "result": child_result(run),
        "runtimeMs": run.runtime_ms,
        "usage": run.usage or {},
    }


def _spawn_announce(run: Run, flow: Flow) -> FollowUp:
    """The child's announce step, after its run ended (any outcome)."""
    outcome = spawn_outcome(run)
    result = outcome["result"]
    return FollowUp(
        session=run.session,
        kind="announce",
        message=prompts.SUBAGENT_ANNOUNCE_MESSAGE,
        provenance={"kind": "internal_system", "sourceTool": "sessions_spawn"},
        extra_system_prompt=prompts.subagent_announce_context(
            requester_key=flow.requester or "",
            requester_channel=flow.requester_channel or "",
            task=flow.task or "",
            result=result if result != "(no output)" else None,
        ),
        requester_key=flow.requester or "",
        parent_run=run,
        chain=continue_chain(run),
        flow=replace(flow, type=SUBAGENT_ANNOUNCE, outcome=outcome),
    )


def _spawn_after_announce(run: Run, flow: Flow, known: dict[str, Session]) -> None:
    """The requester gets the report (unless the announce said ANNOUNCE_SKIP); then cleanup."""
    reply = _reply_of(run)
    if reply != ANNOUNCE_SKIP:
        notes = reply or _notes_when_silent(run)
        _report_to_requester(run.session, flow, flow.outcome or {}, notes, run, known)
    elif flow.cleanup == "delete":
        _delete_child(run.session, flow)


def _report_to_requester(
    child: Session, flow: Flow, outcome: dict, notes: str, run: Run, known: dict[str, Session]
) -> None:
    """The Status/Result/Notes report into the requester's transcript and channel; cleanup."""
    requester = session_by_key(flow.requester or "", known)
    if requester is not None:
        report = subagent_report(child, outcome, notes=notes)
        message = store.read_message(
            0,
            {
                "role": "user",
                "content": report,
                "provenance": inter_session(
                    child.key,
                    "sessions_spawn",
                    sourceRole="subagent",
                    runId=outcome.get("runId"),
                ),
            },
        )
        store.append_to_session(requester, [message])
        # With completionDelivery "reply", the requester's own reply reaches the channel
        # (its completion turn) and the report stays in its transcript.
        if GatewayConfig.load().completion_delivery != "reply":
            enqueue_delivery(session=requester, text=report, kind="subagent_announce", run=run)
    if flow.cleanup == "delete":
        _delete_child(child, flow)


def _notes_when_silent(run: Run) -> str:
    if run.status != Run.OK:
        return f"(announce step {run.status}: {run.error or 'no reply'})"
    return "(none)"


def subagent_report(child: Session, outcome: dict, *, notes: str) -> str:
    usage = outcome.get("usage") or {}
    stats = prompts.stats_line(
        runtime_ms=outcome.get("runtimeMs"),
        input_tokens=usage.get("input"),
        output_tokens=usage.get("output"),
        total_tokens=usage.get("totalTokens"),
        session_key=child.key,
        session_id=child.session_id,
        transcript=transcript_path(child.session_id),
    )
    return prompts.subagent_report(
        status=prompts.status_line(outcome.get("status", ""), outcome.get("error", "")),
        result=outcome.get("result") or "(no output)",
        notes=notes,
        stats=stats,
    )


def _delete_child(child: Session, flow: Flow) -> None:
    """cleanup=delete: the child's transcript goes and the session is archived (its runs stay
    readable by id, so a caller holding the runId still finds out what happened)."""
    Message.objects.filter(session=child).delete()
    child.archive()
    attachments_dir = flow.attachments_dir
    if attachments_dir:
        try:
            remove_staged(attachments_dir)
        except (OSError, ValueError):
            log.warning("could not remove attachments %s", attachments_dir, exc_info=True)


# --- ingest run=true: deliver the reply -------------------------------------------------------------


def _deliver_reply(run: Run) -> None:
    reply = _reply_of(run)
    if reply:
        enqueue_delivery(session=run.session, text=reply, kind="reply", run=run)
