"""Which tools a run is offered, by name: the names and OpenClaw's groups, the sub-agent and
orchestrator defaults, allow/deny lists and narrowings, and checking a tool-policy setting.

Names only, so the engine and the settings (config, sessions.patch toolOverrides) decide
without importing the tools, which sit above them; tools/__init__.py builds its registry from
ALL_TOOLS, and tools/offer.py turns these names into the schemas a model is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from openclaw_common.errors import InvalidArgument

# Every tool, in the order the tools are offered to a model (one module each in tools/).
ALL_TOOLS = (
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "sessions_send",
    "sessions_spawn",
    "sessions_yield",
    "subagents",
    "agents_list",
    "session_status",
    "sessions",
)
# OpenClaw's tool-policy groups, so an agent's allow/deny lists can say `group:sessions`.
TOOL_GROUPS = {
    "group:sessions": (
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_send",
        "sessions_spawn",
        "subagents",
        "session_status",
        "sessions",
    ),
}
SESSION_TOOLS = TOOL_GROUPS["group:sessions"]
# Sub-agents get the full tool set minus the session tools (seeds). agents_list goes too: it
# only names sessions_spawn targets, and OpenClaw's DEFAULT_SUBAGENT_TOOL_DENY lists it as well.
# sessions_yield stays (9.6 §1.10: never denied; a leaf pauses with it), and a sub-agent below
# maxSpawnDepth is an orchestrator with 9.6's orchestrator tools.
NEVER_DENIED = frozenset({"sessions_yield"})
ORCHESTRATOR_TOOLS = frozenset(
    {
        "sessions_spawn",
        "subagents",
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_yield",
    }
)
SUBAGENT_DEFAULT_DENY = frozenset(ALL_TOOLS) - NEVER_DENIED
# 9.6 §2.3/§1.10: offered only on the owner's turns (an operator key's send, or a message its
# gateway marked senderIsOwner), never to a sub-agent; no allow list can add them to another
# turn. The tool itself refuses a call from any other turn (a model may name what it was not
# offered).
OWNER_ONLY = frozenset({"sessions"})


def _names(values: Iterable[str] | None) -> set[str]:
    names: set[str] = set()
    for value in values or ():
        name = str(value).strip().lower()
        names.update(TOOL_GROUPS.get(name, (name,)))
    return names


def offered_names(
    agent_tools_allow: Iterable[str] | None,
    agent_tools_deny: Iterable[str] | None,
    *,
    is_subagent: bool,
    orchestrator: bool = False,
    subagent_tools: Mapping[str, Any] | None = None,
    owner_turn: bool = False,
    session_overrides: Mapping[str, Any] | None = None,
) -> list[str]:
    """The names of the tools a run of this agent is offered, in ALL_TOOLS order. The same
    answer decides which tool calls of the run may run (tools/offer.call_tool).

    With an empty allow list an agent gets every tool; a sub-agent none of the session tools
    but sessions_yield, or, as an orchestrator (below maxSpawnDepth), 9.6's orchestrator tools.
    A non-empty allow list replaces that default: it names the tools ("*" = all, so an agent can
    give its sub-agents session tools on purpose). The deny list then removes names ("*" = all).
    A sub-agent's list is then narrowed by `subagent_tools` (tools.subagents.tools), any
    session's by its `session_overrides` (sessions.patch toolOverrides), and OWNER_ONLY tools
    are left out unless `owner_turn`.
    """
    allow = _names(agent_tools_allow)
    deny = _names(agent_tools_deny)
    if "*" in allow:
        names = list(ALL_TOOLS)
    elif allow:
        names = [n for n in ALL_TOOLS if n in allow]
    elif orchestrator:
        names = [n for n in ALL_TOOLS if n in ORCHESTRATOR_TOOLS]
    elif is_subagent:
        names = [n for n in ALL_TOOLS if n not in SUBAGENT_DEFAULT_DENY]
    else:
        names = list(ALL_TOOLS)
    if "*" in deny:
        return []
    names = [n for n in names if n not in deny and (owner_turn or n not in OWNER_ONLY)]
    if is_subagent:
        names = narrow(subagent_tools, names)
    if session_overrides:
        names = narrow(session_overrides, names)
    return names


def agent_lists_allow(
    agent_tools_allow: Iterable[str] | None, agent_tools_deny: Iterable[str] | None, name: str
) -> bool:
    """Whether an agent's own tools.allow / tools.deny leave `name` in (before the sub-agent
    default and the narrowings): which setting to name when a call is refused."""
    allow, deny = _names(agent_tools_allow), _names(agent_tools_deny)
    if "*" in deny or name in deny:
        return False
    return not allow or "*" in allow or name in allow


def narrow(policy: Mapping[str, Any] | None, names: Iterable[str]) -> list[str]:
    """An {allow?, deny?} narrowing (tools.subagents.tools, a session's toolOverrides): `deny`
    removes names, then `allow`, when given, keeps only those. It never adds a tool. Both take
    tool names, groups (`group:sessions`) and "*"."""
    policy = policy or {}
    deny, allow = _names(policy.get("deny")), _names(policy.get("allow"))
    if "*" in deny:
        return []
    kept = [n for n in names if n not in deny]
    if allow and "*" not in allow:
        kept = [n for n in kept if n in allow]
    return kept


def clean_tool_policy(path: str, value: Any) -> dict[str, list[str]]:
    """A {allow?, deny?} setting: lists of tool names, `group:<name>` or "*" (checked, so a typo
    is a 400 rather than a filter that silently matches nothing)."""
    if not isinstance(value, Mapping) or set(value) - {"allow", "deny"}:
        raise InvalidArgument(f'{path} must be an object with "allow" and/or "deny"')
    known = {*ALL_TOOLS, *TOOL_GROUPS, "*"}
    cleaned: dict[str, list[str]] = {}
    for part in ("allow", "deny"):
        raw = value.get(part)
        if raw is None:
            continue
        if not isinstance(raw, list) or not all(isinstance(v, str) and v.strip() for v in raw):
            raise InvalidArgument(f"{path}.{part} must be an array of tool names")
        names = [v.strip().lower() for v in raw]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InvalidArgument(
                f"{path}.{part}: unknown tool {unknown[0]!r}; use tool names, groups or *: "
                + ", ".join(sorted(known))
            )
        cleaned[part] = list(dict.fromkeys(names))
    return cleaned
