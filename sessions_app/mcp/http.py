"""`/mcp/`: the MCP server over streamable HTTP, on the site's ASGI app (openclaw_site/asgi.py).

Every HTTP request is authenticated here, before the SDK sees it, with the identity functions
`/tools/invoke` uses: `Authorization: Bearer <api key>` (401 with the API's one text otherwise),
then `requester_for` per tool call (pinned, sandboxed and scoped keys; `X-OpenClaw-Session-Key`
picks the session as on REST). So a key revoked in the middle of an MCP session fails on its
next request. The key also becomes the SDK's `scope["user"]`, which binds a stateful MCP
session to the key that opened it: another key presenting its session id gets 404.

Every request counts against its key's request rate (api/ratelimit.py, as on every API way in)
and its body is read whole under `DATA_UPLOAD_MAX_MEMORY_SIZE`, as the API's are, before the
SDK sees it. Refusals (401, 413, 429, 503) are the API's responses: the same status, envelope
and `Retry-After`, written straight to ASGI since `/mcp/` runs before Django.

The SDK's session manager needs a running task group; it is started on the first request of
each event loop (uvicorn has one per process) rather than in an ASGI lifespan, so the site's
router and daphne need no lifespan support.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from openclaw_common.errors import Unauthenticated

from ..access.identity import Requester, requester_for
from ..access.source_limit import source_of_scope
from ..api import gate, ratelimit
from ..api.http import TOO_LARGE, check_size, error_json, error_response, json_response
from .server import build_server, in_thread

SESSION_HEADER = "x-openclaw-session-key"
API_KEY = "openclaw.api_key"  # where the authenticated ApiKey rides in the ASGI scope
# An idle MCP session (no request in flight, no open stream) is dropped after this long; the
# client then opens a new one. Long enough for a desktop client left open over lunch.
IDLE_SECONDS = 30 * 60


async def http_caller(ctx: ServerRequestContext[Any, Any]) -> Requester:
    request = ctx.request
    if request is None or API_KEY not in request.scope:
        raise Unauthenticated()  # cannot happen behind McpApp; refuse rather than guess
    api_key = request.scope[API_KEY]
    session_key = request.headers.get(SESSION_HEADER) or None
    return await in_thread(requester_for)(api_key, session_key=session_key)


async def read_body(scope, receive):
    """The request's body read whole under DATA_UPLOAD_MAX_MEMORY_SIZE, as the API reads its
    bodies (http.check_size on the declared length, then the length actually received, for a
    body sent without one), and a `receive` that hands it on. Raises RequestDataTooBig, or
    NotAMessage for JSON that is not an object.

    The setting is read per request, not given to the SDK's session manager (built once per
    event loop), whose own limit is fixed at 4 MiB: below the API's 8 MiB default."""
    check_size(_header(scope, b"content-length"))
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = bytearray()
    complete = False
    after: list[dict] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            after.append(message)  # a disconnect: the SDK sees it after the body
            break
        body += message.get("body", b"")
        if limit is not None and len(body) > limit:
            raise RequestDataTooBig(TOO_LARGE)
        if not message.get("more_body", False):
            complete = True
            break
    if complete:
        check_message(bytes(body))
    queued = [{"type": "http.request", "body": bytes(body), "more_body": not complete}, *after]

    async def replay():
        return queued.pop(0) if queued else await receive()

    return replay


INVALID_REQUEST = -32600  # JSON-RPC 2.0's code for JSON that is not a request object


class NotAMessage(ValueError):
    pass


def check_message(body: bytes) -> None:
    """Raise NotAMessage for a body that is JSON but not an object (`null`, a list, a string, a
    number). The SDK would answer those with -32602 "Invalid params" and pydantic's report of
    four union members; JSON-RPC 2.0 calls them an Invalid Request, and the REST ways in refuse
    the same bodies alike (api/http.decode_json_object). MCP has no batches since 2025-06-18,
    so a list is no exception. Only a body that does not start with `{` is parsed here."""
    head = body.lstrip()[:1]
    if not head or head == b"{":
        return
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return  # not JSON at all: the SDK's parse error (-32700) says so
    raise NotAMessage("Invalid Request: the body must be a JSON-RPC message, a JSON object")


def invalid_request(message: str) -> HttpResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return json_response(body, 400)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _send_response(send, response: HttpResponse) -> None:
    """Write one of the API's responses (error_response, ratelimit.too_many) to ASGI `send`."""
    body = response.content
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.items()]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def refusal(exc: BaseException) -> HttpResponse | None:
    """The API's response to an error before the SDK (None: a bug, raised on). A 429 is
    ratelimit.too_many's, as in the DRF resources' exception handler (api/drf.py)."""
    if isinstance(exc, ratelimit.RateLimited):
        return ratelimit.too_many(exc)
    if isinstance(exc, NotAMessage):
        return invalid_request(str(exc))
    return error_response(exc)


class McpApp:
    """The ASGI app for `/mcp/`: the key check, then the SDK's session manager."""

    def __init__(self) -> None:
        self._managers: dict[asyncio.AbstractEventLoop, StreamableHTTPSessionManager] = {}
        self._ready: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self._tasks: set[asyncio.Task] = set()

    async def manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if loop not in self._managers:
            manager = self._managers[loop] = StreamableHTTPSessionManager(
                app=build_server(http_caller),
                session_idle_timeout=IDLE_SECONDS,
                # read_body holds bodies to DATA_UPLOAD_MAX_MEMORY_SIZE, read per request; the
                # SDK's own fixed 4 MiB would refuse what the API takes (8 MiB by default).
                max_request_body_size=sys.maxsize,
            )
            ready = self._ready[loop] = asyncio.Event()

            async def run() -> None:
                async with manager.run():
                    ready.set()
                    await asyncio.Event().wait()  # until the loop (the server) stops

            task = loop.create_task(run(), name="mcp-session-manager")
            self._tasks.add(task)
        await self._ready[loop].wait()
        return self._managers[loop]

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("path", "").rstrip("/") != "/mcp":
            await _send_response(send, error_json(404, "Not found: the MCP endpoint is /mcp/"))
            return
        try:
            # The key first, then the body: a bad or over-limit key costs no upload.
            api_key = await in_thread(gate.admit)(
                _header(scope, b"authorization"), scope, source=source_of_scope(scope)
            )
            receive = await read_body(scope, receive)
        except Exception as exc:
            response = refusal(exc)
            if response is None:
                raise
            await _send_response(send, response)
            return
        token = AccessToken(
            token=f"api-key:{api_key.pk}", client_id=f"api-key:{api_key.pk}", scopes=[api_key.scope]
        )
        scope = {**scope, "user": AuthenticatedUser(token), API_KEY: api_key}
        manager = await self.manager()
        await manager.handle_request(scope, receive, send)


mcp_app = McpApp()
