"""A run's own tool calls, the way in for a model: the schemas its turn is offered and each call
it makes, held to that offer (runs/tool_policy.py decides it by name). The engine is handed this
module at start (apps.ready) rather than importing the tools, which sit above it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from django.db import DatabaseError, connection

from openclaw_common.errors import Refusal, ToolError

from .. import store
from ..access.identity import requester_for_session
from ..models import Agent, GatewayConfig, Run
from ..runs import outage
from ..runs.backends.base import ToolSpec
from ..runs.chain import current_run, turn_notes
from ..runs.engine import owner_turn, session_tool_overrides
from ..runs.subagent_limits import is_orchestrator
from ..runs.tool_policy import agent_lists_allow, narrow, offered_names
from . import TOOLS

TOOL_SPECS: dict[str, ToolSpec] = {
    tool.name: ToolSpec(
        name=tool.name,
        description=tool.declaration.description,
        parameters=tool.declaration.parameters(),
    )
    for tool in TOOLS
}


def tools_for(*args: Any, **kwargs: Any) -> list[ToolSpec]:
    """The tools a run of this agent is offered, as fresh schema copies: offered_names' answer
    (same arguments)."""
    return specs_of(offered_names(*args, **kwargs))


def specs_of(names: Iterable[str]) -> list[ToolSpec]:
    """The schemas of these tools, as fresh copies (a backend may change what it is given)."""
    return [_fresh(TOOL_SPECS[n]) for n in names]


def specs_for(run: Run) -> list[ToolSpec]:
    """The schemas the run's turn is offered."""
    return specs_of(offered_tools(run, owner=owner_turn(run)))


def offered_tools(run: Run, *, owner: bool) -> list[str]:
    """The tools the run's agent is offered on this turn (runs/tool_policy.offered_names)."""

    session = run.session
    agent: Agent = session.agent
    return offered_names(
        agent.tools_allow,
        agent.tools_deny,
        is_subagent=session.spawn_depth > 0,
        orchestrator=is_orchestrator(session),
        subagent_tools=GatewayConfig.load().subagent_tools if session.spawn_depth else None,
        owner_turn=owner,
        session_overrides=session_tool_overrides(session),
    )


def call_tool(run: Run, name: str, arguments: dict) -> dict:
    """A tool call made by the run's agent, as its own session, extending the run's chain.
    Refusals and bad arguments come back to the model as {status, error} results."""
    requester = requester_for_session(
        run.session, owner_turn=owner_turn(run), sandboxed=run.sandboxed
    )
    refused = not_offered(run, name)
    if refused:
        return {"status": "forbidden", "error": refused}
    token = current_run.set(run)
    try:
        # A model's arguments are held to what every way in checks (NUL, which PostgreSQL
        # cannot store, and nesting depth): an error result the model can correct.
        store.check_storable(arguments, "arguments")
        details = TOOLS.call(name, requester=requester, args=arguments)
        notes = turn_notes.get()
        if notes is not None and details.get("status") == "yielded":
            notes["acknowledgment"] = str(details.get("acknowledgment") or "")
        return details
    except Refusal as exc:
        return {"status": exc.status, "error": exc.message}
    except ToolError as exc:
        return {"status": "error", "error": exc.message}
    except DatabaseError as exc:
        if not outage.is_connection_lost(exc) or connection.in_atomic_block:
            raise
        outage.reset_connection()
        return {"status": "error", "error": outage.TOOL_ERROR}
    finally:
        current_run.reset(token)


def not_offered(run: Run, name: str) -> str | None:
    """Why the run may not call `name`, a tool it was not offered (a script, or a model naming
    what it was not given, calls what it likes): the setting that left it out. None when it
    was offered, or is not a tool at all (the registry answers "Tool not available"). The
    owner-gated tools answer for themselves, with their own refusal (tools/sessions_tool.py)."""
    if name not in TOOLS or name in offered_tools(run, owner=True):
        return None
    session = run.session
    if session.spawn_depth and not narrow(GatewayConfig.load().subagent_tools, [name]):
        return f"{name} is not allowed for sub-agents (tools.subagents.tools)"
    overrides = session_tool_overrides(session)
    if overrides and not narrow(overrides, [name]):
        return f"{name} is not allowed in this session (toolOverrides)"
    if not agent_lists_allow(session.agent.tools_allow, session.agent.tools_deny, name):
        return f"{name} is not allowed for agent {session.agent_id} (tools.allow/tools.deny)"
    return f"{name} is not offered to a sub-agent at depth {session.spawn_depth}"


# Every turn gets its own copy of the schemas (a backend may change what it is given), and
# copy.deepcopy of them cost ~1 ms a turn: a decode of their JSON costs a few microseconds.
_PARAMETERS_JSON: dict[str, bytes] = {}


def _fresh(spec: ToolSpec) -> ToolSpec:
    encoded = _PARAMETERS_JSON.get(spec.name)
    if encoded is None:
        encoded = _PARAMETERS_JSON[spec.name] = orjson.dumps(spec.parameters)
    return ToolSpec(name=spec.name, description=spec.description, parameters=orjson.loads(encoded))
