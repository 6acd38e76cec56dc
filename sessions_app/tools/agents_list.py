"""agents_list (reference §5.6): the agent ids `sessions_spawn` may target from this session."""

from __future__ import annotations

from typing import Any

from openclaw_common import keys

from .. import model_catalog
from ..identity import Requester
from ..models import Agent
from .declaration import Declaration, Tool
from .shapes import BOOLEAN, STRING, array, obj

DECLARATION = Declaration(
    name="agents_list",
    description="List the agent ids you may use as agentId in sessions_spawn.",
    params=(),
    result=obj(
        {
            "requester": STRING,
            "allowAny": BOOLEAN,
            "agents": array(
                obj(
                    {
                        "id": STRING,
                        "name": STRING,
                        "description": STRING,
                        "configured": BOOLEAN,
                        "model": STRING,
                        "models": array(
                            STRING, "The models sessions_spawn may give it (its catalog)."
                        ),
                    },
                    ("id", "configured"),
                ),
                "The requester's own agent first, then the allowed ones by id.",
            ),
        },
        ("requester", "allowAny", "agents"),
    ),
)


def agents_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """{requester, allowAny, agents: [{id, name?, description?, configured, model?, models}]},
    requester first; `models` is the agent's model catalog (model_catalog.py)."""
    DECLARATION.read(args)
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
        if agent is not None:
            if agent.model:
                row["model"] = agent.model
            row["models"] = model_catalog.catalog(agent, requester.config)
        rows.append(row)
    return {"requester": me, "allowAny": allow_any, "agents": rows}


TOOL = Tool(DECLARATION, agents_list)
