"""Who is calling: an API key resolved to the requester session it acts as (api.md §4).

Every tool takes a Requester. Adapters build it with `requester_for()`, which enforces the
key's scope, agent and pin, and loads the gateway settings once per request.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, InvalidArgument, Unauthenticated

from ..models import Agent, ApiKey, GatewayConfig, Session
from . import key_cache


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or "\x00" in token:
        return None
    return token.strip()


def authenticate(authorization: str | None) -> ApiKey:
    """The usable API key an `Authorization` header carries (from this process's cache while
    nothing changed, access/key_cache.py). Raises Unauthenticated."""
    token = bearer_token(authorization)
    api_key = key_cache.authenticate(token) if token else None
    if api_key is None:
        raise Unauthenticated()
    return api_key


def authenticate_cached(authorization: str | None) -> ApiKey | None:
    """authenticate() when this process can answer without the database: the key, or None
    when only the database can tell. Raises Unauthenticated for what is no key at all."""
    token = bearer_token(authorization)
    found = key_cache.cached(token) if token else None
    if found is None:
        raise Unauthenticated()
    return found if isinstance(found, ApiKey) else None


@dataclass(frozen=True)
class Requester:
    session_key: str  # canonical internal key of the caller's session
    agent_id: str
    sandboxed: bool
    scope: str
    config: GatewayConfig
    api_key_id: int | None = None
    # An agent key's default session; a connection that becomes sandboxed while acting as
    # another session is closed (live/hub.py), as requester_for would now refuse it.
    home_key: str = ""
    # Set for a model run's own tool calls: whether the turn's input came from the gateway's
    # owner (runs/engine.owner_turn). None for an API principal, whose key's scope decides.
    owner_turn: bool | None = None

    @property
    def key_settings(self) -> keys.KeySettings:
        return self.config.key_settings

    @property
    def is_operator(self) -> bool:
        return self.scope == ApiKey.OPERATOR


def requester_for(
    api_key: ApiKey,
    *,
    session_key: str | None = None,
    agent_id: str | None = None,
    config: GatewayConfig | None = None,
) -> Requester:
    """The session `api_key` acts as. Raises AccessDenied or InvalidArgument.

    - operator: any session; default the main session of `agent_id` or of the default agent;
    - agent: only sessions of its agent; a pinned key only its pinned session (the default);
    - ingest: may not act as a session (it creates sessions and appends messages only).
    """
    read = api_key.take_settings()  # what authenticate() read with the key, if it did
    config = config or (read[0] if read else None) or GatewayConfig.load()
    settings = config.key_settings
    if api_key.scope == ApiKey.INGEST:
        raise AccessDenied("An ingest key cannot act as a session; use an agent or operator key")

    if agent_id is not None:
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise InvalidArgument("agentId must be a non-empty string")
        if len(agent_id) > 64:
            raise InvalidArgument("agentId must be at most 64 characters")
        agent_id = keys.normalize_agent_id(agent_id)

    if api_key.scope == ApiKey.AGENT:
        own_agent = api_key.agent_id
        assert own_agent is not None  # apikey_agent_scope_has_agent: an agent key has its agent
        if agent_id is not None and agent_id != own_agent:
            raise AccessDenied(f"This API key belongs to agent {own_agent}, not {agent_id}")
        agent_id = own_agent
        default_key = api_key.session_key or _home_session(own_agent, settings)
    else:
        agent_id = agent_id or settings.default_agent_id
        default_key = keys.main_session_key(agent_id, settings)

    if session_key is None:
        canonical = default_key
    else:
        if not isinstance(session_key, str):
            raise InvalidArgument("sessionKey must be a string")
        try:
            canonical = keys.canonical_key(session_key, agent_id=agent_id, settings=settings)
        except keys.InvalidKey as exc:
            raise InvalidArgument(f"sessionKey: {exc}") from None

    owner = session_owner(canonical, settings)
    if api_key.scope == ApiKey.AGENT:
        if owner != api_key.agent_id:
            raise AccessDenied(f"This API key may not act as session {canonical}")
        if api_key.session_key and canonical != api_key.session_key:
            raise AccessDenied(f"This API key is pinned to session {api_key.session_key}")

    agent_sandboxed = _agent_sandboxed(api_key, owner, read[1:] if read else None)
    if agent_sandboxed is None:
        raise InvalidArgument(f"agent not found: {owner}")
    sandboxed = bool(api_key.sandboxed or agent_sandboxed)
    if (
        sandboxed
        and api_key.scope == ApiKey.AGENT
        and canonical != default_key
        and not spawned_under(canonical, default_key)
    ):
        # The sandbox clamp is relative to the acting session: a sandboxed key that could name
        # any session of its agent would read that session's transcript as "itself".
        raise AccessDenied(
            f"This sandboxed API key may act only as {default_key} or a session spawned under "
            f"it, not {canonical}"
        )
    return Requester(
        session_key=canonical,
        agent_id=owner,
        sandboxed=sandboxed,
        scope=api_key.scope,
        config=config,
        api_key_id=api_key.pk,
        home_key=default_key if api_key.scope == ApiKey.AGENT else "",
    )


def _agent_sandboxed(
    api_key: ApiKey, agent_id: str, default: tuple[str, bool | None] | None
) -> bool | None:
    """Whether agent `agent_id` is sandboxed; None when there is no such agent. The key's own
    agent and the default agent (`default`: as authenticate() read it) need no query."""
    if api_key.agent_id == agent_id and api_key.agent is not None:
        return bool(api_key.agent.sandboxed)
    if default is not None and default[0] == agent_id:
        return default[1]
    found = Agent.objects.filter(pk=agent_id).values_list("sandboxed", flat=True).first()
    return None if found is None else bool(found)


def session_owner(canonical: str, settings: keys.KeySettings) -> str:
    """The agent a stored key belongs to: the reserved keys (`global`, `unknown`) are the
    default agent's, as the store files them."""
    if canonical in keys.RESERVED_KEYS:
        return settings.default_agent_id
    return keys.agent_id_of(canonical)


def _home_session(agent_id: str, settings: keys.KeySettings) -> str:
    """An agent key's default session: its agent's main session. Under `session.scope=global`
    that is the reserved `global`, which only the default agent acts as; another agent's key
    then defaults to its own `agent:<id>:<mainKey>`."""
    home = keys.main_session_key(agent_id, settings)
    if home in keys.RESERVED_KEYS and agent_id != settings.default_agent_id:
        return f"agent:{agent_id}:{settings.main_key}"
    return home


MAX_SPAWN_CHAIN = 64  # spawnDepth is at most 32; a longer chain is a cycle in imported data


def spawned_under(key: str, ancestor: str) -> bool:
    """Whether session `key` was spawned, directly or through sub-agents, by `ancestor`."""
    seen: set[str] = set()
    while key and key not in seen and len(seen) < MAX_SPAWN_CHAIN:
        seen.add(key)
        parent = Session.objects.filter(key=key).values_list("spawned_by", flat=True).first()
        if not parent:
            return False
        if parent == ancestor:
            return True
        key = parent
    return False


def requester_for_session(
    session,
    *,
    config: GatewayConfig | None = None,
    owner_turn: bool = False,
    sandboxed: bool = False,
) -> Requester:
    """The Requester of an agent acting as its own session (tool calls made during a run);
    `owner_turn`: the run's input came from the gateway's owner; `sandboxed`: a sandboxed key
    started the run (Run.sandboxed), which is then clamped as the key is, as is every run of a
    sandboxed agent."""
    return Requester(
        session_key=session.key,
        agent_id=session.agent_id,
        sandboxed=bool(session.agent.sandboxed) or sandboxed,
        scope=ApiKey.AGENT,
        config=config or GatewayConfig.load(),
        owner_turn=owner_turn,
    )


VIEWER = "viewer"


def requester_for_user(user, *, config: GatewayConfig | None = None) -> Requester:
    """A signed-in team member (the transcript browser, the admin): reads every session.

    Team members see sessions as the admin's Viewers group does, whatever the agents' own
    visibility settings, so the requester gets visibility `all` with agent-to-agent open. It
    is read-only: the live endpoints built on it list, read and follow; they never send.
    """
    if not (user and user.is_active and user.has_perm("sessions_app.view_session")):
        raise AccessDenied("This account may not view sessions")
    base = config or GatewayConfig.load()
    config = copy.copy(base)
    config.visibility, config.a2a_enabled, config.a2a_allow = "all", True, []
    settings = config.key_settings
    agent_id = settings.default_agent_id
    return Requester(
        session_key=keys.main_session_key(agent_id, settings),
        agent_id=agent_id,
        sandboxed=False,
        scope=VIEWER,
        config=config,
    )


def api_key_fields(
    *,
    scope: str,
    agent: Agent | None = None,
    session_key: str = "",
    sandboxed: bool = False,
    name: str = "",
    config: GatewayConfig | None = None,
) -> dict:
    """The fields of a new API key, checked and with the pinned session in canonical form: the
    rules every way of creating a key shares (the admin, `create_api_key`). Raises
    InvalidArgument."""
    if scope not in {ApiKey.OPERATOR, ApiKey.INGEST, ApiKey.AGENT}:
        raise InvalidArgument("scope must be operator, ingest or agent")
    if scope != ApiKey.AGENT:
        if agent is not None or session_key or sandboxed:
            raise InvalidArgument("An agent, a pinned session and sandboxed go with agent keys.")
        return {"name": name, "scope": scope, "agent": None, "session_key": "", "sandboxed": False}
    if agent is None:
        raise InvalidArgument("An agent-scoped key needs an agent.")
    pinned = ""
    if session_key:
        settings = (config or GatewayConfig.load()).key_settings
        try:
            pinned = keys.canonical_key(session_key, agent_id=agent.id, settings=settings)
        except keys.InvalidKey as exc:
            raise InvalidArgument(f"session: {exc}") from None
        if keys.agent_id_of(pinned) != agent.id:
            raise InvalidArgument(f"Session {pinned} does not belong to agent {agent.id}.")
    return {
        "name": name,
        "scope": scope,
        "agent": agent,
        "session_key": pinned,
        "sandboxed": bool(sandboxed),
    }


def create_api_key(**fields) -> tuple[ApiKey, str]:
    """A new key from `api_key_fields(**fields)`: (row, plaintext shown once)."""
    return ApiKey.generate(**api_key_fields(**fields))
