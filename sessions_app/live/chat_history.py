"""`chat.history` over /ws/ with 9.6's `deltaCursor` (§2.4).

A tail response (no `offset`, no `messageId`) carries an opaque `deltaCursor`: the session's sessionId, the last
seq the caller has seen and whether tool results were included. Passing it back as `cursor`
answers `{kind:"delta", messages, deltaCursor, sessionInfo}` with every message after it (never
a partial page), or `{kind:"reset"}` when the cursor is stale or foreign, the session was reset
(a new sessionId), more than 200 messages came since, or they would not fit the history byte
cap: fetch a normal tail then. Everything else is the sessions_history tool.
"""

from __future__ import annotations

import base64
import binascii

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..models import Message, Session
from ..storage import cold_storage
from ..tools.sessions_history import DECLARATION, TOOL
from ..transcript import bound, message_rows

MAX_DELTA_MESSAGES = 200
PREFIX = "d1"
CURSOR_ONLY = frozenset({"sessionKey", "agentId", "cursor", "includeTools", "limit"})


def encode(session: Session, seq: int, include_tools: bool) -> str:
    raw = f"{PREFIX}|{session.session_id}|{seq}|{int(include_tools)}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str) -> tuple[str, int, bool] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, session_id, seq, tools = raw.split("|")
        if prefix != PREFIX or tools not in ("0", "1") or not seq.isascii():
            return None
        return session_id, int(seq), tools == "1"
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def chat_history(requester: Requester, params: dict) -> dict:
    # The tool's snake_case spellings (session_key, message_id; 9.6 §0) are read here too.
    params = DECLARATION.camel(params)
    if "cursor" in params:
        if "offset" in params or "messageId" in params:
            raise InvalidArgument("cursor cannot be used with offset or messageId")
        return delta(requester, params)
    # A tool call: names the tool does not take are ignored (Declaration.known), as on every
    # way a tool is called.
    result = TOOL.run(requester=requester, args=DECLARATION.known(params))
    # A tail: the newest messages (an anchored read around a messageId is not one).
    if params.get("offset") in (0, None) and not params.get("messageId"):
        # The page is the newest messages: the cursor is the newest seq it holds (0 for an
        # empty page), so anything appended after the read comes in the next delta.
        session = resolve_session(requester, params["sessionKey"], action="history")
        seqs = [m.get("__openclaw", {}).get("seq") for m in result.get("messages", [])]
        seen = max([0, *[s for s in seqs if isinstance(s, int)]])
        result["deltaCursor"] = encode(session, seen, params.get("includeTools") is True)
    return result


def delta(requester: Requester, params: dict) -> dict:
    unknown = sorted(k for k in params if k not in CURSOR_ONLY)
    if unknown:
        raise InvalidArgument(f"Unknown argument for chat.history: {', '.join(unknown)}")
    cursor, raw = params.get("cursor"), params.get("sessionKey")
    if not isinstance(cursor, str) or not cursor or len(cursor) > 512:
        raise InvalidArgument("cursor must be a non-empty string")
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidArgument("sessionKey required")
    session = cold_storage.ensure_hot(resolve_session(requester, raw, action="history"))
    decoded = decode(cursor)
    if decoded is None or decoded[0] != session.session_id or decoded[1] > session.last_seq:
        return {"kind": "reset"}
    _, seen, include_tools = decoded
    rows = Message.objects.filter(session=session, seq__gt=seen).order_by("seq")
    if not include_tools:
        rows = rows.exclude(role="toolResult")
    page = message_rows(rows[: MAX_DELTA_MESSAGES + 1])
    if len(page) > MAX_DELTA_MESSAGES:
        return {"kind": "reset"}
    bounded = bound([(row.payload(), row.scan_needed) for row in page])
    if bounded.dropped_messages:
        return {"kind": "reset"}
    last = max([seen, *[row.seq for row in page]])
    return {
        "kind": "delta",
        "messages": bounded.messages,
        "deltaCursor": encode(session, last, include_tools),
        "sessionInfo": {
            "sessionKey": keys.display_key(session.key, requester.key_settings),
            "sessionId": session.session_id,
            "lastSeq": last,
            "archived": session.archived,
        },
    }
