"""sessions_history (reference §3, api.md §1), and the page reader the HTTP history endpoint shares."""

from __future__ import annotations

from typing import Any

from openclaw_common import keys

from .. import transcript
from ..identity import Requester
from ..models import Session
from ..resolve import resolve_session
from .declaration import Boolean, Declaration, Integer, String, Tool
from .shapes import (
    BOOLEAN,
    HISTORY_FLAG_NAMES,
    HISTORY_FLAGS,
    INTEGER,
    MESSAGE,
    STRING,
    array,
    obj,
)

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000

DECLARATION = Declaration(
    name="sessions_history",
    description=(
        "Fetch the transcript of one session (oldest first, newest `limit` messages). "
        "Tool results are left out unless includeTools is true."
    ),
    params=(
        String(
            "sessionKey",
            'Session key or sessionId from sessions_list; "main" is your main session.',
            required=True,
            max_length=keys.MAX_KEY_LENGTH,
        ),
        Integer(
            "limit",
            f"Maximum messages (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
            minimum=1,
            default=DEFAULT_LIMIT,
        ),
        Boolean("includeTools", "Include toolResult messages (default false)."),
        Integer(
            "offset", "Skip the newest N messages (paging backwards; see nextOffset).", default=0
        ),
    ),
    result=obj(
        {
            "sessionKey": STRING,
            "messages": array(MESSAGE, "Oldest first."),
            **HISTORY_FLAGS,
            "offset": INTEGER,
            "hasMore": BOOLEAN,
            "nextOffset": INTEGER,
        },
        ("sessionKey", "messages", *HISTORY_FLAG_NAMES, "offset", "hasMore"),
    ),
    group="sessions",
    rpc="chat.history",
)


def sessions_history(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The transcript of one session (key or sessionId), newest `limit` messages, oldest first.

    toolResult messages are left out unless includeTools. Messages are sanitised and the page is
    capped at 80 KiB (flags truncated, droppedMessages, contentTruncated, contentRedacted, bytes).
    `offset` skips the newest N messages; `nextOffset` continues backwards while `hasMore`.
    """
    a = DECLARATION.read(args)
    offset = a.offset
    session = resolve_session(requester, a.sessionKey, action="history")
    page = history_page(
        session, limit=min(a.limit, MAX_LIMIT), include_tools=a.includeTools, offset=offset
    )
    result: dict[str, Any] = {
        "sessionKey": keys.display_key(session.key, requester.key_settings),
        "messages": page["messages"],
        **page["flags"],
        "offset": offset,
        "hasMore": page["hasMore"],
    }
    if page["hasMore"]:
        result["nextOffset"] = offset + page["kept"]
    return result


TOOL = Tool(DECLARATION, sessions_history)


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
