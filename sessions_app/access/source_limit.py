"""Per-source limits on failed authentication (issue 28 item 2): a flood of distinct bad API keys
from one address costs a handful of key lookups, then cheap `429`s, and nobody else waits.

A **source** is the client's address (sessions_app/lib/client_address.py: the peer, or behind a
proxy listed in `OPENCLAW_TRUSTED_PROXIES` the address it reports); an IPv6 address counts as
its /64, which one host holds whole. Two rules, both per web process, in memory:

- **Failed checks**: after `OPENCLAW_SOURCE_AUTH_FAILURES` (20) failed API-key checks from a
  source within a window of `OPENCLAW_SOURCE_WINDOW_SECONDS` (60; fixed windows aligned to the
  clock), a request from there whose credential has not authenticated in this process is
  refused before its key is looked up, until the window ends: `429` with the remaining seconds
  in `Retry-After`. The ASGI door refuses it before Django (no thread, no database); the gate
  (api/gate.py) refuses it on every other way in. A credential already served here (the door's
  memory, api/door.py) still passes: the clients a process serves are not refused because a
  stranger shares their address (a proxy, a NAT, the same host).
- **Its share of the counts for strangers**: a source holds at most
  `OPENCLAW_SOURCE_UNCHECKED_LIMIT` (8) of the door's `OPENCLAW_API_UNCHECKED_LIMIT` places
  (keys being looked up), and at most `OPENCLAW_SOURCE_PAGE_LIMIT` (4) of each of the pages'
  gate's counts for requests without a signed-in session (openclaw_site/page_gate.py); its
  surplus waits in a queue of that size, then is refused. The requests of one key share its
  place (a client's first burst is one key being checked). So one source's burst, of bad keys
  before the first rule trips or of anonymous pages, cannot take every place and keep a new
  client elsewhere out.

Per process rather than in Redis: what these limits protect is the process's own threads and
pooled connections, which no other process shares; the check sits on the door's event loop,
where a network round trip per request would be the cost it saves; and it holds when Redis is
down. With N web processes a source gets at most N × the failures per window: still a bounded
trickle. Memory is bounded too: the most recent `MAX_SOURCES` sources are remembered.
0 turns a rule off.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings

from ..lib.client_address import UNKNOWN, address_from, client_address, trusted_proxies

DEFAULT_AUTH_FAILURES = 20
DEFAULT_WINDOW_SECONDS = 60
DEFAULT_UNCHECKED = 8
DEFAULT_PAGES = 4
MAX_SOURCES = 100_000

_lock = threading.Lock()
_failures: OrderedDict[str, tuple[int, int]] = OrderedDict()  # source → (window index, count)
_shares: dict[tuple[str, str], int] = {}  # (kind, source) → the places it holds
_joined: dict[tuple[str, str, str], int] = {}  # (kind, source, credential) → requests on its place


def auth_failures() -> int:
    return int(getattr(settings, "OPENCLAW_SOURCE_AUTH_FAILURES", DEFAULT_AUTH_FAILURES))


def window_seconds() -> int:
    return max(1, int(getattr(settings, "OPENCLAW_SOURCE_WINDOW_SECONDS", DEFAULT_WINDOW_SECONDS)))


def source_key(address: str) -> str:
    """The source an address counts as: itself, or its /64 for IPv6 (a host gets a whole /64,
    so counting single addresses would give one client 2^64 sources)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address or UNKNOWN
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def source_of_request(request) -> str:
    """A Django request's source (REMOTE_ADDR, X-Forwarded-For from a trusted proxy)."""
    return source_key(client_address(request))


def source_of_scope(scope: dict) -> str:
    """An ASGI scope's source (its `client`, X-Forwarded-For from a trusted proxy)."""
    client = scope.get("client")
    peer = str(client[0]) if client else None
    forwarded = [
        v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"x-forwarded-for"
    ]
    return source_key(address_from(peer, ",".join(forwarded) or None, trusted_proxies()))


def retry_after(source: str | None, *, now: float | None = None) -> int | None:
    """Seconds until `source` may have a credential not known here checked again; None when it
    may now (or is no source: a local stdio process)."""
    limit = auth_failures()
    if source is None or limit <= 0:
        return None
    window = window_seconds()
    now = time.time() if now is None else now
    index = int(now // window)
    with _lock:
        record = _failures.get(source)
    if record is None or record[0] != index or record[1] < limit:
        return None
    return max(1, math.ceil((index + 1) * window - now))


def failed(source: str | None, *, now: float | None = None) -> None:
    """Count one failed API-key check from `source`."""
    if source is None or auth_failures() <= 0:
        return
    now = time.time() if now is None else now
    index = int(now // window_seconds())
    with _lock:
        window, count = _failures.pop(source, (index, 0))
        _failures[source] = (index, count + 1 if window == index else 1)  # (now the newest)
        if len(_failures) > MAX_SOURCES:
            _failures.popitem(last=False)


def refusal_text(source: str, wait: int) -> str:
    """Why a request from `source` is refused before its key is looked up."""
    return (
        f"too many failed API key checks from {source}: at most {auth_failures()} per "
        f"{window_seconds()} s (OPENCLAW_SOURCE_AUTH_FAILURES); an API key not yet served by "
        f"this server process is not checked from there until the window ends; retry after "
        f"{wait} s"
    )


UNCHECKED, PAGES = "unchecked", "pages"  # the shares a source holds: the door's, the pages' gate's


def share_limit(kind: str) -> int:
    if kind == PAGES:
        return int(getattr(settings, "OPENCLAW_SOURCE_PAGE_LIMIT", DEFAULT_PAGES))
    return int(getattr(settings, "OPENCLAW_SOURCE_UNCHECKED_LIMIT", DEFAULT_UNCHECKED))


def take_share(kind: str, source: str | None, credential: str | None = None) -> tuple[bool, bool]:
    """One of the source's places in `kind` (UNCHECKED: the door's unchecked places; PAGES: the
    pages' gate's anonymous and unknown-session places): (may go on, holds a place to give
    back). (False, False) when the source holds its share.

    Requests of one `credential` share its place: a client's first burst with a key this
    process has not checked yet (twenty sends at once) is one key being checked, not twenty,
    while distinct bad keys each take one."""
    limit = share_limit(kind)
    if source is None or limit <= 0:
        return True, False
    with _lock:
        if credential is not None and (kind, source, credential) in _joined:
            _joined[(kind, source, credential)] += 1
            return True, True
        held = _shares.get((kind, source), 0)
        if held >= limit:
            return False, False
        _shares[(kind, source)] = held + 1
        if credential is not None:
            _joined[(kind, source, credential)] = 1
        return True, True


@dataclass
class Share:
    """A request's try at one of its source's places (share()): `may` go on or not; `keep()`
    when the request got what the place was for (it gives the place back itself, later)."""

    kind: str
    source: str | None
    credential: str | None
    may: bool
    holds: bool
    kept: bool = False

    def keep(self) -> str | None:
        """Keep the place past the `with`: the source to give it back for (give_back_share),
        None when none is held (no source, the rule off)."""
        self.kept = True
        return self.source if self.holds else None


@contextlib.contextmanager
def share(kind: str, source: str | None, credential: str | None = None) -> Iterator[Share]:
    """One of the source's places in `kind` (take_share) while the caller takes the count it
    guards: given back at the end of the `with` unless the caller `keep()`s it (it got its
    count's place, and gives both back when its request is done). The door and the pages'
    gate take their places so."""
    may, holds = take_share(kind, source, credential)
    taken = Share(kind, source, credential, may, holds)
    try:
        yield taken
    finally:
        if holds and not taken.kept:
            give_back_share(kind, source, credential)  # type: ignore[arg-type]


def give_back_share(kind: str, source: str, credential: str | None = None) -> None:
    with _lock:
        if credential is not None and (kind, source, credential) in _joined:
            _joined[(kind, source, credential)] -= 1
            if _joined[(kind, source, credential)] > 0:
                return
            del _joined[(kind, source, credential)]
        left = _shares.get((kind, source), 0) - 1
        if left > 0:
            _shares[(kind, source)] = left
        else:
            _shares.pop((kind, source), None)


def unchecked_text(source: str) -> str:
    return (
        f"too many requests with API keys not checked yet from {source}: at most "
        f"{share_limit(UNCHECKED)} are checked at once per address on this server process "
        "(OPENCLAW_SOURCE_UNCHECKED_LIMIT); retry shortly"
    )


def counts() -> dict[str, int]:
    """What is held now (tests, and a look from a shell)."""
    with _lock:
        held = {kind: 0 for kind in (UNCHECKED, PAGES)}
        for (kind, _), count in _shares.items():
            held[kind] += count
        return {"sources": len(_failures), **held}


def forget() -> None:
    """Forget every source's failures and the places sources hold (tests)."""
    with _lock:
        _failures.clear()
        _shares.clear()
        _joined.clear()
