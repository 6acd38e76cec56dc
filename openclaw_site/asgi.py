import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import path  # noqa: E402

# Static files (admin, API docs) straight from the app folders, so `make run` needs no
# collectstatic or separate web server. Behind a proxy in production, serve STATIC_ROOT there.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from sessions_app.live.consumer import websocket_app  # noqa: E402

# HTTP is Django as usual; /ws/ is the live-updates WebSocket (docs/live.md). It reads the
# browser's session cookie or an API key itself, once, at the handshake.
application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter([path("ws/", websocket_app)]),
    }
)
