"""Which tools a run is offered, by name: OpenClaw's groups, the sub-agent and orchestrator
defaults, allow/deny lists and narrowings, and checking a tool-policy setting.

Names only, so the engine and the settings (config, sessions.patch toolOverrides) decide
without importing the tools, which sit above them: each tool declares its Policy
(tools/declaration.py), the app installs them here at start, and tools/offer.py turns the
names decided here into the schemas a model is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from openclaw_common.errors import InvalidArgument


@dataclass(frozen=True)
class Policy:
    """How the offer treats one tool, declared on the tool (tools/declaration.Declaration.policy)
    so a new tool says it where it is written: the groups an allow/deny list can name it by,
    whether an orchestrator sub-agent gets it by default (9.6's orchestrator tools), whether no
    sub-agent default denies it (9.6 §1.10: sessions_yield), and whether only an owner's turn is
    offered it (9.6 §2.3/§1.10: the `sessions` tool; no allow list adds it to another turn, and
    the tool itself refuses a call from any other turn, since a model may name what it was not
    offered)."""

    groups: tuple[str, ...] = ()
    orchestrator: bool = False
    never_denied: bool = False
    owner_only: bool = False


# OpenClaw's group of the session tools, so an agent's lists can say `group:sessions`.
SESSIONS_GROUP = "group:sessions"


@dataclass(frozen=True)
class Catalog:
    """Every tool's policy by name, in the order the tools are offered to a model: what the
    tools declare, handed down at start (install), since the tools sit above this module."""

    policies: Mapping[str, Policy]

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(self.policies)

    @cached_property
    def groups(self) -> dict[str, tuple[str, ...]]:
        groups: dict[str, list[str]] = {}
        for name, policy in self.policies.items():
            for group in policy.groups:
                groups.setdefault(group, []).append(name)
        return {group: tuple(names) for group, names in groups.items()}

    def having(self, trait: str) -> frozenset[str]:
        return frozenset(n for n, p in self.policies.items() if getattr(p, trait))

    @cached_property
    def orchestrator(self) -> frozenset[str]:
        return self.having("orchestrator")

    @cached_property
    def owner_only(self) -> frozenset[str]:
        return self.having("owner_only")

    @cached_property
    def subagent_default_deny(self) -> frozenset[str]:
        """Sub-agents get the full tool set minus the session tools (seeds). agents_list goes
        too: it only names sessions_spawn targets, and OpenClaw's DEFAULT_SUBAGENT_TOOL_DENY
        lists it as well. What is never denied stays (a leaf pauses with sessions_yield)."""
        return frozenset(self.names) - self.having("never_denied")


_catalog: Catalog | None = None


def install(policies: Mapping[str, Policy]) -> None:
    """Take the tools' declared policies, in offer order: the app does it once at start
    (apps.ready), in every process, as it hands the engine the tools."""
    global _catalog
    _catalog = Catalog(dict(policies))


def catalog() -> Catalog:
    if _catalog is None:
        raise RuntimeError("no tool policies: SessionsAppConfig.ready() installs them")
    return _catalog


def _names(values: Iterable[str] | None) -> set[str]:
    groups = catalog().groups
    names: set[str] = set()
    for value in values or ():
        name = str(value).strip().lower()
        names.update(groups.get(name, (name,)))
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
    """The names of the tools a run of this agent is offered, in offer order. The same
    answer decides which tool calls of the run may run (tools/offer.call_tool).

    With an empty allow list an agent gets every tool; a sub-agent none of the session tools
    but sessions_yield, or, as an orchestrator (below maxSpawnDepth), 9.6's orchestrator tools.
    A non-empty allow list replaces that default: it names the tools ("*" = all, so an agent can
    give its sub-agents session tools on purpose). The deny list then removes names ("*" = all).
    A sub-agent's list is then narrowed by `subagent_tools` (tools.subagents.tools), any
    session's by its `session_overrides` (sessions.patch toolOverrides), and owner-only tools
    are left out unless `owner_turn`. Which tools are which: each tool's declared Policy.
    """
    tools = catalog()
    allow = _names(agent_tools_allow)
    deny = _names(agent_tools_deny)
    if "*" in allow:
        names = list(tools.names)
    elif allow:
        names = [n for n in tools.names if n in allow]
    elif orchestrator:
        names = [n for n in tools.names if n in tools.orchestrator]
    elif is_subagent:
        names = [n for n in tools.names if n not in tools.subagent_default_deny]
    else:
        names = list(tools.names)
    if "*" in deny:
        return []
    names = [n for n in names if n not in deny and (owner_turn or n not in tools.owner_only)]
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
    tools = catalog()
    known = {*tools.names, *tools.groups, "*"}
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
