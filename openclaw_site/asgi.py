import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import path  # noqa: E402

# Static files (admin, API docs) straight from the app folders, so `make run` needs no
# collectstatic or separate web server. Behind a proxy in production, serve STATIC_ROOT there.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from openclaw_site import page_gate  # noqa: E402
from openclaw_site.middleware import ApiHandler, is_api_request  # noqa: E402
from sessions_app.access.source_limit import source_of_scope  # noqa: E402
from sessions_app.api import door  # noqa: E402
from sessions_app.live.consumer import websocket_app  # noqa: E402
from sessions_app.mcp.paths import is_mcp_path  # noqa: E402

# The API (API keys only) without the cookie middleware: see openclaw_site/middleware.py.
api_app = ApiHandler()


async def mcp_app(scope, receive, send):
    # Imported on the first MCP request: the SDK is most of a second of every web process's
    # start, and most never serve MCP.
    from sessions_app.mcp.http import mcp_app as app

    await app(scope, receive, send)


async def http_app(scope, receive, send):
    # /mcp/ is the MCP SDK's streamable HTTP transport (API keys only; docs/mcp.md).
    if is_mcp_path(scope):
        app = mcp_app
    elif is_api_request(scope):
        app = api_app
    else:
        await page_app(scope, receive, send)  # pages: cookies, the full stack
        return
    # Every API request passes the door first: its credential's place and, for a credential
    # not yet seen to authenticate here, a place among the unchecked (sessions_app/api/door.py).
    # A source that failed too many key checks is refused here too (access/source_limit.py).
    ticket = await door.admit(_header(scope, b"authorization"), source_of_scope(scope))
    if not isinstance(ticket, door.Ticket):
        await door.send_429(send, ticket.body, retry_after=ticket.retry_after)
        return

    async def send_through(message):
        if message["type"] == "http.response.start":
            ticket.response_started(stream=door.is_stream(message))
        await send(message)

    try:
        await app({**scope, door.TICKET: ticket}, receive, send_through)
    finally:
        ticket.leave()


async def page_app(scope, receive, send):
    # Every other request (pages, the admin, the browser, static files) passes the pages' gate:
    # a place in its count, so a flood of them cannot take every thread (openclaw_site/page_gate.py).
    place = await page_gate.admit(scope)
    if place is None:  # the gate is off
        await django_asgi_app(scope, receive, send)
        return
    if not isinstance(place, page_gate.Place):
        await page_gate.send_429(scope, send, place)
        return

    async def send_through(message):
        # The place goes back as the last of the answer leaves (or an event stream starts).
        await send(message)
        kind = message["type"]
        if (kind == "http.response.start" and door.is_stream(message)) or (
            kind == "http.response.body" and not message.get("more_body", False)
        ):
            place.leave()

    try:
        await django_asgi_app({**scope, page_gate.PLACE: place}, receive, send_through)
    finally:
        place.leave()  # the client left, or the app failed


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


# HTTP is Django; /ws/ is the live-updates WebSocket (docs/live.md). It reads the browser's
# session cookie or an API key itself, once, at the handshake.
application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": URLRouter([path("ws/", websocket_app)]),
    }
)
