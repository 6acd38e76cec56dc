"""Middleware without thread hops, and the lighter stack the API is served with.

Under ASGI, Django runs each `MiddlewareMixin` hook through `sync_to_async(thread_sensitive=True)`:
one hand-off to a single shared thread per hook, about a dozen per request with the standard
stack. For hooks that only look at headers that is pure overhead (measured: 2–3 ms of server CPU
per `sessions_send` on a 2-core VM, about a sixth of the web process's work), so:

- `SecurityMiddleware`, `CommonMiddleware` and `XFrameOptionsMiddleware` below run Django's own
  hooks inline on the event loop, as `RefuseNulMiddleware` (the admin's) runs its own. They
  touch no database and no file, so nothing blocks.
- `/api/` and `/tools/` are authenticated by API key only (sessions_app.identity.authenticate): no cookie, no
  session, no CSRF, no messages. `ApiHandler` serves them with just the three above, so an API
  request makes no thread hop before its view. Pages, the admin and the UI keep the whole
  `settings.MIDDLEWARE` stack.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpResponseBadRequest
from django.middleware import clickjacking, common, security
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject

from . import page_gate

API_PREFIXES = ("/api/", "/tools/")


class InlineHooksMixin:
    """Async requests call process_request/process_response directly (sync ones as Django does)."""

    async def __acall__(self, request):
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class RefuseNulMiddleware(InlineHooksMixin, MiddlewareMixin):
    """A NUL character in an admin path or query string is a 400 before any admin view.
    PostgreSQL cannot hold NUL in a text parameter, and Django's admin hands its filters
    (`?kind=`) and object ids (an agent's text primary key) straight to a query: a 500. No key,
    name or id of this service holds one. The API and the transcript browser read each
    parameter themselves and name the one at fault, so they are left to do that."""

    TEXT = "The request's path and query string must not contain NUL characters."

    def process_request(self, request):
        if not request.path_info.startswith("/admin/"):
            return None
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", ""):
            return HttpResponseBadRequest(self.TEXT, content_type="text/plain; charset=utf-8")
        return None


class SecurityMiddleware(InlineHooksMixin, security.SecurityMiddleware):
    pass


class CommonMiddleware(InlineHooksMixin, common.CommonMiddleware):
    pass


class XFrameOptionsMiddleware(InlineHooksMixin, clickjacking.XFrameOptionsMiddleware):
    pass


class ContentSecurityPolicyMiddleware(InlineHooksMixin, MiddlewareMixin):
    """settings.CONTENT_SECURITY_POLICY on HTML pages outside the admin (the transcript browser,
    the login page). The admin's templates carry inline styles and handlers of their own, and
    the API's Swagger page an inline script, so both are left to Django's defaults. A response that sets its own policy keeps it."""

    def __init__(self, get_response):
        super().__init__(get_response)
        self.policy = settings.CONTENT_SECURITY_POLICY

    def process_response(self, request, response):
        if (
            self.policy
            and response.get("Content-Type", "").startswith("text/html")
            and not request.path_info.startswith(("/admin/", *API_PREFIXES))
            and "Content-Security-Policy" not in response
        ):
            response["Content-Security-Policy"] = self.policy
        return response


class PageGateMiddleware(InlineHooksMixin, MiddlewareMixin):
    """Tells the pages' gate (openclaw_site/page_gate.py) whether the request's session cookie
    belongs to a signed-in user, so that user's next requests take the signed-in count, which a
    flood of anonymous or made-up-cookie requests cannot fill. Only when the page itself looked
    the user up (AuthenticationMiddleware's `_cached_user`): this costs no query of its own."""

    def process_response(self, request, response):
        place = getattr(request, "scope", {}).get(page_gate.PLACE)
        user = request.__dict__.get("user")
        if type(user) is SimpleLazyObject:  # as AuthenticationMiddleware set it (not evaluated)
            user = getattr(request, "_cached_user", None)  # None: the page never looked
        # else login() or logout() replaced it: what the session is now.
        if place is not None and user is not None:
            place.signed_in(bool(user.is_authenticated))
        return response


API_MIDDLEWARE = (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware)


class ApiHandler(ASGIHandler):
    """Django's ASGI handler with API_MIDDLEWARE instead of settings.MIDDLEWARE."""

    def load_middleware(self, is_async=False):
        assert is_async, "the API handler is ASGI only"
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        handler = convert_exception_to_response(self._get_response_async)
        for middleware in reversed(API_MIDDLEWARE):
            handler = convert_exception_to_response(middleware(handler))
        self._middleware_chain = handler


def _path(scope: dict) -> str:
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path


def is_api_path(scope: dict) -> bool:
    return _path(scope).startswith(API_PREFIXES)


# OpenClaw's `GET /sessions/{sessionKey}/history` (sessions_app/api/openclaw_paths.py): with an
# API key it is the API, served like the rest of it; a browser's request keeps the full stack.
_OPENCLAW_HISTORY = re.compile(r"/sessions/.+/history")


def is_api_request(scope: dict) -> bool:
    if is_api_path(scope):
        return True
    return bool(_OPENCLAW_HISTORY.fullmatch(_path(scope))) and any(
        name.lower() == b"authorization" for name, _ in scope.get("headers", ())
    )
