"""Read RPCs of /ws/ (9.6 §2.4): sessions.preview, sessions.get, sessions.resolve.

Plain functions `(requester, params) -> payload` the consumer runs off the loop. Visibility is
the history guard (`resolve_session(..., action="history")`); a preview of a session the caller
may not see is `missing`, as one that does not exist, so existence is not told.
"""

from __future__ import annotations

import time

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument, NotFound

from ..access import visibility
from ..access.identity import Requester
from ..access.resolve import find_session, forbidden_text, resolve_session
from ..lib.sanitize import redact, redact_message, texts_of
from ..models import Session
from ..storage import cold_storage
from ..transcript import read_page
from .session_rpcs import closed

PREVIEW_KEYS = 64
PREVIEW_LIMIT = 12
PREVIEW_CHARS = 240
GET_LIMIT = 200
GET_MAX = 1000


def integer(params: dict, name: str, *, default: int, minimum: int, maximum: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidArgument(f"{name} must be an integer")
    value = int(value)
    if value < minimum:
        raise InvalidArgument(f"{name} must be at least {minimum}")
    return min(value, maximum)


def preview_items(session: Session, limit: int, max_chars: int) -> list[dict]:
    items = []
    for data, _ in read_page(session, limit=limit, include_tools=True)[0]:
        text = redact(" ".join(t for t in texts_of(data) if t).strip())[0]
        if len(text) > max_chars:
            text = text[: max_chars - 1] + "…"
        items.append({"role": data.get("role"), "text": text})
    return items


def sessions_preview(requester: Requester, params: dict) -> dict:
    """{ts, previews:[{key, status: ok|empty|missing|cold|error, items:[{role, text}]}]}.
    A cold transcript stays cold (9.6): `cold`, no items; sessions.get or chat.history thaw it."""
    closed(params, frozenset({"keys", "limit", "maxChars"}))
    wanted = params.get("keys")
    if not isinstance(wanted, list) or not wanted:
        raise InvalidArgument("keys must be a non-empty array")
    limit = integer(params, "limit", default=PREVIEW_LIMIT, minimum=1, maximum=100)
    max_chars = integer(params, "maxChars", default=PREVIEW_CHARS, minimum=20, maximum=4000)
    policy = visibility.policy_for(requester)
    previews = []
    for raw in wanted[:PREVIEW_KEYS]:
        if not isinstance(raw, str) or not raw.strip() or len(raw) > keys.MAX_KEY_LENGTH:
            previews.append({"key": raw, "status": "error", "items": []})
            continue
        try:
            session, canonical, _ = find_session(requester, raw)
        except InvalidArgument:
            previews.append({"key": raw, "status": "error", "items": []})
            continue
        hidden = session is not None and forbidden_text(
            policy, raw, canonical=canonical, spawned_by=session.spawned_by, action="history"
        )
        if session is None or hidden:
            previews.append({"key": raw, "status": "missing", "items": []})
            continue
        display = keys.display_key(session.key, requester.key_settings)
        if session.cold_at is not None:
            previews.append({"key": display, "status": "cold", "items": []})
            continue
        items = preview_items(session, limit, max_chars)
        previews.append({"key": display, "status": "ok" if items else "empty", "items": items})
    return {"ts": int(time.time() * 1000), "previews": previews}


def sessions_get(requester: Requester, params: dict) -> dict:
    """{messages:[…]}: the session's last `limit` transcript messages, oldest first: as stored
    for an operator key (the owner, who may export raw), credential-like text masked for every
    other caller, as sessions_history and the export mask it (sanitize.redact_message)."""
    closed(params, frozenset({"key", "sessionKey", "agentId", "limit"}))
    raw = params.get("key", params.get("sessionKey"))
    if not isinstance(raw, str) or not raw.strip() or len(raw) > keys.MAX_KEY_LENGTH:
        raise InvalidArgument("key must be a non-empty string")
    limit = integer(params, "limit", default=GET_LIMIT, minimum=1, maximum=GET_MAX)
    session = cold_storage.ensure_hot(resolve_session(requester, raw, action="history"))
    page, _ = read_page(session, limit=limit, include_tools=True)
    if requester.is_operator:
        return {"messages": [message for message, _ in page]}
    return {"messages": [redact_message(message)[0] for message, _ in page]}


def sessions_resolve(requester: Requester, params: dict) -> dict:
    """{ok:true, key, agentId, sessionId, displayName?, label?} for a key, sessionId or label;
    an ambiguous label, or allowMissing with no match, is {ok:false, candidates}."""
    allowed = {"key", "sessionId", "label", "agentId", "allowMissing", "includeGlobal"}
    closed(params, frozenset(allowed | {"includeUnknown", "spawnedBy"}))
    given = [n for n in ("key", "sessionId", "label") if params.get(n) is not None]
    if len(given) != 1:
        raise InvalidArgument("exactly one of key, sessionId or label is required")
    value = params[given[0]]
    if not isinstance(value, str) or not value.strip() or len(value) > keys.MAX_KEY_LENGTH:
        raise InvalidArgument(f"{given[0]} must be a non-empty string")
    agent_id = params.get("agentId")
    if agent_id is not None and (not isinstance(agent_id, str) or not agent_id.strip()):
        raise InvalidArgument("agentId must be a non-empty string")
    allow_missing = params.get("allowMissing") is True
    if given[0] == "label":
        candidates = _by_label(requester, value.strip(), params.get("agentId"))
        if len(candidates) == 1:
            return _resolved(requester, candidates[0])
        rows = [_resolved(requester, s) for s in candidates[:10]]
        if candidates or allow_missing:
            return {"ok": False, "candidates": rows}
        raise NotFound(f"No session found: {value}")
    try:
        session = resolve_session(requester, value, action="list")
    except NotFound:
        if allow_missing:
            return {"ok": False, "candidates": []}
        raise NotFound(f"No session found: {value}") from None
    return _resolved(requester, session)


def _by_label(requester: Requester, label: str, agent_id) -> list[Session]:
    policy = visibility.policy_for(requester)
    rows = Session.objects.active().filter(visibility.visible_filter(policy), label=label)
    if agent_id is not None:
        rows = rows.filter(agent_id=agent_id)
    return list(rows.order_by("-updated_at")[:11])


def _resolved(requester: Requester, session: Session) -> dict:
    row = {
        "ok": True,
        "key": keys.display_key(session.key, requester.key_settings),
        "agentId": session.agent_id,
        "sessionId": session.session_id,
    }
    if session.display_name:
        row["displayName"] = session.display_name
    if session.label:
        row["label"] = session.label
    return row


READ_RPCS = {
    "sessions.preview": sessions_preview,
    "sessions.get": sessions_get,
    "sessions.resolve": sessions_resolve,
}
