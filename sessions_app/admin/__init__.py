"""The operator console (Django admin), an adapter: every page calls the functions the API uses.
Django's autodiscover imports this package; importing each page module registers it."""

from . import completions, core, delivery, send_policy  # noqa: F401
