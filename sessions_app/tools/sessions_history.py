"""sessions_history (reference §3, api.md §1), and the page reader the HTTP history endpoint shares."""

from __future__ import annotations

from typing import Any

from .. import keys, transcript
from ..args import Args
from ..identity import Requester
from ..models import Session
from ..resolve import resolve_session

ARGS = frozenset({"sessionKey", "limit", "includeTools", "offset"})
DEFAULT_LIMIT = 200
MAX_LIMIT = 1000


def sessions_history(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The transcript of one session (key or sessionId), newest `limit` messages, oldest first.

    toolResult messages are left out unless includeTools. Messages are sanitised and the page is
    capped at 80 KiB (flags truncated, droppedMessages, contentTruncated, contentRedacted, bytes).
    `offset` skips the newest N messages; `nextOffset` continues backwards while `hasMore`.
    """
    a = Args(args, ARGS, tool="sessions_history")
    raw = a.string("sessionKey", required=True, max_length=keys.MAX_KEY_LENGTH)
    limit = min(a.integer("limit", minimum=1, default=DEFAULT_LIMIT), MAX_LIMIT)
    include_tools = a.boolean("includeTools", default=False)
    offset = a.integer("offset", minimum=0, default=0)

    session = resolve_session(requester, raw, action="history")
    page = history_page(session, limit=limit, include_tools=include_tools, offset=offset)
    result = {
        "sessionKey": keys.display_key(session.key, requester.key_settings),
        "messages": page["messages"],
        **page["flags"],
        "offset": offset,
        "hasMore": page["hasMore"],
    }
    if page["hasMore"]:
        result["nextOffset"] = offset + page["kept"]
    return result


def history_page(
    session: Session,
    *,
    limit: int,
    include_tools: bool,
    offset: int = 0,
    before_seq: int | None = None,
) -> dict:
    """One bounded page: {messages, flags, hasMore, kept, firstSeq}. Access is the caller's job."""
    rows, has_more = transcript.read_page(
        session, limit=limit, include_tools=include_tools, offset=offset, before_seq=before_seq
    )
    bounded = transcript.bound(rows)
    kept_rows = rows[len(rows) - bounded.kept_from_source :] if rows else []
    return {
        "messages": bounded.messages,
        "flags": bounded.flags(),
        # Messages the byte cap dropped are still to be read: the next page starts at them.
        "hasMore": has_more or bounded.kept_from_source < len(rows),
        "kept": bounded.kept_from_source,
        "firstSeq": transcript.seq_of(kept_rows[0][0]) if kept_rows else None,
    }
