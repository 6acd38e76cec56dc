"""Per-key request and concurrency limits on the API (issue 16): `429` with `Retry-After`.

- **Rate**: at most `OPENCLAW_API_RATE_LIMIT` requests per key in each
  `OPENCLAW_API_RATE_WINDOW_SECONDS` window (fixed windows, counted in Django's cache
  `OPENCLAW_LIMITS_CACHE`, default "default"). Every API request counts: DRF resources, the
  async views, `/tools/invoke`, `/mcp/`, and a WebSocket's authentication and each of its
  request frames (a team member's browser connection has no key and is not counted).
- **Concurrency**: at most `OPENCLAW_API_CONCURRENCY_LIMIT` requests of one key in flight in one
  process on the endpoints that can wait (`/tools/invoke`, `…/send/`, `runs/…`): a key cannot
  tie up the server with waiting sends. The ASGI door (api/door.py) counts the same limit per
  credential on every API request, before Django, with the places kept here.

0 turns a limit off. The embedded default (no Redis) uses Django's local-memory cache, so with
several web processes each counts for itself; point `OPENCLAW_LIMITS_CACHE` at a shared cache to
count across processes. The defaults are far above what an agent does (they stop a runaway loop
or a leaked key, not normal traffic).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpResponse

from openclaw_common.errors import ToolError

from ..lib.jsontext import dumps_bytes

DEFAULT_RATE_LIMIT = 20_000
DEFAULT_RATE_WINDOW_SECONDS = 60
DEFAULT_CONCURRENCY_LIMIT = 64


class RateLimited(ToolError):
    http_status = 429
    error_type = "rate_limited"

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def _limits_cache():
    return caches[getattr(settings, "OPENCLAW_LIMITS_CACHE", "default")]


def rate_counted_here() -> bool:
    """Whether check_rate() does no I/O (the counters are in this process's memory), so it may
    run on the event loop."""
    return _setting("OPENCLAW_API_RATE_LIMIT", DEFAULT_RATE_LIMIT) <= 0 or isinstance(
        _limits_cache(), LocMemCache
    )


def check_rate(api_key_id: int, *, now: float | None = None) -> None:
    """Count one request of the key; raise RateLimited past the window's limit."""
    limit = _setting("OPENCLAW_API_RATE_LIMIT", DEFAULT_RATE_LIMIT)
    if limit <= 0:
        return
    window = max(1, _setting("OPENCLAW_API_RATE_WINDOW_SECONDS", DEFAULT_RATE_WINDOW_SECONDS))
    now = time.time() if now is None else now
    index = int(now // window)
    cache = _limits_cache()
    counter = f"openclaw:rate:{api_key_id}:{index}"
    cache.add(counter, 0, timeout=window + 1)
    try:
        count = cache.incr(counter)
    except ValueError:  # expired between add and incr: this request starts the window
        cache.set(counter, 1, timeout=window + 1)
        count = 1
    if count > limit:
        retry_after = math.ceil((index + 1) * window - now)
        raise RateLimited(
            f"rate limit exceeded: at most {limit} requests per {window} s for this API key; "
            f"retry after {retry_after} s",
            retry_after,
        )


_in_flight: dict[int, int] = {}  # API key id → its requests in flight here
_by_credential: dict[str, int] = {}  # Authorization header digest → the same, before lookup
_lock = threading.Lock()


def _acquire(slot: Any, table: dict | None = None) -> bool:
    """Take one of OPENCLAW_API_CONCURRENCY_LIMIT places for `slot` (an API key's id, or a
    credential's digest in `_by_credential`); False when they are all taken."""
    table = _in_flight if table is None else table
    limit = concurrency_limit()
    with _lock:
        current = table.get(slot, 0)
        if limit > 0 and current >= limit:
            return False
        table[slot] = current + 1
        return True


def _release(slot: Any, table: dict | None = None) -> None:
    table = _in_flight if table is None else table
    with _lock:
        left = table.get(slot, 0) - 1
        if left > 0:
            table[slot] = left
        else:
            table.pop(slot, None)


@contextlib.asynccontextmanager
async def _place(slot: Any, table: dict) -> AsyncIterator[HttpResponse | None]:
    """A 429 when `slot` has no place left, else None with a place held until the block ends."""
    if not _acquire(slot, table):
        yield too_many(RateLimited(concurrency_text(), 1))
        return
    try:
        yield None
    finally:
        _release(slot, table)


def too_many(exc: RateLimited) -> HttpResponse:
    return HttpResponse(
        too_many_body(exc.message),
        status=429,
        content_type="application/json",
        headers={"Retry-After": str(exc.retry_after)},
    )


def credential(authorization: str | None) -> str:
    """The digest an Authorization header is counted by (valid or not)."""
    return hashlib.sha256((authorization or "").encode("utf-8", "replace")).hexdigest()


def concurrency_limit() -> int:
    return _setting("OPENCLAW_API_CONCURRENCY_LIMIT", DEFAULT_CONCURRENCY_LIMIT)


def concurrency_text() -> str:
    """Why a request is refused when its key (or credential) has no place left."""
    return f"too many concurrent requests: at most {concurrency_limit()} in flight for this API key"


def take_credential(digest: str) -> bool:
    """One of the credential's OPENCLAW_API_CONCURRENCY_LIMIT places (the ASGI door,
    sessions_app/api/door.py), or False when they are all taken."""
    return _acquire(digest, _by_credential)


def release_credential(digest: str) -> None:
    _release(digest, _by_credential)


def too_many_body(message: str) -> bytes:
    """The envelope of a 429 (too_many's, and the one the door writes itself, before Django)."""
    return dumps_bytes({"ok": False, "error": {"type": RateLimited.error_type, "message": message}})


# Set in an ASGI scope when the door (openclaw_site/asgi.py, api/door.py) holds the request's
# credential place: its ticket.
DOOR_PLACE = "openclaw.credential_place"


@contextlib.asynccontextmanager
async def before_auth(
    authorization: str | None, *, held: bool = False
) -> AsyncIterator[HttpResponse | None]:
    """For the async endpoints, before the key is looked up: at most
    OPENCLAW_API_CONCURRENCY_LIMIT requests carrying the same credential (valid or not) in
    flight in this process; the next is a 429 at once, with no database work.

    Looking a key up is database work like any other: 10,000 waits or 3,000 bad-key requests
    sent at once would otherwise queue every other client's requests behind their lookups.
    Counted by a digest of the header, so a burst of one credential costs at most `limit`
    lookups however large it is."""
    if held:  # the ASGI door took this request's place (api/door.py)
        yield None
        return
    async with _place(credential(authorization), _by_credential) as refused:
        yield refused


@contextlib.asynccontextmanager
async def in_flight(api_key) -> AsyncIterator[HttpResponse | None]:
    """For the async endpoints, once the key is admitted (api/gate.py): yields a 429 response
    when the key has OPENCLAW_API_CONCURRENCY_LIMIT requests in flight, else None with a
    concurrency slot held until the block ends."""
    async with _place(api_key.pk, _in_flight) as refused:
        yield refused
