import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

# Static files (admin, API docs) straight from the app folders, so `make run` needs no
# collectstatic or separate web server. Behind a proxy in production, serve STATIC_ROOT there.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

# WebSocket routes arrive with the live-updates work; HTTP is Django as usual.
application = ProtocolTypeRouter({"http": django_asgi_app})
