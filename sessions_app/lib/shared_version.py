"""A version every process of the deployment reads without a database statement, and any process
changes after it commits a write: what lets a per-process cache (the API keys and settings,
access/key_cache.py) be used on every request and still see every change on the next one.

`read()` returns a token; while nothing changed, every process reads the same token, and any
change (`changed()`, after commit) makes every later `read()` anywhere return another one. A
cache tags what it stores with the token it read *before* reading the database, and uses it
only while `read()` still returns that token. `read()` returns None when there is no shared
place to read it from: the caller must then not cache.

Where the token lives (docs/scaling.md, "The fixed cost of a request"):
- With REDIS_URL: one Redis key, `SET` to 16 random bytes by each change, `GET` by each read
  (one round trip on loopback, tens of microseconds; no database). Random rather than `INCR`:
  a Redis that restarted and lost the key can never hand back a token a process already
  cached under. If Redis cannot be reached, `read()` is None (the caller reads the database)
  for `RETRY_SECONDS`, then tries again.
- On the embedded SQLite default (one machine by nature: a file database): 16 bytes in a file
  beside the database file (`<db>.<name>.version`), rewritten in place by each change and read
  with one `pread` of a descriptor kept open (a few microseconds). Not the file's mtime (the
  kernel's clock for it ticks in milliseconds, so two changes in one tick look like one) and
  not SQLite's `PRAGMA data_version` (a statement, and it moves on every commit of any table).
- PostgreSQL without Redis: no shared place (processes may be on several machines): None.

Within the process that writes, `changed()` also moves a local generation at once (before the
commit), so this process's own next request never sees what it just changed, even inside a
transaction that has not committed (tests run in one).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction

log = logging.getLogger("openclaw.cache")

RETRY_SECONDS = 1.0  # after Redis failed: no shared token (no cache) for this long
REDIS_TIMEOUT_SECONDS = 0.25
TOKEN_BYTES = 16
NO_KEY = b"-"  # the Redis key does not exist yet (or Redis lost it): a token like any other


class SharedVersion:
    def __init__(self, name: str):
        self.name = name
        self._local = 0  # moved by this process's own changes, at once
        self._lock = threading.Lock()
        self._redis: tuple[int, object] | None = None  # (pid, client)
        self._redis_down_until = 0.0
        self._file: tuple[int, str, int] | None = None  # (pid, path, fd)

    # --- reading ---------------------------------------------------------------------------

    def read(self) -> tuple[int, bytes] | None:
        """The current token, or None when it cannot be shared (do not cache)."""
        shared = self._read_shared()
        return None if shared is None else (self._local, shared)

    def read_shared(self) -> bytes | None:
        """The shared part of the token alone (what other processes' changes move)."""
        return self._read_shared()

    def _read_shared(self) -> bytes | None:
        if settings.REDIS_URL:
            return self._redis_get()
        path = self._file_path()
        if path is None:
            return None
        if path == ":memory:":  # one process's private database: the local generation is all
            return b""  # (falsy: nothing another process could move)
        fd = self._fd(path)
        return os.pread(fd, TOKEN_BYTES, 0) or NO_KEY  # (a new file is empty)

    # --- changing --------------------------------------------------------------------------

    def changed(self) -> None:
        """Something the version covers is being written: this process stops using what it
        cached now, every process once the current transaction commits (at once outside one)."""
        with self._lock:
            self._local += 1
        transaction.on_commit(self._bump_shared, robust=True)

    def _bump_shared(self) -> None:
        with self._lock:
            self._local += 1  # what a thread cached during the commit is dropped too
        self.bump_now()

    def bump_now(self) -> None:
        """Move the shared token now (the caller has committed what it covers)."""
        token = secrets.token_bytes(TOKEN_BYTES)
        if settings.REDIS_URL:
            try:
                self._client().set(self._redis_key, token)
            except Exception:
                # The other processes cannot read the token either while Redis is away, so
                # they read the database; logged because a process that can still reach Redis
                # would keep its cache until the entries' age limit (key_cache.MAX_AGE_SECONDS).
                log.warning("could not publish a change of %s to Redis", self.name, exc_info=True)
            return
        path = self._file_path()
        if path is not None and path != ":memory:":
            os.pwrite(self._fd(path), token, 0)

    # --- Redis -----------------------------------------------------------------------------

    @property
    def _redis_key(self) -> str:
        return f"openclaw:version:{self.name}"

    def _client(self):
        pid = os.getpid()
        if self._redis is None or self._redis[0] != pid:  # a forked worker makes its own
            import redis

            client = redis.Redis.from_url(
                settings.REDIS_URL,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
            self._redis = (pid, client)
        return self._redis[1]

    def _redis_get(self) -> bytes | None:
        now = time.monotonic()
        if now < self._redis_down_until:
            return None
        try:
            value = self._client().get(self._redis_key)
        except Exception:
            self._redis_down_until = now + RETRY_SECONDS
            log.warning("Redis unreachable: %s is read from the database", self.name)
            return None
        return NO_KEY if value is None else bytes(value)

    # --- the file beside SQLite's ----------------------------------------------------------

    def _file_path(self) -> str | None:
        db = settings.DATABASES["default"]  # (the test database's name once it is made)
        if not db["ENGINE"].endswith("sqlite3"):
            return None
        name = str(db["NAME"])
        if name == ":memory:" or name.startswith("file:") or not name:
            return ":memory:"
        return f"{name}.{self.name}.version"

    def _fd(self, path: str) -> int:
        held = self._file
        pid = os.getpid()
        if held is not None and held[0] == pid and held[1] == path:
            return held[2]
        with self._lock:
            held = self._file
            if held is not None and held[0] == pid and held[1] == path:
                return held[2]
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            if held is not None and held[0] == pid:
                os.close(held[2])  # the test database replaced the first one
            self._file = (pid, path, fd)
            return fd


# Who may call, as what: the API keys, the agents (their sandbox flag) and the gateway settings.
ACCESS = SharedVersion("access")
# A run finished (runs/notify.py): without Redis, what wakes the waits of every process
# (runs/wait.py's TokenHub). With Redis the finish is published instead, and this is not used.
RUNS_FINISHED = SharedVersion("runs")
