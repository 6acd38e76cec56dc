"""Login throttling for `/accounts/login/` and `/admin/login/` (issue 16), on Django's cache.

After `OPENCLAW_LOGIN_FAILURES` failed logins (default 5) for one username from one address, or
five times as many from one address whatever the username, further login POSTs from there are
answered `429` with `Retry-After` until `OPENCLAW_LOGIN_LOCKOUT_SECONDS` (default 900) have passed
since the first failure. A successful login clears the username's count. 0 failures turns it off.
The address is the client's (sessions_app/lib/client_address.py): behind a proxy listed in
`OPENCLAW_TRUSTED_PROXIES`, the one it reports, so its users are not all one address.

Why not django-axes: it needs its own tables, an authentication backend placed first and a
`request` in every `authenticate()` call (the project's tests and commands call it without one),
for what is here a counter with an expiry. The cache is `OPENCLAW_LIMITS_CACHE` (default
"default": local memory in the embedded setup, per process; configure a shared cache to count
across processes).
"""

from __future__ import annotations

import functools
import hashlib
import math
import time

from django.conf import settings
from django.core.cache import caches
from django.http import HttpResponse

from ..lib.client_address import client_address

DEFAULT_FAILURES = 5
DEFAULT_LOCKOUT_SECONDS = 900
PER_ADDRESS_FACTOR = 5


def _limits() -> tuple[int, int]:
    failures = int(getattr(settings, "OPENCLAW_LOGIN_FAILURES", DEFAULT_FAILURES))
    lockout = int(getattr(settings, "OPENCLAW_LOGIN_LOCKOUT_SECONDS", DEFAULT_LOCKOUT_SECONDS))
    return failures, max(1, lockout)


def _cache():
    return caches[getattr(settings, "OPENCLAW_LIMITS_CACHE", "default")]


def _keys(request) -> list[tuple[str, int]]:
    """(cache key, limit) for the address and for the username at the address."""
    failures, _ = _limits()
    address = client_address(request)
    username = str(request.POST.get("username", "")).strip().lower()
    digest = hashlib.sha256(f"{address}\n{username}".encode()).hexdigest()[:32]
    return [
        (f"openclaw:login:addr:{address}", failures * PER_ADDRESS_FACTOR),
        (f"openclaw:login:user:{digest}", failures),
    ]


def retry_after(request, *, now: float | None = None) -> int | None:
    """Seconds until this request's address/username may try again, or None."""
    failures, lockout = _limits()
    if failures <= 0:
        return None
    now = time.time() if now is None else now
    cache = _cache()
    for key, limit in _keys(request):
        record = cache.get(key)
        if record and record[0] >= limit:
            return max(1, math.ceil(record[1] + lockout - now))
    return None


def record_failure(request, *, now: float | None = None) -> None:
    failures, lockout = _limits()
    if failures <= 0:
        return
    now = time.time() if now is None else now
    cache = _cache()
    for key, _limit in _keys(request):
        count, since = cache.get(key) or (0, now)
        # Not atomic across processes: a burst may get a few extra tries, never fewer.
        cache.set(key, (count + 1, since), timeout=max(1, math.ceil(since + lockout - now)))


def record_success(request) -> None:
    _cache().delete(_keys(request)[1][0])


def throttled(view):
    """Wrap a login view: refuse a locked-out POST with 429, count a failed one (the login view
    answers a failed POST by showing the form again, a successful one with a redirect)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        wait = retry_after(request)
        if wait is not None:
            return HttpResponse(
                f"Too many failed logins; try again in {wait} seconds.\n",
                status=429,
                content_type="text/plain; charset=utf-8",
                headers={"Retry-After": str(wait)},
            )
        response = view(request, *args, **kwargs)
        if 300 <= response.status_code < 400:
            record_success(request)
        elif response.status_code == 200:
            record_failure(request)
        return response

    return wrapper
