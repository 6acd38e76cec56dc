"""Publishing "session X changed" hints after commit (STYLE.md rule 4).

Writers call `session_changed(pk, reason, last_seq=...)` inside the transaction that changed the
session. After commit the hint wakes the hub of this process at once and, with REDIS_URL, is sent
to the `openclaw.live` channel-layer group that every web process's hub belongs to (so a worker's
append reaches browsers connected to web processes). Without Redis, other processes find the
change by polling (hub.POLL_SECONDS).

Sending through the channel layer is async and takes a Redis round trip, so it runs on one
background thread per process with its own event loop: the writer only enqueues, and hints that
pile up while a send is in flight go out together in the next one.

`publish_delta(pk, payload)` sends what is not a row: the text an ACP harness is still streaming
(acp/transcript.py), to the followers of a session as `session.delta` events, at once (there is
no transaction to wait for) and by the same two paths. Without REDIS_URL a delta reaches only
the hubs of the process that wrote it; the others see the stored message when it comes.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import uuid
from typing import NamedTuple

from django.conf import settings
from django.db import transaction

log = logging.getLogger("openclaw.live")

GROUP = "openclaw.live"
EXIT_FLUSH_SECONDS = 2
REASONS = ("created", "updated", "archived", "restored", "run", "messages")
_ORIGIN = uuid.uuid4().hex

# Hubs running in this process (normally one: the ASGI server's event loop).
_local_hubs: set = set()
_local_lock = threading.Lock()


def register_local(hub) -> None:
    with _local_lock:
        _local_hubs.add(hub)


def unregister_local(hub) -> None:
    with _local_lock:
        _local_hubs.discard(hub)


def session_changed(session_pk: int, reason: str, *, last_seq: int | None = None) -> None:
    """Announce, once the current transaction commits, that a session changed."""
    assert reason in REASONS, reason
    hint = (session_pk, reason, last_seq)
    transaction.on_commit(lambda: publish([hint]), robust=True)


def origin() -> str:
    """This process, so its hubs skip the deltas they already had at first hand (forked
    workers share the module's uuid, not their pid)."""
    return f"{_ORIGIN}-{os.getpid()}"


def publish_delta(session_pk: int, payload: dict) -> None:
    """Hand a followed session's streaming text to live followers now (not a row: nothing to
    commit, nothing to replay; a follower that misses one reads the stored message)."""
    with _local_lock:
        hubs = list(_local_hubs)
    for hub in hubs:
        hub.delta_threadsafe(session_pk, payload)
    if settings.REDIS_URL:
        _Publisher.get().put(_Delta(session_pk, payload))


class _Delta(NamedTuple):
    session_pk: int
    payload: dict


def publish(hints: list[tuple]) -> None:
    with _local_lock:
        hubs = list(_local_hubs)
    for hub in hubs:
        hub.poke_threadsafe(hints)
    if settings.REDIS_URL:
        _Publisher.get().put(hints)


class _Publisher:
    """A daemon thread that owns an event loop and the channel layer for this process."""

    _instance: _Publisher | None = None
    _pid: int | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> _Publisher:
        with cls._lock:
            # After a fork (django-q2 workers) the parent's thread does not exist in the child.
            if cls._instance is None or cls._pid != os.getpid():
                cls._instance = cls()
                cls._pid = os.getpid()
            return cls._instance

    def __init__(self):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="live-hints", daemon=True)
        self.thread.start()
        # A process that exits right after a commit (a management command, a script) would take
        # its last hints with it, and subscribers would wait for the hubs' safety poll.
        atexit.register(self.flush, EXIT_FLUSH_SECONDS)

    def put(self, hints: list[tuple] | _Delta) -> None:
        self.queue.put(hints)

    def flush(self, timeout: float) -> bool:
        """Wait (up to `timeout` s) until what was put before this call has been published."""
        done = threading.Event()
        self.queue.put(done)
        return done.wait(timeout)

    def _run(self) -> None:
        from channels.layers import get_channel_layer

        loop = asyncio.new_event_loop()
        layer = get_channel_layer()
        while True:
            items = [self.queue.get()]
            while True:
                try:
                    items.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            batch = [hint for item in items if isinstance(item, list) for hint in item]
            deltas = [list(item) for item in items if isinstance(item, _Delta)]
            message = {"type": "live.hints", "hints": batch}
            if deltas:
                message.update(deltas=deltas, origin=origin())
            try:
                if batch or deltas:
                    loop.run_until_complete(layer.group_send(GROUP, message))
            except Exception:  # a hint is best effort: hubs poll anyway
                log.warning("could not publish %d live hint(s)", len(batch), exc_info=True)
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()
