"""The site's login sessions: Django's database sessions, with the cookie's value checked before
it reaches a query.

Django's cookie parser turns an escaped `\\000` in a `sessionid` cookie (plain ASCII, so every
HTTP server passes it) into a NUL, and PostgreSQL refuses a NUL in the key lookup: every page a
client with such a cookie opened was a 500. A key this store would never have issued is no
session: the client is signed out, as with an expired cookie.
"""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key):
        # Django issues keys of lowercase letters and digits (base.VALID_KEY_CHARS).
        # A private hook of SessionBase that django-stubs does not declare.
        valid = bool(super()._validate_session_key(key))  # type: ignore[misc]
        return valid and key.isascii() and key.isalnum()
