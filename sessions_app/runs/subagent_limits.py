"""The sub-agent limits that apply to one agent: the gateway's defaults
(`agents.defaults.subagents.*`) with the agent's own overrides (9.6 §1.9,
`agents.entries.<id>.subagents.*`; here `Agent.subagent_settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import Agent, GatewayConfig, Session

# Override name → (GatewayConfig field, minimum, maximum).
OVERRIDES: dict[str, tuple[str, int, int]] = {
    "maxSpawnDepth": ("max_spawn_depth", 1, 5),
    "maxChildrenPerAgent": ("max_children_per_agent", 1, 100),
    "runTimeoutSeconds": ("subagent_run_timeout_seconds", 0, 7 * 24 * 3600),
    "announceTimeoutMs": ("announce_timeout_ms", 1, 24 * 3600 * 1000),
}


@dataclass(frozen=True)
class SubagentLimits:
    max_spawn_depth: int
    max_children_per_agent: int
    subagent_run_timeout_seconds: int
    announce_timeout_ms: int


def limits_for(agent: Agent | None, config: GatewayConfig) -> SubagentLimits:
    own: dict[str, Any] = (agent.subagent_settings or {}) if agent is not None else {}
    values = {
        field: own[name] if isinstance(own.get(name), int) else getattr(config, field)
        for name, (field, _, _) in OVERRIDES.items()
    }
    return SubagentLimits(**values)


def is_orchestrator(session: Session) -> bool:
    """A sub-agent below its agent's maxSpawnDepth (the current settings decide, 9.6 §1.10)."""
    if session.spawn_depth == 0:
        return False
    return session.spawn_depth < limits_for(session.agent, GatewayConfig.load()).max_spawn_depth


def is_leaf(session: Session) -> bool:
    """A sub-agent at the depth cap: it may not spawn, nor cancel other sessions."""
    return session.spawn_depth > 0 and not is_orchestrator(session)
