"""`/mcp/`: the MCP server over streamable HTTP, on the site's ASGI app (openclaw_site/asgi.py).

Every HTTP request is authenticated here, before the SDK sees it, with the identity functions
`/tools/invoke` uses: `Authorization: Bearer <api key>` (401 with the API's one text otherwise),
then `requester_for` per tool call (pinned, sandboxed and scoped keys; `X-OpenClaw-Session-Key`
picks the session as on REST). So a key revoked in the middle of an MCP session fails on its
next request. The key also becomes the SDK's `scope["user"]`, which binds a stateful MCP
session to the key that opened it: another key presenting its session id gets 404.

The SDK's session manager needs a running task group; it is started on the first request of
each event loop (uvicorn has one per process) rather than in an ASGI lifespan, so the site's
router and daphne need no lifespan support.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from openclaw_common.errors import ToolError, Unauthenticated

from ..api import door
from ..api.http import UNAVAILABLE, WWW_AUTHENTICATE, envelope, is_unavailable
from ..identity import Requester, requester_for
from ..jsontext import dumps_bytes
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


async def _respond(send, status: int, body: dict, headers: tuple[tuple[bytes, bytes], ...] = ()):
    payload = dumps_bytes(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


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
                app=build_server(http_caller), session_idle_timeout=IDLE_SECONDS
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
            await _respond(send, 404, envelope("not_found", "Not found: the MCP endpoint is /mcp/"))
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        try:
            api_key = await in_thread(door.authenticate)(authorization, scope)
        except ToolError as exc:  # Unauthenticated: one text for missing, bad and revoked keys
            await _respond(
                send,
                exc.http_status,
                envelope(exc.error_type, exc.message),
                ((b"www-authenticate", WWW_AUTHENTICATE.encode()),),
            )
            return
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            await _respond(
                send, 503, envelope("unavailable", UNAVAILABLE), ((b"retry-after", b"1"),)
            )
            return
        token = AccessToken(
            token=f"api-key:{api_key.pk}", client_id=f"api-key:{api_key.pk}", scopes=[api_key.scope]
        )
        scope = {**scope, "user": AuthenticatedUser(token), API_KEY: api_key}
        manager = await self.manager()
        await manager.handle_request(scope, receive, send)


mcp_app = McpApp()
