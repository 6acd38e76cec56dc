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

import asyncio
import contextlib
import functools
import re
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpResponseBadRequest
from django.middleware import clickjacking, common, security
from django.urls import Resolver404, get_resolver, set_script_prefix
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject

from openclaw_common import taskqueue
from openclaw_common.dbstep import db_step
from sessions_app.access import key_cache

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
    """Django's ASGI handler with API_MIDDLEWARE instead of settings.MIDDLEWARE, and no thread
    of its own for the async views (issue 26).

    Django's handler gives every request a ThreadSensitiveContext: a new thread the first time
    the request runs sync code, and another that joins it at the end, and it runs the
    request_started and request_finished receivers there (two hand-offs). The async views
    (`/tools/invoke`, sends, runs: `api/http.endpoint`) do their database work in steps that
    hand their connection back as they end (openclaw_common/dbstep.py), so they need no thread
    of their own: their steps run on this handler's pool of long-lived threads, and Django's
    receivers (all sync, none touching a database connection of the event loop's thread, which
    has none) run inline. The sync views (DRF) keep Django's way: their connection lives on
    their request's thread until request_finished closes it there.
    """

    def __init__(self):
        super().__init__()
        self.executor = ThreadPoolExecutor(
            max_workers=settings.OPENCLAW_API_THREADS, thread_name_prefix="openclaw-api"
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not _is_async_view(_path(scope)):
            await super().__call__(scope, receive, send)
            return
        async with ThreadSensitiveContext(executor=self.executor):
            await self.handle_without_thread(scope, receive, send)

    async def handle_without_thread(self, scope, receive, send):
        """ASGIHandler.handle with the signals sent inline, and the work a view leaves for
        after its response (taskqueue.collect_after_response: a send's enqueue) and the API
        keys' due uses (access/key_cache.py) done once it has left."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        after_response = taskqueue.collect_after_response()
        await _send_signal(signals.request_started, self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await _close(error_response)
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):  # the client left
                await self.send_response(response, send)
            return response

        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await _send_signal(signals.request_finished, self.__class__)
        else:
            await _close(response)
        body_file.close()
        # After the response: a send's run handed to the broker, the keys' last use.
        if key_cache.touches_due():
            after_response.append(key_cache.flush_touches)
        if after_response:
            await db_step(taskqueue.run_all)(after_response)

    def load_middleware(self, is_async=False):
        assert is_async, "the API handler is ASGI only"
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        handler = convert_exception_to_response(self._get_response_async)
        for middleware in reversed(API_MIDDLEWARE):
            handler = convert_exception_to_response(middleware(handler))
        self._middleware_chain = handler


@functools.lru_cache(maxsize=4096)
def _is_async_view(path: str) -> bool:
    """Whether the API view at `path` is async (an `api/http.endpoint`); an unknown path is
    left to Django (its 404)."""
    try:
        match = get_resolver().resolve(path)
    except Resolver404:
        return False
    return asyncio.iscoroutinefunction(match.func)


async def _send_signal(signal, sender, **kwargs) -> None:
    """signal.asend() without its hand-off to a thread for the sync receivers: Django's own
    (reset_queries, close_old_connections, close_caches, reset_urlconf) and
    key_cache.flush_touches only look at the calling thread's connections (the event loop's
    has none) or memory."""
    sync_receivers, async_receivers = signal._live_receivers(sender)
    for receiver in sync_receivers:
        receiver(signal=signal, sender=sender, **kwargs)
    for receiver in async_receivers:
        await receiver(signal=signal, sender=sender, **kwargs)


async def _close(response) -> None:
    """response.close() (which sends request_finished), inline unless a receiver is async."""
    if signals.request_finished._live_receivers(ApiHandler)[1]:
        await sync_to_async(response.close)()
    else:
        response.close()


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
