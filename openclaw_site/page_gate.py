"""The pages' gate (openclaw_site/asgi.py): what every request that does not pass the API's door
(sessions_app/api/door.py) passes before Django builds a request for it, in memory, with no
database work (issue 28 item 1).

Pages, the admin, the browser's routes and static files are served by Django's full stack, each
request on a thread of its own. 3,000 concurrent `GET /accounts/login/` with no credentials were
all let in and kept a keyed API client on the same process at p95 3.5 s for 48 s. So at most
`OPENCLAW_PAGE_CONCURRENCY_LIMIT` (8) of them are in flight per process in each of three counts;
the next gets `429` + `Retry-After: 1` written here, before Django, after the door's short wait
(`OPENCLAW_API_QUEUE_SECONDS`, when fewer wait than the count has places):

- **anonymous**: requests without a session cookie (the flood's kind);
- **session**: requests with a session cookie not yet seen signed in here (a flood of made-up
  cookies fills this one, not the next);
- **signed in**: requests whose session cookie was seen signed in on this process
  (`PageGateMiddleware` below tells the gate what the page's own request found). A signed-in
  user of the browser keeps being served whatever strangers send.

One source (the client's address, sessions_app/access/source_limit.py) holds at most
`OPENCLAW_SOURCE_PAGE_LIMIT` (4) of the anonymous and of the session count: a flood from one
address leaves room for the login page of someone elsewhere.

A place is held until the response ends (or starts, for an event stream), the client leaves or
the app fails. 0 turns the gate off.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from django.conf import settings
from django.http.cookie import parse_cookie

from sessions_app.access import source_limit

DEFAULT_LIMIT = 8
QUEUE_POLL_SECONDS = 0.05
KNOWN_SESSIONS = 10_000
# Where the page's place rides in the ASGI scope (read back by PageGateMiddleware).
PLACE = "openclaw.page_place"

ANONYMOUS, SESSION, SIGNED_IN = "anonymous", "session", "signed in"  # the three counts

_lock = threading.Lock()
_held = {ANONYMOUS: 0, SESSION: 0, SIGNED_IN: 0}
_waiting: dict[tuple[str, str], int] = {}  # (count, "") or (SOURCE, source) → requests waiting
_signed_in: OrderedDict[str, None] = OrderedDict()  # digests of session cookies seen signed in


def limit() -> int:
    return int(getattr(settings, "OPENCLAW_PAGE_CONCURRENCY_LIMIT", DEFAULT_LIMIT))


def queue_seconds() -> float:
    return float(getattr(settings, "OPENCLAW_API_QUEUE_SECONDS", 5.0))


@dataclass
class Place:
    """One request's place, from the gate until its response is done."""

    count: str
    session: str  # digest of its session cookie, "" without one
    held: bool = field(default=True)
    source: str | None = None  # where it came from, when it holds one of the source's places

    def leave(self) -> None:
        with _lock:
            if not self.held:
                return
            self.held = False
            _held[self.count] -= 1
        if self.source is not None:
            source_limit.give_back_share(source_limit.PAGES, self.source)

    def signed_in(self, yes: bool) -> None:
        """What Django found the request's session to be: a signed-in session's later requests
        take the signed-in count; a session signed out (or made up) is forgotten."""
        if not self.session:
            return
        with _lock:
            if yes:
                _signed_in[self.session] = None
                _signed_in.move_to_end(self.session)
                if len(_signed_in) > KNOWN_SESSIONS:
                    _signed_in.popitem(last=False)
            else:
                _signed_in.pop(self.session, None)


def session_digest(scope: dict) -> str:
    """A digest of the request's session cookie, "" without one."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"cookie":
            # Django's own lenient parser, as the request will be read.
            key = parse_cookie(value.decode("latin-1")).get(settings.SESSION_COOKIE_NAME)
            if key:
                return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()
    return ""


SOURCE = "source"  # (the source's share is full)


def _take(count: str, session: str, room: int, source: str | None) -> Place | str:
    """The place, or the name of what is full: the count, or the source's share of it (a
    signed-in user's requests are not counted by source)."""
    counted = None if count == SIGNED_IN else source
    with source_limit.share(source_limit.PAGES, counted) as share:
        if not share.may:
            return SOURCE
        with _lock:
            if _held[count] < room:
                _held[count] += 1
                return Place(count, session, source=share.keep())
    return count


async def admit(scope: dict) -> Place | str | None:
    """The request's place; the name of its count (or SOURCE: the source's share of it) when
    that stayed full; None when the gate is off."""
    room = limit()
    if room <= 0:
        return None
    session = session_digest(scope)
    source = source_limit.source_of_scope(scope)
    with _lock:
        count = SIGNED_IN if session in _signed_in else SESSION if session else ANONYMOUS
    got = _take(count, session, room, source)
    if isinstance(got, Place):
        return got
    # The line it waits in: its count's, or its source's (as many may wait as hold places).
    line, line_room = ((SOURCE, source), source_limit.share_limit(source_limit.PAGES))
    if got != SOURCE:
        line, line_room = (count, ""), room
    wait = queue_seconds()
    with _lock:
        if wait <= 0 or _waiting.get(line, 0) >= line_room:
            return got
        _waiting[line] = _waiting.get(line, 0) + 1
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            await asyncio.sleep(QUEUE_POLL_SECONDS)
            got = _take(count, session, room, source)
            if isinstance(got, Place):
                return got
        return got
    finally:
        with _lock:
            left = _waiting[line] - 1
            if left:
                _waiting[line] = left
            else:
                del _waiting[line]


def refusal_text(count: str, source: str = "") -> str:
    if count == SOURCE:
        return (
            f"too many requests without a signed-in session from {source}: at most "
            f"{source_limit.share_limit(source_limit.PAGES)} are served at once per address on "
            "this server process (OPENCLAW_SOURCE_PAGE_LIMIT); retry shortly"
        )
    what = {
        ANONYMOUS: "requests without a session",
        SESSION: "requests with a session not yet seen signed in",
        SIGNED_IN: "requests of signed-in users",
    }[count]
    return (
        f"too many {what}: at most {limit()} are served at once on this server process "
        "(OPENCLAW_PAGE_CONCURRENCY_LIMIT); retry shortly"
    )


def wants_html(scope: dict) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"accept":
            return b"text/html" in value
    return False


async def send_429(scope: dict, send, count: str) -> None:
    """The gate's answer, written straight to ASGI `send`: the API's JSON envelope, or a line of
    plain text for a browser."""
    # Imported here: the door's module needs Django's apps, loaded after this one.
    from sessions_app.api import ratelimit

    text = refusal_text(count, source_limit.source_of_scope(scope))
    if wants_html(scope):
        body, kind = f"429 Too Many Requests: {text}.\n".encode(), b"text/plain; charset=utf-8"
    else:
        body, kind = ratelimit.too_many_body(text), b"application/json"
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def counts() -> dict[str, int]:
    """What the gate holds now (tests, and a look from a shell)."""
    with _lock:
        return {**_held, "waiting": sum(_waiting.values()), "known": len(_signed_in)}


def forget() -> None:
    """Forget every session seen signed in (tests)."""
    with _lock:
        _signed_in.clear()
