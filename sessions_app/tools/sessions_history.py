"""sessions_history (reference §3, api.md §1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from .. import transcript
from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..models import Session
from ..reads import history_read
from ..reads.history_read import MAX_LIMIT
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from ..storage import cold_storage
from .declaration import Boolean, Declaration, Integer, String, Tool
from .shapes import (
    ANY_OBJECT,
    BOOLEAN,
    HISTORY_FLAG_NAMES,
    HISTORY_FLAGS,
    INTEGER,
    MESSAGE,
    STRING,
    array,
    obj,
)

PENDING_INPUTS = obj(
    {"items": array(ANY_OBJECT), "total": INTEGER, "nextBefore": INTEGER},
    ("items", "total"),
    "Admitted inputs not in messages yet (queued) or never (cancelled), newest first.",
)
DEFAULT_LIMIT = 200

DECLARATION = Declaration(
    name="sessions_history",
    policy=Policy(groups=(SESSIONS_GROUP,), orchestrator=True),
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
            "offset",
            "Skip the newest N transcript positions, hidden and tool rows included (paging "
            "backwards; see nextOffset).",
            default=0,
        ),
        String(
            "messageId",
            "Read up to `limit` messages around this message (its `__openclaw.id`); offset is "
            "ignored, and an unknown id gives an empty history.",
            max_length=64,
        ),
        String(
            "sessionId",
            "The transcript generation (sessionId) that holds messageId; only with messageId.",
            max_length=128,
        ),
        Integer(
            "pendingBefore",
            "Page older pending inputs: pass the previous pendingInputs.nextBefore.",
            minimum=1,
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
            "totalMessages": INTEGER,
            "pendingInputs": PENDING_INPUTS,
        },
        ("sessionKey", "messages", *HISTORY_FLAG_NAMES, "totalMessages", "pendingInputs"),
    ),
    rpc="chat.history",
)


@DECLARATION.arguments
@dataclass(frozen=True)
class HistoryArgs:
    sessionKey: str
    limit: int
    includeTools: bool
    offset: int
    messageId: str | None
    sessionId: str | None
    pendingBefore: int | None


def sessions_history(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The transcript of one session (key or sessionId), newest `limit` messages, oldest first.

    toolResult messages are left out unless includeTools; control rows 9.6 hides are always
    left out (history_read.is_hidden). Messages are sanitised and the page is capped at 80 KiB
    (flags truncated, droppedMessages, contentTruncated, contentRedacted, bytes). `offset`
    skips the newest N raw transcript positions; `nextOffset` continues backwards while
    `hasMore`. `messageId` reads around one message instead (9.6 §4.2).
    """
    a = DECLARATION.read(args, HistoryArgs)
    if a.sessionId and not a.messageId:
        raise InvalidArgument("sessionId requires messageId")
    named = resolve_session(requester, a.sessionKey, action="history")
    head: dict[str, Any] = {"sessionKey": keys.display_key(named.key, requester.key_settings)}
    if a.sessionId and a.sessionId != named.session_id:
        named = _earlier_generation(named, a.sessionId)
    session = cold_storage.ensure_hot(named)
    limit = min(a.limit, MAX_LIMIT)
    total = session.last_seq
    pending = history_read.pending_inputs(session, before=a.pendingBefore)
    if a.messageId:
        seq = history_read.seq_of_message_id(a.messageId)
        rows = (
            history_read.around(session, seq, limit=limit, include_tools=a.includeTools)
            if seq is not None
            else []
        )
        bounded = _bound(rows)
        return {
            **head,
            "messages": bounded.messages,
            **bounded.flags(),
            "totalMessages": total,
            "pendingInputs": pending,
        }
    offset = a.offset
    window = history_read.page(session, limit=limit, offset=offset, include_tools=a.includeTools)
    bounded = _bound(window.rows)
    kept = window.rows[len(window.rows) - bounded.kept_from_source :]
    has_more = window.has_more or bounded.kept_from_source < len(window.rows)
    result: dict[str, Any] = {
        **head,
        "messages": bounded.messages,
        **bounded.flags(),
        "offset": offset,
        "hasMore": has_more,
        "totalMessages": total,
        "pendingInputs": pending,
    }
    if has_more:
        result["nextOffset"] = history_read.next_offset(
            offset=offset, total=total, oldest_seq=kept[0].seq if kept else None
        )
    return result


def _earlier_generation(session: Session, session_id: str) -> Session:
    """The transcript `session` had under `session_id` before a reset (9.6 §4.2: an anchor on
    the retained path opens that transcript, without later turns). A reset keeps it as an
    archived session holding the old sessionId, marked `resetOf` its key (session_admin.reset);
    the key's access covers it. Any other sessionId is refused."""
    earlier = Session.objects.filter(session_id=session_id, extra__resetOf=session.key).first()
    if earlier is None:
        raise InvalidArgument("sessionId does not belong to sessionKey")
    return earlier


def _bound(rows: list[transcript.MessageRow]) -> transcript.Bounded:
    return transcript.bound([(history_read.render(r), r.scan_needed) for r in rows])


TOOL = Tool(DECLARATION, sessions_history)
