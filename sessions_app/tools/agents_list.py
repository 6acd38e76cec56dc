"""agents_list (reference §5.6): the agent ids `sessions_spawn` may target from this session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openclaw_common import keys

from ..access.identity import Requester
from ..models import Agent
from ..runs import model_catalog
from ..runs.tool_policy import Policy
from .declaration import Declaration, Tool
from .shapes import BOOLEAN, STRING, array, obj

# Where an agent's runtime comes from (9.6 §4.5 names more: env, defaults, provider, session,
# session-key; none of those can set it here).
RUNTIME_SOURCES = ("agent", "implicit")
IMPLICIT_BACKEND = {"type": "scripted"}

DECLARATION = Declaration(
    name="agents_list",
    policy=Policy(),
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
                        "model": {
                            "type": "string",
                            "description": "The model it runs by default, provider/model.",
                        },
                        "agentRuntime": obj(
                            {
                                "id": STRING,
                                "source": {"type": "string", "enum": list(RUNTIME_SOURCES)},
                            },
                            ("id", "source"),
                        ),
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


@DECLARATION.arguments
@dataclass(frozen=True)
class AgentsListArgs:
    pass


def agents_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """{requester, allowAny, agents: [{id, name?, description?, configured, model?,
    agentRuntime?, models?}]}, requester first; `models` is the agent's model catalog
    (model_catalog.py). Configured agents carry `model` (provider/model, when one is known) and
    `agentRuntime` {id, source} (9.6 §4.5)."""
    DECLARATION.read(args, AgentsListArgs)
    configured = {a.id: a for a in Agent.objects.all()}
    me = requester.agent_id
    allow = [str(x).strip() for x in (configured[me].allow_agents if me in configured else [])]
    allow_any = "*" in allow
    allowed = set(configured) if allow_any else {keys.normalize_agent_id(x) for x in allow if x}
    allowed.add(me)
    rest = sorted(allowed - {me}, key=str.casefold)
    harnesses = set(requester.config.acp_agents or {})
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
            model = default_model(agent)
            if model:
                row["model"] = model
            row["agentRuntime"] = agent_runtime(agent, harnesses)
            row["models"] = model_catalog.catalog(agent, requester.config)
        rows.append(row)
    return {"requester": me, "allowAny": allow_any, "agents": rows}


TOOL = Tool(DECLARATION, agents_list)


def provider_of(agent: Agent) -> str:
    """The provider a bare model id goes to: the backend that serves the agent."""
    return str((agent.backend or {}).get("type") or "scripted")


def default_model(agent: Agent) -> str:
    """The model the agent's runs use when nobody names one, as provider/model: the agent's own
    model, else its backend's; the scripted backend answers as `scripted` (backends/scripted.py).
    Empty when no model is set (an openai backend without one cannot run)."""
    backend = agent.backend or {}
    model = agent.model or str(backend.get("model") or "")
    if not model and provider_of(agent) == "scripted":
        model = "scripted"
    if not model:
        return ""
    return model if "/" in model else f"{provider_of(agent)}/{model}"


def agent_runtime(agent: Agent, harnesses: set[str]) -> dict[str, str]:
    """What runs the agent's turns: an ACP harness (acp.agents names the agent), else its model
    backend, set on the agent (`backend.type`) or left to the default (implicit, scripted)."""
    if agent.id in harnesses:
        return {"id": "acp", "source": "agent"}
    backend = agent.backend or {}
    if backend in ({}, IMPLICIT_BACKEND):  # what clean_backend stores when none was given
        return {"id": "scripted", "source": "implicit"}
    return {"id": str(backend.get("type") or "scripted"), "source": "agent"}
