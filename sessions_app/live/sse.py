"""`GET /api/v1/sessions/{key}/history/?follow=1` (or `Accept: text/event-stream`): the history
page, then every appended message, as Server-Sent Events (reference §3.5, docs/live.md).

    retry: 1000
    event: history        {sessionKey, messages, hasMore, nextCursor?, ...flags}
    id: <seq>
    event: message        {sessionKey, messageSeq, message}
    event: delta          {sessionKey, afterSeq, type, offset, delta} (streaming text, no id)
    event: subagent       {sessionKey, childSessionKey, taskId, label, state, status, ...}
    : keepalive           every KEEPALIVE_SECONDS
    event: error          {code, reason}, then the stream ends (access revoked, slow reader)

A client that reconnects with `Last-Event-ID: <seq>` gets exactly the messages after that seq and
no history event. The DRF view authenticates and resolves the session, then hands back a
StreamingHttpResponse over the async generator below: it runs on the server's event loop and
holds no thread while it waits.
"""

from __future__ import annotations

import contextlib
import re

import orjson
from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from openclaw_common.dbstep import release_connection
from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..lib.jsontext import dumps_bytes
from . import limits
from .hub import Hub
from .subscribers import Close, Event, Followed, Subscriber

MEDIA_TYPE = "text/event-stream"
_LAST_EVENT_ID = re.compile(r"[0-9]{1,16}")


class EventStreamRenderer(BaseRenderer):
    """Lets DRF's content negotiation accept `Accept: text/event-stream` on the history view.
    The stream itself is a StreamingHttpResponse; errors before it starts render as JSON."""

    media_type = MEDIA_TYPE
    format = "event-stream"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if renderer_context and renderer_context.get("response") is not None:
            renderer_context["response"]["Content-Type"] = "application/json"
        return b"" if data is None else dumps_bytes(data)


def wanted(request, follow: bool) -> bool:
    accept = request.headers.get("Accept", "")
    return follow or any(
        part.split(";")[0].strip() == MEDIA_TYPE for part in accept.split(",") if part
    )


def last_event_id(request) -> int | None:
    raw = request.headers.get("Last-Event-ID")
    if raw is None or raw.strip() == "":
        return None
    if not _LAST_EVENT_ID.fullmatch(raw.strip()):
        raise InvalidArgument("Last-Event-ID must be a non-negative integer")
    return int(raw)


def frame(event: str, data: bytes | str, *, event_id: int | None = None) -> bytes:
    text = data.decode() if isinstance(data, bytes) else data
    head = f"id: {event_id}\n" if event_id is not None else ""
    # JSON text has no raw newlines, so one data line carries it.
    return f"{head}event: {event}\ndata: {text}\n\n".encode()


def history_stream(
    *,
    requester: Requester,
    api_key_id: int | None,
    followed: Followed,
    history: dict | None,
) -> StreamingHttpResponse:
    subscriber = Subscriber(requester, api_key_id=api_key_id)
    # The view's queries are done and the stream reads nothing itself (the hub has its own
    # thread and connection): without this, every open stream would keep a pooled connection
    # until it ends (openclaw_common.dbstep).
    release_connection()
    response = StreamingHttpResponse(
        _events(subscriber, followed, history), content_type=MEDIA_TYPE
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
    return response


async def _events(subscriber: Subscriber, followed: Followed, history: dict | None):
    hub = Hub.current()
    hub.add(subscriber)
    hub.follow(subscriber, followed)
    keepalive = limits.get("KEEPALIVE_SECONDS")
    try:
        yield b"retry: 1000\n\n"
        if history is not None:
            yield frame("history", orjson.dumps(history))
        while True:
            item = await subscriber.next(keepalive)
            if item is None:
                yield b": keepalive\n\n"
            elif isinstance(item, Event) and item.name == "session.subagent":
                yield frame("subagent", item.payload)  # no id: a state, not a message to resume
            elif isinstance(item, Event) and item.name == "session.delta":
                yield frame("delta", item.payload)  # no id: not a row, never replayed
            elif isinstance(item, Event):
                yield frame("message", item.payload, event_id=item.message_seq)
            elif isinstance(item, Close):
                yield frame("error", orjson.dumps({"code": item.code, "reason": item.reason}))
                return
    finally:
        # Also on client disconnect: the server cancels this generator (CancelledError).
        with contextlib.suppress(Exception):
            hub.remove(subscriber)
