"""Loop safety (beyond OpenClaw): every send and spawn carries a chain id and the agents it passed
through; a hop back to an earlier agent (A→B→C→A) is refused, and a chain has a turn cap.

The cap (`session.agentToAgent.maxChainTurns`) bounds one conversation between agents: a send,
its reply steps and announce, and the sends those turns make. A spawn starts a chain of its own
for the child (same path, so loops are still refused): sub-agent trees are bounded by 9.6's
limits (maxSpawnDepth, maxChildrenPerAgent, maxConcurrent) instead, so a fan-out of 50 children
is not mistaken for a 50-turn conversation. A completion turn is a new stimulus for its
requester, like a person's message: it starts a chain too, on the requester's path."""

from __future__ import annotations

import contextvars
import uuid
from dataclasses import dataclass

from openclaw_common.errors import Forbidden

from ..models import GatewayConfig, Run

# The run whose agent is calling a tool right now (set by the engine around a backend turn), so
# a sessions_send or sessions_spawn made by an agent extends that run's chain.
current_run: contextvars.ContextVar[Run | None] = contextvars.ContextVar(
    "current_run", default=None
)
# The messages that run's turn has produced so far and not yet stored (its assistant tool calls
# and their results; the backend appends to this list): a sessions_spawn with context="fork"
# copies them with the stored transcript (9.6 §4.4: "including the current turn").
current_turn_messages: contextvars.ContextVar[list[dict] | None] = contextvars.ContextVar(
    "current_turn_messages", default=None
)
# What a turn's tool calls tell the engine about the turn (sessions_yield's acknowledgment).
turn_notes: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "openclaw_turn_notes", default=None
)


@dataclass(frozen=True)
class Chain:
    id: uuid.UUID
    agents: tuple[str, ...]

    def as_fields(self) -> dict:
        return {"chain_id": self.id, "chain_agents": list(self.agents)}


def continue_chain(run: Run) -> Chain:
    """The same chain, for a follow-up step of a run (ping-pong, announce)."""
    return Chain(run.chain_id, tuple(run.chain_agents))


def next_hop(
    *, tool: str, from_agent: str, to_agent: str, config: GatewayConfig, spawn: bool = False
) -> Chain:
    """The chain for a new hop from `from_agent` to `to_agent`. Raises Forbidden on a loop or
    (a send) when the chain has used its turns. Outside a run, a new chain starts; a spawn
    always starts one, on the extended path."""
    parent = current_run.get()
    if parent is None:
        return Chain(
            uuid.uuid4(), (from_agent, to_agent) if from_agent != to_agent else (from_agent,)
        )
    path = tuple(parent.chain_agents) or (from_agent,)
    if to_agent != from_agent and to_agent in path:
        loop = " → ".join((*path, to_agent))
        raise Forbidden(f"{tool} refused: this hop would close an agent loop ({loop})")
    hop = path if path[-1] == to_agent else (*path, to_agent)
    if spawn:
        return Chain(uuid.uuid4(), hop)
    check_turns(parent.chain_id, config=config, tool=tool)
    return Chain(parent.chain_id, hop)


def requester_chain(spawner: Run | None, agent_id: str) -> Chain:
    """A new chain for a turn the system gives a requester (a completion turn), on the path of
    the requester's run that spawned the child, or starting at the requester's agent."""
    if spawner is not None and spawner.chain_agents:
        return Chain(uuid.uuid4(), tuple(spawner.chain_agents))
    return Chain(uuid.uuid4(), (agent_id,))


def turns_used(chain_id: uuid.UUID) -> int:
    return Run.objects.filter(chain_id=chain_id).count()


def check_turns(chain_id: uuid.UUID, *, config: GatewayConfig, tool: str) -> None:
    cap = config.chain_max_turns
    if turns_used(chain_id) >= cap:
        raise Forbidden(
            f"{tool} refused: this agent chain has used its {cap} turns "
            "(session.agentToAgent.maxChainTurns)"
        )
