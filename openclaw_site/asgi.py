import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import path  # noqa: E402

# Static files (admin, API docs) straight from the app folders, so `make run` needs no
# collectstatic or separate web server. Behind a proxy in production, serve STATIC_ROOT there.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from openclaw_site.middleware import ApiHandler, is_api_path  # noqa: E402
from sessions_app.live.consumer import websocket_app  # noqa: E402
from sessions_app.mcp.http import is_mcp_path, mcp_app  # noqa: E402

# The API (API keys only) without the cookie middleware: see openclaw_site/middleware.py.
api_app = ApiHandler()


async def http_app(scope, receive, send):
    # /mcp/ is the MCP SDK's streamable HTTP transport (API keys only; docs/mcp.md).
    if is_mcp_path(scope):
        await mcp_app(scope, receive, send)
        return
    app = api_app if is_api_path(scope) else django_asgi_app
    await app(scope, receive, send)


# HTTP is Django; /ws/ is the live-updates WebSocket (docs/live.md). It reads the browser's
# session cookie or an API key itself, once, at the handshake.
application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": URLRouter([path("ws/", websocket_app)]),
    }
)
