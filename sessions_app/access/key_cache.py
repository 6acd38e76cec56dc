"""The API keys and gateway settings a process has read, kept for its next requests (issue 26).

Every API request needs its key (with its agent), the gateway settings and the default agent's
sandbox flag: one statement (ApiKey.find_usable), which cost more than the rest of a small
request's server work. Here they are kept per process, tagged with the shared access version
(lib/shared_version.ACCESS) read before the statement, and used while the version is unchanged.
Every write of a key, an agent or the settings moves the version on every process (models'
AccessModel/AccessQuerySet), so a revoked key is refused, and a changed setting seen, on the
next request wherever it lands (tests/access/test_key_cache_processes.py proves it with two
server processes, on SQLite and on PostgreSQL with Redis). Where no version can be shared
(PostgreSQL without Redis), nothing is kept: the statement runs on every request, as before.

Only keys that exist and are not revoked are kept (an unknown key costs its statement, and the
door bounds how many run at once). An entry is also dropped after MAX_AGE_SECONDS, so a write
that bypassed the models (SQL by hand) counts within a minute.

`last_used_at` (issue 26): stamped at most once a TOUCH_EVERY_SECONDS per key and process, and
never on the request path: a use that is due is noted here and written, batched, after the
response (`flush_touches`, from the end of a request: openclaw_site's API handler and Django's
`request_finished`); the UPDATE skips rows another process stamped in the last minute.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass

from django.db import DatabaseError
from django.utils import timezone

from openclaw_common.dbstep import release_connection

from ..lib.shared_version import ACCESS
from ..models import ApiKey

log = logging.getLogger("openclaw.access")

MAX_AGE_SECONDS = 60.0
MAX_KEYS = 10_000


@dataclass(frozen=True)
class _Entry:
    version: tuple[int, bytes]
    at: float  # time.monotonic() when read
    key: ApiKey  # never handed out: each request gets its own copy
    settings: tuple | None  # what find_usable read beside the key (take_settings)


_entries: dict[str, _Entry] = {}
_lock = threading.Lock()
# lookup → monotonic time its use was last noted here (by lookup: SQLite reuses a deleted
# newest row's id)
_used_at: dict[str, float] = {}
_due: dict[int, str] = {}  # key id → its lookup, for a use not written yet


def cached(plaintext: str) -> ApiKey | None | bool:
    """The usable key `plaintext` names when this process knows the answer without the
    database (or the version's store): the key, or None when the plaintext is not a key's or
    the secret does not match; False when only the database can tell."""
    parsed = ApiKey.parse(plaintext)
    if parsed is None:
        return None
    lookup, secret = parsed
    entry = _entries.get(lookup)
    if entry is None:
        return False
    version = ACCESS.read()
    if version != entry.version or time.monotonic() - entry.at > MAX_AGE_SECONDS:
        return False
    return _handed_out(entry, secret)


def authenticate(plaintext: str) -> ApiKey | None:
    """The usable key `plaintext` names, or None: from this process's entries while the access
    version is unchanged, else from the database (one statement)."""
    known = cached(plaintext)
    if known is not False:
        return known  # type: ignore[return-value]
    parsed = ApiKey.parse(plaintext)
    assert parsed is not None  # cached() said None otherwise
    lookup, secret = parsed
    version = ACCESS.read()  # before the statement: a change after it moves the version
    key = ApiKey.find_usable(lookup)
    if key is None:
        _entries.pop(lookup, None)
        return None
    if version is None:
        return _noted(key) if key.secret_matches(secret) else None
    entry = _Entry(version, time.monotonic(), key, key.take_settings())
    with _lock:
        if len(_entries) >= MAX_KEYS:
            _entries.clear()
        _entries[lookup] = entry
        if key.last_used_at is not None and lookup not in _used_at:
            age = (timezone.now() - key.last_used_at).total_seconds()
            if age < ApiKey.TOUCH_EVERY_SECONDS:
                _used_at[lookup] = entry.at - age
    return _handed_out(entry, secret)


def _handed_out(entry: _Entry, secret: str) -> ApiKey | None:
    if not entry.key.secret_matches(secret):
        return None
    key = _copy(entry.key)
    key._settings_read = entry.settings
    return _noted(key)


def _copy(key: ApiKey) -> ApiKey:
    """A request's own ApiKey (its agent shared: nothing writes to it on the request path)."""
    copy = ApiKey.__new__(ApiKey)
    copy.__dict__.update(key.__dict__)
    state = copy._state = type(key._state)()
    state.db, state.adding = key._state.db, False
    state.fields_cache = dict(key._state.fields_cache)
    return copy


def _noted(key: ApiKey) -> ApiKey:
    """Note the key's use (written after the response, at most once a minute)."""
    now = time.monotonic()
    last = _used_at.get(key.lookup)
    if last is None or now - last >= ApiKey.TOUCH_EVERY_SECONDS:
        with _lock:
            _used_at[key.lookup] = now
            _due[key.id] = key.lookup
    return key


def touches_due() -> bool:
    return bool(_due)


def flush_touches(**_signal_kwargs) -> None:
    """Write the noted uses: one UPDATE. Sync code only (a request's end, after its response);
    on an event loop's thread it leaves them for the next."""
    if not _due:
        return
    try:
        asyncio.get_running_loop()
        return
    except RuntimeError:
        pass
    with _lock:
        due = dict(_due)
        _due.clear()
    try:
        ApiKey.stamp_used(list(due), timezone.now())
    except DatabaseError:
        log.warning("could not record the use of %d API keys; retried later", len(due))
        with _lock:
            for lookup in due.values():
                _used_at.pop(lookup, None)  # noted again on its next use
    finally:
        # As a request_finished receiver it runs after Django's close_old_connections, on the
        # request's own thread (a sync view's, which ends with the request): the connection it
        # opened must go back to the pool here, or nobody returns it and the pool loses a
        # place for good, once a minute per key (a soak's server, pool of 10, answered every
        # request 503 after 10 minutes; issue 28).
        release_connection()


def forget() -> None:
    """Drop every entry and noted use (tests)."""
    with _lock:
        _entries.clear()
        _used_at.clear()
        _due.clear()
