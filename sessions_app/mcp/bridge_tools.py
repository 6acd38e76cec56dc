"""OpenClaw's `mcp serve` tools (spec 9.6 §7): conversations, their messages, attachments, events
and sending, with OpenClaw's names, parameters (snake_case), result shapes and texts.

They are declared like every tool (tools/declaration.py) so arguments are read and refused with
the same texts, and they are built on the registry's own tools and functions: sessions_list for
what a key may see, sessions_history for messages, resolve_session for one session, the
delivery outbox for sending. MCP-only: they are not offered to agents' runs (not in
tools.NAMES).

A *conversation* is a session with a stored route (a channel and a recipient, `deliveryContext`
→ `last*` → the channel → `origin.provider`); other sessions are not conversations.
Message ids are the transcript's entry ids (the JSONL export's `id`: the seq as 8 hex digits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from openclaw_common import keys
from openclaw_common.errors import NotFound

from .. import transcript
from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..delivery import targets
from ..delivery.outbox import enqueue_delivery
from ..lib import sanitize
from ..lib.jsontext import dumps_pretty
from ..models import Message, Session
from ..reads import list_enrichment
from ..rows import session_row
from ..storage import cold_storage
from ..store import append_to_session, read_messages
from ..tools import TOOLS
from ..tools.declaration import Boolean, Declaration, Integer, String, Tool
from ..tools.shapes import ANY_OBJECT, MESSAGE, NULLABLE_INTEGER, STRING, array, obj
from . import events
from .conversations import conversation_of, message_id

LIST_PAGE = 200  # sessions_list's own ceiling
LIST_PAGES = 5  # conversations are a subset of sessions: look through this many pages at most

SESSION_KEY = String(
    "session_key", "The conversation's session key.", required=True, max_length=keys.MAX_KEY_LENGTH
)

CONVERSATION = obj(
    {
        "sessionKey": STRING,
        "channel": STRING,
        "to": STRING,
        "accountId": STRING,
        "threadId": STRING,
        "label": STRING,
        "displayName": STRING,
        "derivedTitle": STRING,
        "lastMessagePreview": STRING,
        "updatedAt": NULLABLE_INTEGER,
    },
    ("sessionKey", "channel", "to", "updatedAt"),
)


def _session_conversation(session: Session, requester: Requester) -> dict | None:
    row = session_row(session, settings=requester.key_settings)
    conversation = conversation_of(row)
    if conversation is None:
        # The origin's provider is the last fallback for the channel (targets.py reads it).
        target = targets.target_from_context(session)
        if target is not None:
            conversation = conversation_of(
                {**row, "lastChannel": target.channel, "lastTo": target.to}
            )
    return conversation


# --- conversations_list -----------------------------------------------------------------------

CONVERSATIONS_LIST = Declaration(
    name="conversations_list",
    description=(
        "List the conversations you can see (sessions with a channel route), most recently "
        "active first."
    ),
    params=(
        Integer("limit", "Maximum conversations (1-500, default 50).", minimum=1, default=50),
        String("search", "Text to find in the key, label or display name.", max_length=200),
        String("channel", "Only this channel (case-insensitive).", max_length=64),
        Boolean(
            "includeDerivedTitles",
            "Title from the first user message (default true).",
            default=True,
        ),
        Boolean("includeLastMessage", "Preview of the last message (default true).", default=True),
    ),
    result=obj({"conversations": array(CONVERSATION)}, ("conversations",)),
)


@CONVERSATIONS_LIST.arguments
@dataclass(frozen=True)
class ConversationsListArgs:
    limit: int
    search: str | None
    channel: str | None
    includeDerivedTitles: bool
    includeLastMessage: bool


def conversations_list(*, requester: Requester, args: Any) -> dict:
    a = CONVERSATIONS_LIST.read(args, ConversationsListArgs)
    limit = min(a.limit, 500)
    channel = (a.channel or "").lower()
    found: list[tuple[dict, dict]] = []
    offset = 0
    for _ in range(LIST_PAGES):
        page = TOOLS.call(
            "sessions_list",
            requester=requester,
            args={
                "limit": LIST_PAGE,
                "offset": offset,
                "search": a.search,
            },
        )
        for row in page["sessions"]:
            conversation = conversation_of(row)
            if conversation and (not channel or conversation["channel"].lower() == channel):
                found.append((conversation, row))
        if len(found) >= limit or not page["hasMore"]:
            break
        offset = page["nextOffset"]
    found = found[:limit]
    # sessions_list's own derivedTitle / lastMessagePreview, for every conversation returned.
    sessions = {
        str(s.session_id): s
        for s in Session.objects.filter(session_id__in=[row["sessionId"] for _, row in found]).only(
            "pk", "session_id", "last_seq"
        )
    }
    wanted = list(sessions.values())
    titles = list_enrichment.derived_titles(wanted) if a.includeDerivedTitles else {}
    previews = list_enrichment.last_previews(wanted) if a.includeLastMessage else {}
    out = []
    for conversation, row in found:
        session = sessions.get(row["sessionId"])
        if session is not None and session.pk in titles:
            conversation["derivedTitle"] = titles[session.pk]
        if session is not None and session.pk in previews:
            conversation["lastMessagePreview"] = previews[session.pk]
        out.append(conversation)
    return {"conversations": out}


# --- conversation_get -------------------------------------------------------------------------

CONVERSATION_GET = Declaration(
    name="conversation_get",
    description="One conversation by session key.",
    params=(SESSION_KEY,),
    result=obj({"conversation": CONVERSATION}, ("conversation",)),
)


@CONVERSATION_GET.arguments
@dataclass(frozen=True)
class ConversationGetArgs:
    session_key: str


def conversation_get(*, requester: Requester, args: Any) -> dict:
    a = CONVERSATION_GET.read(args, ConversationGetArgs)
    session = resolve_session(requester, a.session_key, action="history")
    conversation = _session_conversation(session, requester)
    if conversation is None:
        raise NotFound(f"conversation not found: {a.session_key}")
    return {"conversation": conversation}


# --- messages_read ----------------------------------------------------------------------------

MESSAGES_READ = Declaration(
    name="messages_read",
    description="The latest messages of one conversation, oldest first (raw transcript messages).",
    params=(
        SESSION_KEY,
        Integer("limit", "Maximum messages (1-200, default 20).", minimum=1, default=20),
    ),
    result=obj({"messages": array(MESSAGE)}, ("messages",)),
)


@MESSAGES_READ.arguments
@dataclass(frozen=True)
class MessagesReadArgs:
    session_key: str
    limit: int


def messages_read(*, requester: Requester, args: Any) -> dict:
    a = MESSAGES_READ.read(args, MessagesReadArgs)
    history = TOOLS.call(
        "sessions_history",
        requester=requester,
        args={"sessionKey": a.session_key, "limit": min(a.limit, 200), "includeTools": True},
    )
    return {"messages": history["messages"]}


# --- attachments_fetch ------------------------------------------------------------------------

ATTACHMENTS_FETCH = Declaration(
    name="attachments_fetch",
    description=(
        "The non-text content of one message (images, files, media), by its message id "
        "(messageId of an event; the transcript entry id)."
    ),
    params=(
        SESSION_KEY,
        String("message_id", "The message's id.", required=True, max_length=64),
        Integer(
            "limit", "Kept for OpenClaw compatibility (1-200, default 100).", minimum=1, default=100
        ),
    ),
    result=obj({"attachments": array(ANY_OBJECT), "message": MESSAGE}, ("attachments", "message")),
)


@ATTACHMENTS_FETCH.arguments
@dataclass(frozen=True)
class AttachmentsFetchArgs:
    session_key: str
    message_id: str
    limit: int


def _seq_of_id(raw: str) -> int | None:
    try:
        seq = int(raw, 16)
    except ValueError:
        return None
    return seq if 0 < seq < 2**31 else None


def attachments_fetch(*, requester: Requester, args: Any) -> dict:
    a = ATTACHMENTS_FETCH.read(args, AttachmentsFetchArgs)
    session = cold_storage.ensure_hot(resolve_session(requester, a.session_key, action="history"))
    seq = _seq_of_id(a.message_id)
    rows = transcript.message_rows(Message.objects.filter(session=session, seq=seq)) if seq else []
    if not rows:
        raise NotFound(f"message not found: {a.message_id}")
    message = sanitize.sanitize_message(
        rows[0].payload(), sanitize.Flags(), scan=rows[0].scan_needed
    )
    content = message.get("content")
    blocks = (
        [b for b in content if isinstance(b, dict) and b.get("type") != "text"]
        if isinstance(content, list)
        else []
    )
    # Imported OpenClaw transcripts may carry media outside the content blocks (kept as sent).
    media = message.get("media") or message.get("attachments")
    if isinstance(media, list):
        blocks += [{"type": "openclaw_media", "media": m} for m in media if isinstance(m, dict)]
    return {"attachments": blocks, "message": message}


# --- messages_send ----------------------------------------------------------------------------

MESSAGES_SEND = Declaration(
    name="messages_send",
    description=(
        "Send a text message into a conversation over its stored route (the channel it came "
        "from). It is added to the transcript and delivered by the outbox."
    ),
    params=(
        SESSION_KEY,
        String("text", "The message.", required=True, min_length=1, max_length=100_000),
    ),
    result=obj({"result": ANY_OBJECT}, ("result",)),
)


@MESSAGES_SEND.arguments
@dataclass(frozen=True)
class MessagesSendArgs:
    session_key: str
    text: str


def messages_send(*, requester: Requester, args: Any) -> dict:
    """Append the text as an assistant message and hand it to the outbox in one transaction (the
    send policy decides there: a denied send is stored `blocked`, not delivered)."""
    a = MESSAGES_SEND.read(args, MessagesSendArgs)
    with transaction.atomic():
        session = resolve_session(requester, a.session_key, action="send")
        if _session_conversation(session, requester) is None:
            raise NotFound(f"Conversation not found for session {a.session_key}")
        message = {"role": "assistant", "content": [{"type": "text", "text": a.text}]}
        first, _ = append_to_session(session, read_messages([message]))
        delivery = enqueue_delivery(session=session, text=a.text, kind="message")
    result = {
        "messageId": message_id(first),
        "messageSeq": first,
        "deliveryId": delivery.pk,
        "status": delivery.status,
        "channel": delivery.channel,
        "to": delivery.to,
    }
    if delivery.last_error:
        result["error"] = delivery.last_error
    return {"result": result}


# --- the table ---------------------------------------------------------------------------------

TOOLS_BY_NAME = {
    tool.name: tool
    for tool in (
        Tool(CONVERSATIONS_LIST, conversations_list),
        Tool(CONVERSATION_GET, conversation_get),
        Tool(MESSAGES_READ, messages_read),
        Tool(ATTACHMENTS_FETCH, attachments_fetch),
        events.POLL_TOOL,
        events.WAIT_TOOL,
        Tool(MESSAGES_SEND, messages_send),
    )
}
BRIDGE_TOOLS = tuple(TOOLS_BY_NAME.values())


def result_text(name: str, details: dict) -> str | None:
    """OpenClaw's text for a bridge tool's result (None: not a bridge tool)."""
    if name == "conversations_list":
        return f"conversations: {len(details['conversations'])}\n\n{dumps_pretty(details)}"
    if name == "messages_read":
        return f"messages: {len(details['messages'])}\n\n{dumps_pretty(details)}"
    if name == "attachments_fetch":
        return f"attachments: {len(details['attachments'])}"
    if name == "events_poll":
        return f"events: {len(details['events'])}"
    if name == "conversation_get":
        return f"conversation {details['conversation']['sessionKey']}"
    if name == "messages_send":
        return "sent"
    if name == "events_wait":
        return events.wait_text(details)
    return None
