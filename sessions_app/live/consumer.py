"""`/ws/`: OpenClaw gateway frames over a WebSocket (docs/live.md).

Client → server: `{type:"req", id, method, params}`; server → client: `{type:"res", id, ok,
payload|error}` and `{type:"event", event, payload, seq}` (seq counts this connection's events).

Who is calling, in order: an `Authorization: Bearer <api key>` header on the upgrade request; the
browser's Django session (then the Origin must be one of ours: a cookie rides along on
cross-site WebSockets); or a first `connect` request carrying `params.auth.token`. Never a
query-string token: those end up in access logs.

This is a plain ASGI app rather than a Channels consumer: it needs no channel-layer channel of
its own (the process's hub has the one subscription to Redis), and it controls its writes: one
writer task drains the connection's bounded outbox, so a slow reader stalls only itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from importlib import import_module
from typing import Any
from urllib.parse import urlsplit

import orjson
from asgiref.sync import sync_to_async
from channels.auth import get_user
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.http import parse_cookie
from django.http.request import split_domain_port, validate_host

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, InvalidArgument, ToolError, Unauthenticated

from ..access.identity import Requester, requester_for, requester_for_user
from ..access.resolve import canonical_for, resolve_session
from ..access.source_limit import source_of_scope
from ..api import door, gate, ratelimit
from ..lib.args import closed
from ..lib.jsontext import dumps_bytes
from ..models import ApiKey
from ..storage import cold_storage
from ..store import check_storable
from ..tools import TOOLS
from . import chat_history, limits, session_reads, session_rpcs
from .hub import Hub
from .subscribers import Close, Event, Followed, Subscriber

log = logging.getLogger("openclaw.live")

# Close codes (4000–4999 are the application's own).
UNAUTHORIZED, FORBIDDEN, SLOW = 4401, 4403, 4008
TOO_BIG, UNSUPPORTED = 1009, 1003
CLOSE_GRACE_SECONDS = 2.0


def in_thread(fn):
    """Run ORM code off the loop on the shared pool, with a fresh connection check each time."""

    def run(*args, **kwargs):
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(run, thread_sensitive=False)


class RequestError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


async def websocket_app(scope, receive, send):
    await Connection(scope, receive, send).serve()


class Connection:
    def __init__(self, scope, receive, send):
        self.scope, self.receive, self.send = scope, receive, send
        self.subscriber = Subscriber()
        self.hub: Hub | None = None
        self.event_seq = 0
        self.auth_kind = ""
        self.credential: str | None = None  # an API key's Authorization, admitted per request
        self.source = source_of_scope(scope)  # the client's address (access/source_limit.py)

    @property
    def requester(self) -> Requester:
        """Who the client is. call() lets no method but `connect` run before it is known, and
        `connect` authenticates first."""
        requester = self.subscriber.requester
        assert requester is not None
        return requester

    @property
    def joined_hub(self) -> Hub:
        """The hub serve() joined before the read loop hands over any request."""
        assert self.hub is not None
        return self.hub

    # --- lifecycle ----------------------------------------------------------------------------

    async def serve(self) -> None:
        if (await self.receive())["type"] != "websocket.connect":
            return
        try:
            await self.authenticate_handshake()
        except RequestError as exc:
            log.info("websocket refused: %s", exc.message)
            if exc.code == "rate_limited" and self.can_answer_http():
                await self.send_429(exc.message)
            else:  # refused before the upgrade: the client sees HTTP 403
                await self.send({"type": "websocket.close", "code": FORBIDDEN})
            return
        await self.send({"type": "websocket.accept"})
        self.hub = Hub.current()
        self.hub.add(self.subscriber)
        loop = asyncio.get_running_loop()
        reader = asyncio.create_task(self.read_loop())
        writer = asyncio.create_task(self.write_loop())
        # A close we decide on (slow reader, revoked key) is written by the writer; if the
        # socket is so stuck that even that cannot go out, stop waiting after a grace period.
        self.subscriber.on_close = lambda: loop.call_later(CLOSE_GRACE_SECONDS, writer.cancel)
        timers = []

        def auth_timed_out() -> None:
            if self.subscriber.requester is None:
                self.subscriber.close(UNAUTHORIZED, "authentication timed out")

        if self.subscriber.requester is None:
            timers.append(loop.call_later(limits.get("AUTH_TIMEOUT_SECONDS"), auth_timed_out))
        try:
            done, _ = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
            if writer in done and not reader.done():
                # We closed: give the client a moment to answer the close handshake.
                await asyncio.wait({reader}, timeout=CLOSE_GRACE_SECONDS)
        finally:
            for timer in timers:
                timer.cancel()
            self.hub.remove(self.subscriber)
            for task in (reader, writer):
                task.cancel()
            for task in (reader, writer):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def read_loop(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message["type"] == "websocket.receive" and self.subscriber.closing is None:
                await self.on_frame(message)

    async def write_loop(self) -> None:
        while True:
            # No timeout: the server pings idle WebSockets itself.
            item = await self.subscriber.next()
            if isinstance(item, Close):
                await self.send(
                    {"type": "websocket.close", "code": item.code, "reason": item.reason}
                )
                return
            if isinstance(item, Event):
                self.event_seq += 1
                text = (
                    f'{{"type":"event","event":"{item.name}","payload":{item.payload},'
                    f'"seq":{self.event_seq}}}'
                )
            else:
                text = item.decode()
            await self.send({"type": "websocket.send", "text": text})

    # --- authentication -------------------------------------------------------------------------

    def header(self, name: bytes) -> str | None:
        for key, value in self.scope.get("headers", ()):
            if key == name:
                return value.decode("latin-1")
        return None

    async def authenticate_handshake(self) -> None:
        authorization = self.header(b"authorization")
        if authorization is not None:
            await self.authenticate_key(authorization, self.header(b"x-openclaw-session-key"))
            return
        user = await self.session_user()
        if user is not None and user.is_authenticated:
            if not self.origin_allowed():
                raise RequestError("forbidden", "cross-origin WebSocket with a browser session")
            try:
                requester = await in_thread(requester_for_user)(user)
            except AccessDenied as exc:
                raise RequestError("forbidden", exc.message) from None
            self.subscriber.identify(requester, user_id=user.pk)
            self.auth_kind = "session"

    async def session_user(self):
        """The signed-in user of the browser's Django session cookie, if any.

        Read here once rather than through Channels' AuthMiddlewareStack, whose session wrapper
        would sit in front of every frame this connection sends."""
        cookie = self.header(b"cookie")
        if not cookie:
            return None
        session_key = parse_cookie(cookie).get(settings.SESSION_COOKIE_NAME)
        if not session_key:
            return None
        # Through the door as an API key is: a flood of made-up cookies costs a bounded number
        # of session lookups at a time.
        async with self.through_the_door(f"Session {session_key}") as ticket:
            store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
            # Channels' get_user: the session's user, if its auth hash still matches.
            user = await get_user({"session": store})
            ticket.checked(bool(user and user.is_authenticated))
            return user

    @contextlib.asynccontextmanager
    async def through_the_door(self, credential: str) -> AsyncIterator[door.Ticket]:
        """door.passage, its refusal as this protocol's rate_limited error."""
        try:
            async with door.passage(credential, self.source) as ticket:
                yield ticket
        except door.Refused as exc:
            raise RequestError("rate_limited", str(exc)) from None

    def origin_allowed(self) -> bool:
        origin = self.header(b"origin")
        if not origin:
            return False
        host = urlsplit(origin).netloc
        if host and host == self.header(b"host"):
            return True
        domain, _port = split_domain_port(host)
        return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)

    def can_answer_http(self) -> bool:
        return "websocket.http.response" in self.scope.get("extensions", {})

    async def send_429(self, message: str) -> None:
        """Refuse the upgrade with the API's 429 (the ASGI denial-response extension)."""
        await door.send_429(self.send, ratelimit.too_many_body(message), websocket=True)

    async def authenticate_key(self, authorization: str, session_key: str | None) -> None:
        # The API's door (api/door.py) around the key lookup, for the upgrade's header and a
        # connect frame's token alike: a burst of them, or of distinct bad keys, costs no more
        # lookups at a time than over HTTP. Waits as the door does, then is refused.
        async with self.through_the_door(authorization) as ticket:
            await self._identify(authorization, session_key, {door.TICKET: ticket})

    async def _identify(self, authorization: str, session_key: str | None, scope: dict) -> None:
        def identify():
            try:
                api_key = gate.admit(authorization, scope, source=self.source)
            except Unauthenticated as exc:
                raise RequestError("unauthorized", exc.message) from None
            except ToolError as exc:  # over its rate
                raise RequestError(exc.error_type, exc.message) from None
            if api_key.scope == ApiKey.INGEST:
                raise RequestError("forbidden", "An ingest key cannot subscribe to sessions")
            try:
                return api_key, requester_for(api_key, session_key=session_key)
            except ToolError as exc:
                raise RequestError(exc.error_type, exc.message) from None

        api_key, requester = await in_thread(identify)()
        self.subscriber.identify(requester, api_key_id=api_key.pk)
        self.credential = authorization
        self.auth_kind = "apiKey"

    # --- requests -------------------------------------------------------------------------------

    async def on_frame(self, message: dict) -> None:
        text = message.get("text")
        if text is None:
            self.subscriber.close(UNSUPPORTED, "binary frames are not supported")
            return
        limit = limits.get("MAX_FRAME_BYTES")
        if len(text) > limit or len(text.encode()) > limit:
            self.subscriber.close(TOO_BIG, f"frame too large (max {limit} bytes)")
            return
        request_id = None
        try:
            try:
                frame = orjson.loads(text)
            except orjson.JSONDecodeError:
                raise RequestError("invalid_request", "frame must be JSON") from None
            if not isinstance(frame, dict):
                raise RequestError("invalid_request", "frame must be a JSON object")
            request_id = frame.get("id")
            if not isinstance(request_id, str) or not 0 < len(request_id) <= 128:
                request_id = None
                raise RequestError("invalid_request", "id must be a string of 1 to 128 characters")
            if frame.get("type") != "req":
                raise RequestError("invalid_request", 'type must be "req"')
            method = frame.get("method")
            params = frame.get("params", {})
            if params is None:
                params = {}
            if not isinstance(method, str):
                raise RequestError("invalid_request", "method must be a string")
            if not isinstance(params, dict):
                raise RequestError("invalid_request", "params must be an object")
            payload = await self.call(method, params)
        except RequestError as exc:
            self.respond(request_id, error={"code": exc.code, "message": exc.message})
        except ToolError as exc:
            error: dict[str, Any] = {"code": exc.error_type, "message": exc.message}
            if exc.details:
                error["details"] = exc.details  # 9.6's {code, message, details?} frame
            self.respond(request_id, error=error)
        except DatabaseError:
            log.warning("websocket request failed on the database", exc_info=True)
            error = {"code": "unavailable", "message": "database unavailable, try again"}
            self.respond(request_id, error=error)
        else:
            self.respond(request_id, payload=payload)

    def respond(self, request_id, *, payload: Any = None, error: dict | None = None) -> None:
        frame = {"type": "res", "id": request_id, "ok": error is None}
        frame.update({"error": error} if error is not None else {"payload": payload})
        # dumps_bytes, not orjson.dumps: a stored value orjson cannot encode (255 levels deep)
        # must not end the connection's read loop.
        self.subscriber.reply(dumps_bytes(frame))

    async def call(self, method: str, params: dict):
        if method == "connect":
            check_storable(params, "params")
            return await self.connect(params)
        if self.subscriber.requester is None:
            # The API's one 401 text (a connect frame's params.auth.token is the other way in).
            raise RequestError("unauthorized", Unauthenticated.TEXT)
        handler = METHODS.get(method)
        if handler is None:
            raise RequestError("unknown_method", f"unknown method: {method}")
        if self.credential is not None:
            # Each request frame is an API request of its key, admitted as each HTTP request
            # and MCP call is (api/gate.py): an open socket is no way round a revocation or
            # the key's rate.
            await in_thread(self.readmit)()
        # As the HTTP ways in check a decoded body: no NUL (which PostgreSQL cannot store) and
        # no nesting past the depth limit reach a function.
        check_storable(params, "params")
        return await handler(self, params)

    def readmit(self) -> None:
        try:
            api_key = gate.admit(self.credential, source=self.source)
        except Unauthenticated as exc:
            raise RequestError("unauthorized", exc.message) from None
        if api_key.pk != self.subscriber.api_key_id:  # (a key is one row for ever)
            raise RequestError("unauthorized", Unauthenticated.TEXT)

    async def connect(self, params: dict) -> dict:
        only(params, {"auth", "sessionKey", "client", "minProtocol", "maxProtocol"})
        if self.subscriber.requester is None:
            auth = params.get("auth")
            token = auth.get("token") if isinstance(auth, dict) else None
            if not isinstance(token, str) or not token:
                raise RequestError("unauthorized", Unauthenticated.TEXT)
            session_key = params.get("sessionKey")
            if session_key is not None and not isinstance(session_key, str):
                raise InvalidArgument("sessionKey must be a string")
            await self.authenticate_key(f"Bearer {token}", session_key)
        requester = self.requester
        return {
            "type": "hello-ok",
            "auth": self.auth_kind,
            "sessionKey": keys.display_key(requester.session_key, requester.key_settings),
            "limits": {
                "maxFrameBytes": limits.get("MAX_FRAME_BYTES"),
                "maxSubscriptions": limits.get("MAX_SUBSCRIPTIONS"),
                "outboxFrames": self.subscriber.max_frames,
            },
        }

    def check_room(self) -> None:
        cap = limits.get("MAX_SUBSCRIPTIONS")
        if self.subscriber.subscriptions >= cap:
            raise RequestError("limit", f"too many subscriptions on this connection (max {cap})")

    async def sessions_subscribe(self, params: dict) -> dict:
        only(params, set())
        if not self.subscriber.follows_changes:
            self.check_room()
            self.joined_hub.follow_changes(self.subscriber)
        return {"subscribed": True}

    async def sessions_unsubscribe(self, params: dict) -> dict:
        only(params, set())
        was = self.subscriber.follows_changes
        self.joined_hub.follow_changes(self.subscriber, False)
        return {"unsubscribed": was}

    async def messages_subscribe(self, params: dict) -> dict:
        only(params, {"key", "since", "includeTools"})
        raw = key_param(params)
        since = params.get("since")
        if since is not None and (
            not isinstance(since, int) or isinstance(since, bool) or not 0 <= since < 2**53
        ):
            raise InvalidArgument("since must be a non-negative integer")
        include_tools = params.get("includeTools", True)
        if not isinstance(include_tools, bool):
            raise InvalidArgument("includeTools must be a boolean")
        requester = self.requester
        session = await in_thread(resolve_session)(requester, raw, action="history")
        if since is not None:  # replays from `since`: those rows must be in the database
            await in_thread(cold_storage.ensure_hot)(session)
        if session.pk not in self.subscriber.followed:
            self.check_room()
        display = keys.display_key(session.key, requester.key_settings)
        cursor = session.last_seq if since is None else since
        self.joined_hub.follow(
            self.subscriber, Followed.of(session, display, cursor, include_tools)
        )
        return {"key": display, "lastSeq": session.last_seq}

    async def messages_unsubscribe(self, params: dict) -> dict:
        only(params, {"key"})
        canonical = canonical_for(self.requester, key_param(params))
        for pk, followed in list(self.subscriber.followed.items()):
            if followed.canonical == canonical:
                self.joined_hub.unfollow(self.subscriber, pk)
                return {"key": followed.key, "unsubscribed": True}
        return {"key": params["key"], "unsubscribed": False}


def tool_rpc(name: str):
    """The gateway RPC of a tool that declares one (`sessions.list`, `chat.history`): its params
    are the tool's arguments; a refusal is an error frame."""

    async def call(connection: Connection, params: dict) -> dict:
        return await TOOLS.invoke(
            name, requester=connection.requester, args=params, in_thread=in_thread
        )

    return call


def sync_rpc(fn):
    """A session_rpcs method: its ORM work runs off the loop."""

    async def call(connection: Connection, params: dict) -> dict:
        return await in_thread(fn)(connection.subscriber.requester, params)

    return call


METHODS = {
    **{name: sync_rpc(fn) for name, fn in session_rpcs.RPCS.items()},
    **{name: sync_rpc(fn) for name, fn in session_reads.READ_RPCS.items()},
    "sessions.subscribe": Connection.sessions_subscribe,
    "sessions.unsubscribe": Connection.sessions_unsubscribe,
    "sessions.messages.subscribe": Connection.messages_subscribe,
    "sessions.messages.unsubscribe": Connection.messages_unsubscribe,
    **{t.declaration.rpc: tool_rpc(t.name) for t in TOOLS if t.declaration.rpc},
    # sessions_history's RPC, plus 9.6's deltaCursor (live/chat_history.py).
    "chat.history": sync_rpc(chat_history.chat_history),
}


def only(params: dict, allowed: set[str]) -> None:
    closed(params, allowed)


def key_param(params: dict) -> str:
    raw = params.get("key")
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidArgument("key must be a non-empty string")
    if len(raw) > keys.MAX_KEY_LENGTH:
        raise InvalidArgument(f"key must be at most {keys.MAX_KEY_LENGTH} characters")
    return raw
