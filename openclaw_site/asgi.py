import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

# WebSocket routes arrive with the live-updates work; HTTP is Django as usual.
application = ProtocolTypeRouter({"http": django_asgi_app})
