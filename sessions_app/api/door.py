"""The ASGI door (openclaw_site/asgi.py): what every API request passes before Django builds a
request for it, in memory, with no database work (issue 16 item 14).

A request that reaches Django costs a thread of its own (asgiref's per-request executor, and one
more to join it) and, for its key lookup, a pooled connection: a burst of thousands reaching
Django at once starved every other client (docs/reliability.md, "The stall"). So the door
refuses the surplus with `429` + `Retry-After: 1` itself, by two counts per process:

- **Per credential** (a digest of the `Authorization` header, valid or not):
  `OPENCLAW_API_CONCURRENCY_LIMIT` (64) requests in flight. Taken at the door, so a burst that
  arrives all at once cannot slip in before any of it reached a view. Held until the response
  ends, or until it starts when it is an event stream (SSE, MCP's streams): a stream holds no
  thread or connection once it runs, and a client following many sessions on one key must not
  be refused for it.
- **Unchecked credentials**: a request whose credential has not authenticated in this process
  yet takes one of `OPENCLAW_API_UNCHECKED_LIMIT` (32) places as well, until its key has been
  looked up (`authenticate` below) or its response starts. 3,000 requests each with a
  different bad key, which the per-credential count cannot see, cost at most that many
  lookups at a time; the rest are 429 at once. A credential that authenticated here is
  remembered (an in-memory set of digests, the most recent `KNOWN_CREDENTIALS`) and skips this
  count, so clients already served are not refused because strangers flood the door; a
  credential refused since is forgotten.

- **Per source** (sessions_app/access/source_limit.py): a source (the client's address) that
  failed `OPENCLAW_SOURCE_AUTH_FAILURES` key checks in the current window is refused here,
  with no wait, for a credential not known here; and a source holds at most
  `OPENCLAW_SOURCE_UNCHECKED_LIMIT` of the unchecked places.

A request that finds its count full waits at the door for a place (`admit`), on the event loop,
for up to `OPENCLAW_API_QUEUE_SECONDS` (5), if fewer requests wait for that count than it has
places; otherwise, and after the wait, it is refused.

Why these and not a per-address limit on every request: behind a proxy every client has the
proxy's address, and on one host (the benchmark, a local runtime) so do the flood and the other
clients; so the per-source counts above apply only to credentials not known here, and a known
one passes whatever its address did. Nor a cache of refused keys alone: distinct keys never
repeat. 0 turns a count off.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

from django.conf import settings

from openclaw_common.errors import Unauthenticated

from ..access import source_limit
from ..access.identity import authenticate as identity_authenticate
from ..access.identity import authenticate_cached as identity_authenticate_cached
from ..models import ApiKey
from . import ratelimit

DEFAULT_UNCHECKED_LIMIT = 32
DEFAULT_QUEUE_SECONDS = 5.0
QUEUE_POLL_SECONDS = 0.05
KNOWN_CREDENTIALS = 10_000
# Where the door's ticket rides in the ASGI scope (ratelimit.before_auth: the place is taken).
TICKET = ratelimit.DOOR_PLACE

_lock = threading.Lock()
_unchecked = 0  # requests in flight here whose credential is not known yet
_known: OrderedDict[str, None] = OrderedDict()  # digests of credentials that authenticated here
_waiting: dict[tuple[str, str], int] = {}  # (count, credential or "") → requests waiting for it


def unchecked_limit() -> int:
    return int(getattr(settings, "OPENCLAW_API_UNCHECKED_LIMIT", DEFAULT_UNCHECKED_LIMIT))


@dataclass
class Ticket:
    """One request's places, from the door until its response is done."""

    credential: str
    unchecked: bool  # holds one of the unchecked places
    holds_place: bool = True  # holds one of its credential's places
    source: str | None = None  # where it came from, when it holds one of the source's places

    def checked(self, ok: bool) -> None:
        """The key has been looked up: the unchecked place goes back; a good credential is
        remembered, a refused one forgotten."""
        with _lock:
            if ok:
                _known[self.credential] = None
                _known.move_to_end(self.credential)
                if len(_known) > KNOWN_CREDENTIALS:
                    _known.popitem(last=False)
            else:
                _known.pop(self.credential, None)
            self._give_back_unchecked()

    def response_started(self, *, stream: bool) -> None:
        """The answer is on its way: nothing more to check; a stream gives its place back."""
        with _lock:
            self._give_back_unchecked()
        if stream:
            self._give_back_place()

    def leave(self) -> None:
        with _lock:
            self._give_back_unchecked()
        self._give_back_place()

    def _give_back_unchecked(self) -> None:  # (under _lock)
        global _unchecked
        if self.unchecked:
            self.unchecked = False
            _unchecked -= 1
        if self.source is not None:
            source_limit.give_back_share(source_limit.UNCHECKED, self.source, self.credential)
            self.source = None

    def _give_back_place(self) -> None:
        with _lock:
            if not self.holds_place:
                return
            self.holds_place = False
        ratelimit.release_credential(self.credential)


# The counts: the credential's, the unchecked, the source's share of them; and a source that
# failed too many checks (refused at once, never queued).
CREDENTIAL, UNCHECKED, SOURCE, FAILED_SOURCE = "credential", "unchecked", "source", "failed"


def is_known(authorization: str | None) -> bool:
    """Whether this credential has authenticated in this process (and not failed since)."""
    digest = ratelimit.credential(authorization)
    with _lock:
        return digest in _known


def _take(credential: str, source: str | None) -> Ticket | str:
    """The request's ticket, or the name of the count that is full."""
    global _unchecked
    if not ratelimit.take_credential(credential):
        return CREDENTIAL
    limit = unchecked_limit()
    with _lock:
        if credential in _known:
            return Ticket(credential, unchecked=False)
    if source_limit.retry_after(source) is not None:
        ratelimit.release_credential(credential)
        return FAILED_SOURCE
    if limit <= 0:
        return Ticket(credential, unchecked=False)
    with source_limit.share(source_limit.UNCHECKED, source, credential) as share:
        if not share.may:
            ratelimit.release_credential(credential)
            return SOURCE
        with _lock:
            if _unchecked < limit:
                _unchecked += 1
                return Ticket(credential, unchecked=True, source=share.keep())
    ratelimit.release_credential(credential)
    return UNCHECKED


@dataclass(frozen=True)
class Refusal:
    """The door's no: the 429's text and its Retry-After."""

    text: str
    retry_after: int = 1

    @property
    def body(self) -> bytes:
        return ratelimit.too_many_body(self.text)


def _refusal(count: str, source: str | None) -> Refusal:
    if count == FAILED_SOURCE and source is not None:
        wait = source_limit.retry_after(source) or 1
        return Refusal(source_limit.refusal_text(source, wait), wait)
    if count == SOURCE and source is not None:
        return Refusal(source_limit.unchecked_text(source))
    return Refusal(refusal_text(count))


def refusal_text(count: str) -> str:
    """Why the door refuses when `count` is full."""
    if count == CREDENTIAL:
        return ratelimit.concurrency_text()
    return (
        f"too many requests with API keys not checked yet: at most {unchecked_limit()} are "
        "checked at once on this server process; retry shortly"
    )


async def send_429(send, body: bytes, *, websocket: bool = False, retry_after: int = 1) -> None:
    """Write a 429 (`body`, `Retry-After`) straight to ASGI `send`, before Django: the door's
    answer to an HTTP request, or with `websocket` the refusal of an upgrade (the ASGI
    WebSocket denial-response extension)."""
    kind = "websocket.http.response" if websocket else "http.response"
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    await send({"type": f"{kind}.start", "status": 429, "headers": headers})
    await send({"type": f"{kind}.body", "body": body})


def queue_seconds() -> float:
    return float(getattr(settings, "OPENCLAW_API_QUEUE_SECONDS", DEFAULT_QUEUE_SECONDS))


async def admit(authorization: str | None, source: str | None = None) -> Ticket | Refusal:
    """At the door: the request's ticket, or its 429 when a count is full. `source`: where the
    request comes from (source_limit.source_of_scope). A
    request finding its count full first waits for a place, on the event loop (no thread,
    nothing of Django), for up to OPENCLAW_API_QUEUE_SECONDS, when fewer are waiting for that
    count than it has places; then its 429. So a small burst of one key (its hundred MCP
    clients opening together) gets in as places free up, while a large one is still refused at
    once, and Django never holds more than the limit."""
    got = await _wait_for_ticket(authorization, source)
    return got if isinstance(got, Ticket) else _refusal(got, source)


class Refused(Exception):
    """The door is full for a lookup that is not an HTTP request (passage)."""


@contextlib.asynccontextmanager
async def passage(authorization: str | None, source: str | None = None) -> AsyncIterator[Ticket]:
    """The door for one credential lookup outside an HTTP request (a WebSocket upgrade's key
    or session cookie, a connect frame's token): admit()'s ticket while the lookup runs, given
    back after it; Refused (with the 429's text) when the door stays full."""
    got = await _wait_for_ticket(authorization, source)
    if not isinstance(got, Ticket):
        raise Refused(_refusal(got, source).text)
    try:
        yield got
    finally:
        got.leave()


def _line(count: str, credential: str, source: str | None) -> tuple[tuple[str, str], int]:
    """The queue a request finding `count` full waits in, and how many may wait there."""
    if count == CREDENTIAL:
        return (CREDENTIAL, credential), ratelimit.concurrency_limit()
    if count == SOURCE:
        return (SOURCE, source or ""), source_limit.share_limit(source_limit.UNCHECKED)
    return (UNCHECKED, ""), unchecked_limit()


HOLD_BACK_SECONDS = 1.0
HOLD_BACK_MAX = 1024
_held_back = 0  # refusals being held back now


async def _hold_back() -> None:
    """A failed source's 429 leaves after HOLD_BACK_SECONDS, on the event loop (a sleeping
    coroutine: no thread, nothing of Django). A flood that sends its next request as soon as
    one is answered then sends one a second per connection instead of hundreds, and the
    process spends its time on other clients. At most HOLD_BACK_MAX at once; past that, at
    once. (A client that honours Retry-After loses nothing: it was to wait longer.)"""
    global _held_back
    with _lock:
        if _held_back >= HOLD_BACK_MAX:
            return
        _held_back += 1
    try:
        await asyncio.sleep(HOLD_BACK_SECONDS)
    finally:
        with _lock:
            _held_back -= 1


async def _wait_for_ticket(authorization: str | None, source: str | None) -> Ticket | str:
    """admit()'s ticket, or the name of the count that stayed full."""
    credential = ratelimit.credential(authorization)
    got = _take(credential, source)
    if got == FAILED_SOURCE:  # never waits for a place; its answer is held back instead
        await _hold_back()
        return got
    if isinstance(got, Ticket):
        return got
    line, room = _line(got, credential, source)
    wait = queue_seconds()
    with _lock:
        if wait <= 0 or _waiting.get(line, 0) >= room:
            return got
        _waiting[line] = _waiting.get(line, 0) + 1
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            await asyncio.sleep(QUEUE_POLL_SECONDS)
            got = _take(credential, source)
            if isinstance(got, Ticket) or got == FAILED_SOURCE:
                return got
        return got
    finally:
        with _lock:
            left = _waiting[line] - 1
            if left:
                _waiting[line] = left
            else:
                del _waiting[line]


def authenticate(authorization: str | None, scope: dict | None) -> ApiKey:
    """identity.authenticate for a request that came through the door (`scope`: its ASGI
    scope, None elsewhere), telling the door's ticket how the lookup went."""
    api_key = _told(scope, identity_authenticate, authorization)
    assert api_key is not None  # identity.authenticate raises instead
    return api_key


def authenticate_cached(authorization: str | None, scope: dict | None) -> ApiKey | None:
    """identity.authenticate_cached likewise: None (the ticket not told yet) when only the
    database can tell."""
    return _told(scope, identity_authenticate_cached, authorization)


def _told(scope: dict | None, lookup, authorization: str | None) -> ApiKey | None:
    ticket = (scope or {}).get(TICKET)
    try:
        api_key = lookup(authorization)
    except Unauthenticated:
        if isinstance(ticket, Ticket):
            ticket.checked(False)
        raise
    if api_key is not None and isinstance(ticket, Ticket):
        ticket.checked(True)
    return api_key


def is_stream(start_message: dict) -> bool:
    for name, value in start_message.get("headers", ()):
        if name.lower() == b"content-type":
            return value.startswith(b"text/event-stream")
    return False


def counts() -> dict[str, int]:
    """What the door holds now (tests, and a look from a shell)."""
    with _lock:
        return {
            "unchecked": _unchecked,
            "known": len(_known),
            "credentials": sum(ratelimit._by_credential.values()),
            "waiting": sum(_waiting.values()),
        }


def forget() -> None:
    """Forget every known credential (tests)."""
    with _lock:
        _known.clear()


__all__ = [
    "Refusal",
    "Refused",
    "Ticket",
    "admit",
    "authenticate",
    "counts",
    "forget",
    "is_known",
    "is_stream",
    "passage",
    "send_429",
]
