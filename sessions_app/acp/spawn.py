"""sessions_spawn's ACP branch: check, then create `agent:<harness>:acp:<uuid>` and its run.

The order follows reference §5.2 where it speaks (attachments, mode/thread, depth, children),
then the ACP rules (acp.enabled, sandbox, the harness: default, allowed, configured; cwd; the
concurrency cap). Every no is a result ({status: error | forbidden, error}); nothing is written
before the one transaction that creates the child session and its queued run. The worker runs it
(runs/engine.py → acp/runtime.py).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.db import transaction

from openclaw_common.errors import Forbidden

from ..access.identity import Requester
from ..models import Agent, GatewayConfig, Run
from ..runs.chain import next_hop
from ..runs.spawn import (
    SpawnPlan,
    SpawnRefused,
    accepted_result,
    check_requester_limits,
    check_runtime_and_mode,
    not_applied_notes,
    start_child,
)
from ..runs.subagent_limits import limits_for
from . import facts
from .harnesses import Harness, HarnessError, configured

if TYPE_CHECKING:
    from ..runs.spawn import SpawnRequest

ATTACHMENTS_REFUSED = (
    "attachments are currently unsupported for runtime=acp; use runtime=subagent or remove "
    "attachments"
)
SANDBOXED_REFUSED = (
    'Sandboxed sessions cannot spawn ACP sessions because runtime="acp" runs on the host. '
    'Use runtime="subagent" from sandboxed sessions.'
)
SANDBOX_REQUIRE_REFUSED = (
    'sandbox="require" is unsupported for runtime="acp" because ACP sessions run outside the '
    'sandbox. Use runtime="subagent" or sandbox="inherit".'
)
DISABLED = "ACP is disabled by policy (acp.enabled=false)."


def spawn_acp(requester: Requester, request: SpawnRequest) -> dict[str, Any]:
    """Accept an ACP spawn at once: {status: accepted, childSessionKey, runId, mode, note}."""
    if request.attachments:
        raise SpawnRefused(ATTACHMENTS_REFUSED)
    check_runtime_and_mode(request)
    resume = check_resume_id(request.resume_session_id)
    config = requester.config
    if not config.acp_enabled:
        raise SpawnRefused(DISABLED, status="forbidden")
    if requester.sandboxed:
        raise SpawnRefused(SANDBOXED_REFUSED, status="forbidden")
    if request.sandbox == "require":
        raise SpawnRefused(SANDBOX_REQUIRE_REFUSED)
    requester_row, me, depth = check_requester_limits(requester, config)
    harness = pick_harness(request.agent_id, config)
    try:
        cwd = harness.resolve_cwd(request.cwd)
        harness.executable()
    except HarnessError as exc:
        raise SpawnRefused(exc.message) from None
    check_concurrency(config)
    try:
        chain = next_hop(
            tool="sessions_spawn",
            from_agent=requester.agent_id,
            to_agent=harness.id,
            config=config,
            spawn=True,
        )
    except Forbidden as exc:
        raise SpawnRefused(exc.message, status="forbidden") from None
    timeout = request.timeout
    if timeout is None:
        timeout = limits_for(me, config).subagent_run_timeout_seconds
    plan = SpawnPlan(
        requester=requester,
        request=request,
        timeout=max(0, timeout),
        target_id=harness.id,
        child_key=f"agent:{harness.id}:acp:{uuid.uuid4()}",
        depth=depth + 1,
        chain=chain,
        requester_channel=requester_row.row_channel if requester_row else "",
        notes=tuple(not_applied_notes(request)),
    )
    with transaction.atomic():
        harness_agent(harness)
        run = start_child(
            plan,
            runtime="acp",
            cwd=str(cwd),
            stream_to=request.stream_to,
            resume_session_id=resume,
        )
        facts.spawned(run.session, harness=harness.id, cwd=str(cwd))
    return accepted_result(plan, run)


def check_resume_id(value: str | None) -> str | None:
    """resumeSessionId: an ACP session id of the harness (its own format; printable, no spaces)."""
    if value is None:
        return None
    if not value.strip() or not value.isprintable() or any(c.isspace() for c in value):
        raise SpawnRefused("resumeSessionId must be an ACP session id (printable, no spaces)")
    return value


def pick_harness(agent_id: str | None, config: GatewayConfig) -> Harness:
    """agentId (a harness id), else acp.defaultAgent; allowed by acp.allowedAgents; configured."""
    harness_id = (agent_id or "").strip().lower() or config.acp_default_agent
    if not harness_id:
        raise SpawnRefused(
            'runtime="acp" needs agentId (the ACP harness id): no acp.defaultAgent is set'
        )
    allowed = [str(a).strip().lower() for a in config.acp_allowed_agents or []]
    if "*" not in allowed and harness_id not in allowed:
        listed = ", ".join(allowed) if allowed else "none"
        raise SpawnRefused(
            f'agentId "{harness_id}" is not allowed for runtime=acp '
            f"(allowed: {listed}; acp.allowedAgents)",
            status="forbidden",
        )
    harnesses = configured(config)
    if harness_id not in harnesses:
        listed = ", ".join(sorted(harnesses)) or "none"
        raise SpawnRefused(
            f'ACP harness "{harness_id}" is not configured (configured: {listed}; acp.agents)'
        )
    return harnesses[harness_id]


def acp_runs_in_flight():
    return Run.objects.in_flight().filter(kind="spawn", flow__runtime="acp")


def check_concurrency(config: GatewayConfig) -> None:
    running = acp_runs_in_flight().count()
    if running >= config.acp_max_concurrent_sessions:
        raise SpawnRefused(
            f"ACP session limit reached ({running}/{config.acp_max_concurrent_sessions}; "
            "acp.maxConcurrentSessions)",
            status="forbidden",
        )


def harness_agent(harness: Harness) -> Agent:
    """The Agent row the child session belongs to (its key names the harness as its agent)."""
    agent, _ = Agent.objects.get_or_create(
        pk=harness.id,
        defaults={
            "name": harness.id,
            "description": f"ACP harness {harness.id} (sessions_spawn runtime=acp; acp.agents)",
        },
    )
    return agent
