"""agents_list (reference §5.6): the agent ids `sessions_spawn` may target from this session."""

from __future__ import annotations

from typing import Any

from .. import keys
from ..args import Args
from ..identity import Requester
from ..models import Agent


def agents_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """{requester, allowAny, agents: [{id, name?, description?, configured}]}, requester first."""
    Args(args, frozenset(), tool="agents_list")
    configured = {a.id: a for a in Agent.objects.all()}
    me = requester.agent_id
    allow = [str(x).strip() for x in (configured[me].allow_agents if me in configured else [])]
    allow_any = "*" in allow
    allowed = set(configured) if allow_any else {keys.normalize_agent_id(x) for x in allow if x}
    allowed.add(me)
    rest = sorted(allowed - {me}, key=str.casefold)
    rows = []
    for agent_id in [me, *rest]:
        row: dict = {"id": agent_id}
        agent = configured.get(agent_id)
        if agent and agent.name:
            row["name"] = agent.name
        if agent and agent.description:
            row["description"] = agent.description
        row["configured"] = agent is not None
        rows.append(row)
    return {"requester": me, "allowAny": allow_any, "agents": rows}
