"""Turning a tool's `sessionKey` argument into a Session the requester may use (reference §1.3, §7).

Order, as OpenClaw: resolve the reference (key, else sessionId) → sandbox spawned check →
visibility guard for the action. Errors carry OpenClaw's exact texts.
"""

from __future__ import annotations

from openclaw_common import keys
from openclaw_common.errors import Forbidden, InvalidArgument, NotFound

from ..lib import rawsql
from ..models import Session
from . import visibility
from .identity import Requester


def not_found_text(raw: str) -> str:
    return f"Session not found: {raw} (use the full sessionKey from sessions_list)"


def sandbox_hidden_text(raw: str) -> str:
    return f"Session not visible from this sandboxed agent session: {raw}"


def canonical_for(requester: Requester, raw: str) -> str:
    """Internal key for `raw`: "main" is the caller's own main session, bare keys the default agent's."""
    try:
        return keys.canonical_key(raw, agent_id=requester.agent_id, settings=requester.key_settings)
    except keys.InvalidKey as exc:
        raise InvalidArgument(f"sessionKey: {exc}") from None


def forbidden_text(
    policy: visibility.Policy, raw: str, *, canonical: str, spawned_by: str, action: str
) -> str | None:
    """Why `policy` may not `action` the session `canonical`, or None: the sandbox's spawned
    check, then the visibility guard. Also used to re-check live subscriptions."""
    is_self = canonical == policy.requester_key
    if policy.restrict_to_spawned and not is_self and spawned_by != policy.requester_key:
        return sandbox_hidden_text(raw)
    return visibility.check(
        policy, target_key=canonical, target_spawned_by=spawned_by, action=action
    )


def find_session(requester: Requester, raw: str) -> tuple[Session | None, str, bool]:
    """(session or None, canonical key, resolved_by_key). No access checks."""
    text = raw.strip()
    key_like = keys.looks_like_session_key(text) and not keys.looks_like_session_id(text)
    canonical = canonical_for(requester, text)
    # Plain SQL: every history, send and status call starts here (rawsql says why).
    session = rawsql.first(Session, "t.key = %s", [canonical])
    if session is not None or key_like:
        return session, canonical, True
    # A UUID, or text that does not look like a key: try it as a sessionId.
    session_id = keys.normalize_session_id(text)
    if session_id is None:
        return None, canonical, False
    session = rawsql.first(Session, "t.session_id = %s", [session_id])
    return session, (session.key if session else canonical), False


def resolve_session(requester: Requester, raw: str, *, action: str) -> Session:
    """The Session named by `raw` that `requester` may `action` ("history", "send").

    Raises Forbidden (visibility, sandbox) or NotFound.
    """
    policy = visibility.policy_for(requester)
    session, canonical, by_key = find_session(requester, raw)
    if session is None and not by_key:
        raise (
            Forbidden(sandbox_hidden_text(raw))
            if policy.restrict_to_spawned
            else NotFound(not_found_text(raw))
        )
    spawned_by = session.spawned_by if session else ""
    denied = forbidden_text(policy, raw, canonical=canonical, spawned_by=spawned_by, action=action)
    if denied:
        raise Forbidden(denied)
    if session is None:
        raise NotFound(not_found_text(raw))
    return session


def resolve_session_id(requester: Requester, raw: str, *, action: str) -> Session:
    """The Session whose sessionId is `raw` (never read as a key), with resolve_session's checks
    and texts: the transcript's URL names it this way."""
    policy = visibility.policy_for(requester)
    session_id = keys.normalize_session_id(raw)
    session = Session.objects.filter(session_id=session_id).first() if session_id else None
    if session is None:
        raise (
            Forbidden(sandbox_hidden_text(raw))
            if policy.restrict_to_spawned
            else NotFound(not_found_text(raw))
        )
    denied = forbidden_text(
        policy, raw, canonical=session.key, spawned_by=session.spawned_by, action=action
    )
    if denied:
        raise Forbidden(denied)
    return session
