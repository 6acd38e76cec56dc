from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site itself as an app, for its system checks (no models)."""

    name = "openclaw_site"
    label = "openclaw_site"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers them)
