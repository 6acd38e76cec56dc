"""What happens after a run finishes (reference §4.5, §5.3): the agent-to-agent reply loop and
announce step of sessions_send, the announce step and report of sessions_spawn, and delivery of
an ingest reply. Each step is a new run, created in the finishing run's transaction."""

from __future__ import annotations

import logging

from .. import store
from ..models import GatewayConfig, Message, Run, Session
from ..rows import transcript_path
from . import prompts
from .backends import ANNOUNCE_SKIP, REPLY_SKIP
from .chain import continue_chain, turns_used
from .provenance import inter_session

log = logging.getLogger("openclaw.runs")


def after_finish(run: Run, known: dict[str, Session]) -> None:
    """`known`: the sessions the finishing transaction locked (the run's own, the flow's
    requester and target), by key, so follow-ups on them need no lookup."""
    flow = run.flow or {}
    kind = flow.get("type")
    if kind == "a2a":
        if run.kind == "send":
            _a2a_after_primary(run, flow, known)
        elif run.kind == "step":
            _a2a_after_step(run, flow, known)
        elif run.kind == "announce":
            _a2a_after_announce(run, flow)
    elif kind == "spawn":
        _spawn_after_child(run, flow)
    elif kind == "subagent_announce":
        _spawn_after_announce(run, flow, known)
    elif run.kind == "ingest":
        _deliver_reply(run)


def _deliver(session: Session, text: str, *, kind: str, run: Run):
    from policies_app.delivery import enqueue_delivery

    return enqueue_delivery(session=session, text=text, kind=kind, run=run)


# --- sessions_send: reply loop and announce -------------------------------------------------------


def _a2a_after_primary(run: Run, flow: dict, known: dict[str, Session]) -> None:
    reply = run.reply.strip() if run.status == Run.OK else ""
    if not reply:
        return  # no reply: no ping-pong and no announce (reference §4.5 step 1)
    flow = {**flow, "round1": reply, "latest": reply, "turn": 0}
    _a2a_next(run, flow, known)


def _a2a_after_step(run: Run, flow: dict, known: dict[str, Session]) -> None:
    reply = run.reply.strip() if run.status == Run.OK else ""
    if not reply or reply == REPLY_SKIP:
        _a2a_announce(run, flow, known)
        return
    _a2a_next(run, {**flow, "latest": reply}, known)


def session_by_key(key: str, known: dict[str, Session]) -> Session | None:
    if not key:
        return None
    session = known.get(key)
    return session if session is not None else Session.objects.filter(key=key).first()


def _a2a_next(run: Run, flow: dict, known: dict[str, Session]) -> None:
    requester, target = flow.get("requester") or "", flow["target"]
    turn = int(flow.get("turn") or 0) + 1
    max_turns = int(flow.get("maxTurns") or 0)
    can_step = (
        turn <= max_turns
        and requester
        and requester != target
        and turns_used(run.chain_id) < GatewayConfig.load().chain_max_turns
    )
    speaker_key = requester if turn % 2 else target
    speaker = session_by_key(speaker_key, known) if can_step else None
    if speaker is None:
        _a2a_announce(run, flow, known)
        return
    from .engine import start_run

    speaker_is_requester = speaker_key == requester
    listener = target if speaker_is_requester else requester
    start_run(
        session=speaker,
        kind="step",
        message=flow["latest"],
        provenance=inter_session(
            listener,
            "sessions_send",
            channel=flow.get("targetChannel" if speaker_is_requester else "requesterChannel"),
        ),
        extra_system_prompt=prompts.reply_step_context(
            speaker_is_requester=speaker_is_requester,
            turn=turn,
            max_turns=max_turns,
            requester_key=requester,
            requester_channel=flow.get("requesterChannel") or "",
            target_key=target,
            target_channel=flow.get("targetChannel") or "",
        ),
        requester_key=listener,
        parent_run=run,
        chain=continue_chain(run),
        flow={**flow, "turn": turn},
    )


def _a2a_announce(run: Run, flow: dict, known: dict[str, Session]) -> None:
    target = session_by_key(flow["target"], known)
    if target is None:
        return
    from .engine import start_run

    start_run(
        session=target,
        kind="announce",
        message=prompts.ANNOUNCE_STEP_MESSAGE,
        provenance={"kind": "internal_system", "sourceTool": "sessions_send"},
        extra_system_prompt=prompts.announce_context(
            requester_key=flow.get("requester") or "",
            requester_channel=flow.get("requesterChannel") or "",
            target_key=flow["target"],
            target_channel=flow.get("targetChannel") or "",
            original=flow.get("original") or "",
            round_one=flow.get("round1"),
            latest=flow.get("latest"),
        ),
        requester_key=flow.get("requester") or "",
        parent_run=run,
        chain=continue_chain(run),
        flow=flow,
    )


def _a2a_after_announce(run: Run, flow: dict) -> None:
    reply = run.reply.strip() if run.status == Run.OK else ""
    if not reply or reply == ANNOUNCE_SKIP:
        return
    _deliver(run.session, reply, kind="announce", run=run)


# --- sessions_spawn: announce step and report ------------------------------------------------------


def child_result(run: Run) -> str:
    """The child's final assistant text, else the latest toolResult text, else "(no output)"."""
    if run.status == Run.OK and run.reply.strip():
        return run.reply.strip()
    latest = (
        Message.objects.filter(session_id=run.session_id, role="toolResult")
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


def _spawn_after_child(run: Run, flow: dict) -> None:
    from .engine import start_run

    result = child_result(run)
    outcome = {
        "runId": str(run.pk),
        "status": run.status,
        "error": run.error,
        "result": result,
        "runtimeMs": run.runtime_ms,
        "usage": run.usage or {},
    }
    start_run(
        session=run.session,
        kind="announce",
        message=prompts.SUBAGENT_ANNOUNCE_MESSAGE,
        provenance={"kind": "internal_system", "sourceTool": "sessions_spawn"},
        extra_system_prompt=prompts.subagent_announce_context(
            requester_key=flow.get("requester") or "",
            requester_channel=flow.get("requesterChannel") or "",
            task=flow.get("task") or "",
            result=result if result != "(no output)" else None,
        ),
        requester_key=flow.get("requester") or "",
        parent_run=run,
        chain=continue_chain(run),
        flow={**flow, "type": "subagent_announce", "outcome": outcome},
    )


def _spawn_after_announce(run: Run, flow: dict, known: dict[str, Session]) -> None:
    outcome = flow.get("outcome") or {}
    reply = run.reply.strip() if run.status == Run.OK else ""
    child = run.session
    if reply != ANNOUNCE_SKIP:
        requester = session_by_key(flow.get("requester") or "", known)
        if requester is not None:
            report = subagent_report(child, outcome, notes=reply or _notes_when_silent(run))
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
            _deliver(requester, report, kind="subagent_announce", run=run)
    if flow.get("cleanup") == "delete":
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
        transcript=transcript_path(child.key),
    )
    return prompts.subagent_report(
        status=prompts.status_line(outcome.get("status", ""), outcome.get("error", "")),
        result=outcome.get("result") or "(no output)",
        notes=notes,
        stats=stats,
    )


def _delete_child(child: Session, flow: dict) -> None:
    """cleanup=delete: the child's transcript goes and the session is archived (its runs stay
    readable by id, so a caller holding the runId still finds out what happened)."""
    Message.objects.filter(session=child).delete()
    child.archive()
    attachments_dir = flow.get("attachmentsDir")
    if attachments_dir:
        from .attachments import remove_staged

        try:
            remove_staged(attachments_dir)
        except (OSError, ValueError):
            log.warning("could not remove attachments %s", attachments_dir, exc_info=True)


# --- ingest run=true: deliver the reply -------------------------------------------------------------


def _deliver_reply(run: Run) -> None:
    reply = run.reply.strip() if run.status == Run.OK else ""
    if reply:
        _deliver(run.session, reply, kind="reply", run=run)
