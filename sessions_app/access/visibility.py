"""Who may see which session (reference §7): a pure decision plus the SQL form of it for lists.

`check()` decides for one target and returns the exact OpenClaw error text, or None.
`visible_q()` expresses the same rules as a filter, so lists stay one query and `limit` counts
only rows the caller may see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from django.db.models import Q

from openclaw_common import keys

from ..models import Agent

VISIBILITIES = ("self", "tree", "agent", "all")
ACTIONS = {
    # action: (error prefix, A2A noun, A2A disabled tail)
    "list": ("Session list", "listing", "allow cross-agent visibility."),
    "history": ("Session history", "history", "allow cross-agent access."),
    "send": ("Session send", "messaging", "allow cross-agent sends."),
    "search": ("Session search", "search", "allow cross-agent access."),
    "status": ("Session status", "status", "allow cross-agent access."),
}


@dataclass(frozen=True)
class Policy:
    requester_key: str
    requester_agent: str
    visibility: str  # effective, after the sandbox clamp
    restrict_to_spawned: bool
    a2a_enabled: bool
    a2a_allow: tuple[str, ...]
    default_agent: str = keys.DEFAULT_AGENT_ID  # owns the reserved keys (global, unknown)


def effective_visibility(
    configured: str | None, *, sandboxed: bool, sandbox_visibility: str
) -> str:
    """Configured visibility (default tree); a sandboxed caller under `spawned` is clamped to tree."""
    value = (configured or "").strip().lower()
    if value not in VISIBILITIES:
        value = "tree"
    if sandboxed and (sandbox_visibility or "spawned") == "spawned" and value != "tree":
        return "tree"
    return value


def policy_for(requester) -> Policy:
    config = requester.config
    sandbox_visibility = config.sandbox_visibility or "spawned"
    return Policy(
        requester_key=requester.session_key,
        requester_agent=requester.agent_id,
        visibility=effective_visibility(
            config.visibility, sandboxed=requester.sandboxed, sandbox_visibility=sandbox_visibility
        ),
        restrict_to_spawned=(
            requester.sandboxed
            and sandbox_visibility == "spawned"
            and not keys.is_subagent_key(requester.session_key)
        ),
        a2a_enabled=config.a2a_enabled is True,
        a2a_allow=tuple(str(p) for p in (config.a2a_allow or [])),
        default_agent=requester.key_settings.default_agent_id,
    )


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern:
    body = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(f"^{body}$", re.IGNORECASE)


def _matches(pattern: str, agent_id: str) -> bool:
    pattern = pattern.strip()
    if pattern == "*":
        return True
    if "*" in pattern:
        return bool(_glob(pattern).match(agent_id))
    return pattern == agent_id  # exact and case-sensitive, as OpenClaw does


def a2a_allowed(policy: Policy, source: str, target: str) -> bool:
    """`tools.agentToAgent`: both agents must match some allow entry; an empty list allows all."""
    if source == target:
        return True
    if not policy.a2a_enabled:
        return False
    if not policy.a2a_allow:
        return True
    return any(_matches(p, source) for p in policy.a2a_allow) and any(
        _matches(p, target) for p in policy.a2a_allow
    )


def target_agent(key: str, default_agent: str = keys.DEFAULT_AGENT_ID) -> str:
    """The agent a session belongs to; the reserved keys are the default agent's, as stored."""
    return default_agent if key in keys.RESERVED_KEYS else keys.agent_id_of(key)


ACP_CHILD_MARK = ":acp:"


def owned_acp_child(policy: Policy, *, key: str, spawned_by: str) -> bool:
    """9.6 §2: an ACP child (`agent:<harness>:acp:<uuid>`) its requester spawned stays reachable
    across agents under tree/all, even with agent-to-agent off (docs/acp.md)."""
    return (
        policy.visibility in ("tree", "all")
        and not policy.restrict_to_spawned
        and spawned_by == policy.requester_key
        and ACP_CHILD_MARK in key
    )


def check(
    policy: Policy, *, target_key: str, target_spawned_by: str = "", action: str
) -> str | None:
    """The forbidden text for `action` on `target_key`, or None when it is visible."""
    prefix, noun, tail = ACTIONS[action]
    target = target_agent(target_key, policy.default_agent)
    if target != policy.requester_agent and not owned_acp_child(
        policy, key=target_key, spawned_by=target_spawned_by
    ):
        if policy.visibility != "all":
            return (
                f"{prefix} visibility is restricted. Set tools.sessions.visibility=all "
                "to allow cross-agent access."
            )
        if not policy.a2a_enabled:
            return (
                f"Agent-to-agent {noun} is disabled. Set tools.agentToAgent.enabled=true to {tail}"
            )
        if not a2a_allowed(policy, policy.requester_agent, target):
            return f"Agent-to-agent {noun} denied by tools.agentToAgent.allow."
        return None
    if policy.visibility == "self" and target_key != policy.requester_key:
        return (
            f"{prefix} visibility is restricted to the current session "
            "(tools.sessions.visibility=self)."
        )
    if (
        policy.visibility == "tree"
        and target_key != policy.requester_key
        and (target_spawned_by != policy.requester_key)
    ):
        return (
            f"{prefix} visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree)."
        )
    return None


def visible_q(policy: Policy, *, agent_ids: list[str] | None = None) -> Q:
    """The sessions `policy` may list, as a filter. `agent_ids` (all agents) is needed for `all`."""
    own = Q(agent_id=policy.requester_agent)
    if policy.restrict_to_spawned:
        # A sandboxed session lists only what it spawned (reference §2.2 step 2: spawnedBy filter).
        return own & Q(spawned_by=policy.requester_key)
    if policy.visibility == "self":
        return Q(key=policy.requester_key)
    acp_children = Q(spawned_by=policy.requester_key, key__contains=ACP_CHILD_MARK)
    if policy.visibility == "tree":
        return own & (Q(key=policy.requester_key) | Q(spawned_by=policy.requester_key)) | (
            acp_children
        )
    if policy.visibility == "agent":
        return own
    others = [
        a
        for a in (agent_ids or [])
        if a != policy.requester_agent and a2a_allowed(policy, policy.requester_agent, a)
    ]
    if agent_ids and len(others) == len(set(agent_ids) - {policy.requester_agent}):
        # Every agent is visible: no filter at all, so the list walks the activity index instead
        # of sorting every visible session (an OR over agents defeats the index).
        return Q()
    return own | Q(agent_id__in=others) | acp_children if others else own | acp_children


def activity_branches(policy: Policy) -> list[Q] | None:
    """visible_q() as disjoint filters whose union it is, where its OR would make a list read
    the whole activity index (or every match and sort them) to find a page: `tree` is the
    session itself, then its children, read newest first from `session_active_children`
    (a parent with 10,000 children among a million sessions: 392 ms as one OR, 1.1 ms as
    this union; BENCHMARKS.md). None where visible_q() is already one index range."""
    if policy.restrict_to_spawned or policy.visibility != "tree":
        return None
    own = Q(agent_id=policy.requester_agent)
    key = policy.requester_key
    children = Q(spawned_by=key) & ~Q(key=key) & (own | Q(key__contains=ACP_CHILD_MARK))
    return [own & Q(key=key), children]


def can_list(policy: Policy, *, key: str, agent_id: str, spawned_by: str) -> bool:
    """visible_q() for one session, in Python (live `sessions.changed` events)."""
    if key in keys.RESERVED_KEYS:
        return False
    own = agent_id == policy.requester_agent
    if policy.restrict_to_spawned:
        return own and spawned_by == policy.requester_key
    if policy.visibility == "self":
        return key == policy.requester_key
    if owned_acp_child(policy, key=key, spawned_by=spawned_by):
        return True
    if policy.visibility == "tree":
        return own and (key == policy.requester_key or spawned_by == policy.requester_key)
    if policy.visibility == "agent" or own:
        return own
    return a2a_allowed(policy, policy.requester_agent, agent_id)


def visible_filter(policy: Policy) -> Q:
    """visible_q(), reading the agent ids only when the allow list needs them: with
    `all`, agent-to-agent on and an allow list that admits everyone (empty or "*"), every agent
    is visible and the list needs no agent filter (and no query to find that out)."""
    if policy.visibility == "all" and policy.a2a_enabled and not policy.restrict_to_spawned:
        if not policy.a2a_allow or any(p.strip() == "*" for p in policy.a2a_allow):
            return Q()
        return visible_q(policy, agent_ids=list(Agent.objects.values_list("id", flat=True)))
    return visible_q(policy)
