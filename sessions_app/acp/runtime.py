"""The worker's side of runtime="acp": one turn of an ACP child (docs/acp.md).

runs/engine.py hands a run of an ACP session here instead of a model backend. The turn starts
the harness (client.py), and while it works, every batch of what it says is handled at once
(transcript.py): finished messages are written, the text still streaming goes to live followers
as deltas; between batches the run is checked for an abort or its deadline (the engine's
`check_abort`, as for any turn). On abort, runTimeoutSeconds or a cascade stop: session/cancel,
then the process ends, what came meanwhile is written (the text cut short marked `aborted`),
and open tool calls are closed. A harness that fails ends the run as `error` with the reason;
what it had said stays in the transcript (its last text marked `error`). The turn's reply (what
the requester hears through the usual completion path) is the agent's text after its last tool
call.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from openclaw_common import keys

from ..models import GatewayConfig, Message, Run
from ..runs.backends import BackendError, TurnAborted, TurnOutput
from ..runs.backends.base import CheckAbort
from ..runs.flow_state import Flow
from .facts import TurnFacts
from .harnesses import Harness, HarnessError, configured, deployment_refusal
from .sandbox import run_as_for
from .transcript import STOP_REASONS, TranscriptWriter

if TYPE_CHECKING:
    from .client import Event, HarnessProcess

log = logging.getLogger("openclaw.acp")

POLL_SECONDS = 0.2
# A turn is one django-q2 task, killed (with no chance to cancel) past Q_CLUSTER["timeout"]: the
# turn stops itself this long before, cancelling the harness like a run timeout would.
TASK_LIMIT_MARGIN_SECONDS = 15


def stop_wait_seconds() -> float:
    """After a cancel: the grace the harness gets, the process's end, and a margin."""
    from .client import CANCEL_GRACE_SECONDS, EXIT_GRACE_SECONDS

    return CANCEL_GRACE_SECONDS + 3 * EXIT_GRACE_SECONDS + 2


def is_acp_session(key: str) -> bool:
    """`agent:<harness>:acp:<uuid>` (reference §1.1: rest starting with `acp:`)."""
    parsed = keys.parse_agent_key(key)
    return parsed is not None and parsed[1].startswith("acp:")


@dataclass
class AcpTurnOutput(TurnOutput):
    """The messages are already in the transcript; only the reply and usage are left."""

    final_text: str = ""

    @property
    def reply(self) -> str:
        return self.final_text


class TaskLimitReached(Exception):
    pass


def task_limit_seconds() -> float:
    timeout = (getattr(settings, "Q_CLUSTER", {}) or {}).get("timeout") or 300
    return max(5.0, float(timeout) - TASK_LIMIT_MARGIN_SECONDS)


def harness_for(run: Run) -> Harness:
    harness_id = run.session.agent_id
    harnesses = configured(GatewayConfig.load())
    if harness_id not in harnesses:
        raise BackendError(f'ACP harness "{harness_id}" is no longer configured (acp.agents)')
    harness = harnesses[harness_id]
    # Checked again when it runs, as a model's apiKeyEnv is: the deployment may have narrowed
    # its lists since the harness was saved.
    refused = deployment_refusal(harness)
    if refused:
        raise BackendError(f'ACP harness "{harness_id}": {refused}')
    return harness


def run_turn(run: Run, *, check_abort: CheckAbort) -> TurnOutput:
    # The ACP SDK (its pydantic schema: 0.7 s of import on a quiet machine) only in a process
    # that runs a turn, not in every web process, command and test server that sets Django up.
    from . import session_tools
    from .client import HarnessProcess

    harness = harness_for(run)
    flow = Flow.from_json(run.flow)
    wanted_cwd, resume = continuation(run, flow)
    try:
        # Resolved again now, not only at spawn: a directory swapped for a symlink out of the
        # root, or a root narrowed since, is refused before the harness starts there.
        cwd = str(harness.resolve_cwd(wanted_cwd))
        # Its own user for that directory (sandbox.py): no reach into the worker's secrets.
        run_as = run_as_for(harness, cwd)
    except HarnessError as exc:
        raise BackendError(exc.message) from None
    writer = TranscriptWriter(
        run.session,
        parent_key=flow.requester if flow.stream_to == "parent" else None,
        harness_id=harness.id,
    )
    mcp_server, mcp_note = _session_tools(run, harness)
    process = HarnessProcess(
        harness,
        cwd=cwd,
        prompt=run.message,
        run_as=run_as,
        resume=resume,
        mcp_server=mcp_server,
        mcp_note=mcp_note,
    )
    # The pages' ACP facts (facts.py): the session, the permission decisions, warm or not.
    facts = TurnFacts(run, harness.id, harness.warm_seconds)
    limit = task_limit_seconds()
    try:
        process.start()
        outcome = _follow(process, writer, _with_task_limit(check_abort, limit), facts)
    except TurnAborted as exc:
        process.request_cancel()
        _drain(process, writer, facts)
        writer.close(
            "the run timed out" if str(exc) == "timeout" else "the run was stopped",
            stop_reason="aborted",
        )
        raise
    except TaskLimitReached:
        process.request_cancel()
        _drain(process, writer, facts)
        writer.close("the turn reached the worker's task time limit", stop_reason="aborted")
        raise BackendError(
            f'ACP harness "{harness.id}": the turn was stopped after {limit:.0f}s, the worker\'s '
            'task time limit (Q_CLUSTER["timeout"]); set runTimeoutSeconds below it, or raise it'
        ) from None
    finally:
        if not process.join(0):
            process.request_cancel()
            process.join(stop_wait_seconds())
        if mcp_server is not None:
            # However the turn ended: the key dies with it (a warm process keeps it, refused).
            # First: nothing written for the pages below may keep a key alive by failing.
            session_tools.revoke(run)
        facts.ended(kept_warm=process.kept_warm, pid=process.pid)
    return _result(harness, outcome, writer)


def _session_tools(run: Run, harness: Harness) -> tuple[Any, dict[str, Any]]:
    """The MCP server (with this turn's key) for a harness with `sessionTools`, and what the
    start message says of it; (None, {}) when it is off. A deployment whose OPENCLAW_MCP_URL
    cannot be used runs the turn without them, and the start message says why."""
    from . import session_tools  # the ACP SDK: see run_turn

    if not harness.session_tools:
        return None, {}
    try:
        granted = session_tools.grant(run)
    except session_tools.NotGranted as exc:
        log.warning("ACP harness %s: no session tools: %s", harness.id, exc)
        return None, {"sessionToolsNote": f"The session tools were not offered: {exc}."}
    note = {"server": session_tools.SERVER_NAME, "url": granted.url, "keyId": granted.key_id}
    return granted.server, {"sessionTools": note}


def continuation(run: Run, flow: Flow) -> tuple[str | None, str | None]:
    """The cwd and the ACP session a turn continues: the spawn's own (and its resumeSessionId);
    for a later turn of the child (a sessions_send), the spawn's cwd and the ACP session its
    last turn worked in."""
    spawn_flow = flow
    if not flow.cwd:
        first = Run.objects.filter(session=run.session, kind="spawn").order_by("created_at")
        spawn_run = first.only("flow").first()
        spawn_flow = Flow.from_json(spawn_run.flow) if spawn_run else flow
    last = (
        Message.objects.filter(session=run.session, role="system", extra__acp__event="started")
        .order_by("-seq")
        .only("extra")
        .first()
    )
    previous = (last.extra or {}).get("acp", {}).get("sessionId") if last else None
    return spawn_flow.cwd or None, flow.resume_session_id or previous or None


def _with_task_limit(check_abort: CheckAbort, limit: float) -> CheckAbort:
    started = time.monotonic()

    def check() -> None:
        check_abort()
        if time.monotonic() - started > limit:
            raise TaskLimitReached

    return check


def _follow(
    process: HarnessProcess, writer: TranscriptWriter, check_abort: CheckAbort, facts: TurnFacts
) -> Event:
    """Write what comes until the turn ends; returns the ("done" | "failed", data) event."""
    while True:
        batch = process.next_batch(POLL_SECONDS)
        ended = [e for e in batch if e[0] in ("done", "failed")]
        writer.write([e for e in batch if e[0] not in ("done", "failed")])
        facts.seen(batch)  # after: the first words stream before this turn's row is written
        if ended:
            return ended[0]
        check_abort()


def _drain(process: HarnessProcess, writer: TranscriptWriter, facts: TurnFacts) -> None:
    """After a cancel: what the harness still says until it stops (bounded)."""
    deadline = time.monotonic() + stop_wait_seconds()
    while time.monotonic() < deadline:
        batch = process.next_batch(POLL_SECONDS)
        writer.write([e for e in batch if e[0] not in ("done", "failed")])
        facts.seen(batch)
        if any(e[0] in ("done", "failed") for e in batch):
            return


def _result(harness: Harness, outcome: Event, writer: TranscriptWriter) -> TurnOutput:
    kind, data = outcome
    if kind == "failed":
        error = f'ACP harness "{harness.id}": {data.get("error")}'
        writer.close("the harness failed", stop_reason="error", error=error)
        raise BackendError(error)
    stop = data.get("stopReason")
    error = {
        "cancelled": f'ACP harness "{harness.id}" cancelled the turn'
        + (" after a permission request was denied" if writer.mapper.denied else ""),
        "refusal": f'ACP harness "{harness.id}" refused the task (stopReason refusal)',
    }.get(str(stop), "")
    writer.close(
        f"the turn ended ({stop}) before the tool call finished",
        stop_reason=STOP_REASONS.get(str(stop), "stop"),
        error=error if stop == "refusal" else "",
    )
    if error:
        raise BackendError(error)
    mapper = writer.mapper
    return AcpTurnOutput(
        messages=[],
        usage=mapper.usage,
        final_text=mapper.final_text.strip() or mapper.all_text.strip(),
    )
