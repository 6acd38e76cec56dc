"""django-q2's ORM broker, woken by an enqueue instead of looking every `poll` seconds.

The ORM broker's pusher reads the queue table, and when it is empty sleeps `poll` seconds
before it reads again: a task enqueued during the sleep waits for its end. At 0.05 s that was
half the poll on average in every run's round trip (a send that waits for its reply, a
sub-agent's start, a completion), and 20 statements a second of an idle worker.

Here an enqueue announces itself once its row is committed, and a pusher with an empty queue
waits for an announcement, or `IDLE_SECONDS` at most (a task whose lock ran out, the retry of
a lost worker's task, an announcement lost with a Redis that restarted: nothing announces
those). The announcement is a wake-up (lib/wakeups.py, as a run's finish is):
- with REDIS_URL: a Redis pub/sub channel (`<REDIS_PREFIX>:queue`), to which each pusher
  stays subscribed: every cluster of the deployment wakes, and the first to lock a task
  takes it, as before;
- on the embedded SQLite default: the `queue` version file beside the database, which the
  waiting pusher reads every `FILE_CHECK_SECONDS` (a `pread`, microseconds);
- PostgreSQL without Redis has neither: the broker then polls every `POLL_SECONDS`, as
  django-q2's does every `poll`.

Used when settings.Q_CLUSTER names it (`broker_class`): the ORM broker with a wake channel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django_q.brokers.orm import ORM
from django_q.conf import Conf

from ..lib import wakeups
from ..lib.shared_version import SharedVersion

log = logging.getLogger("openclaw.worker")

# The longest an idle pusher waits without an announcement (what nothing announces: above).
IDLE_SECONDS = float(os.environ.get("OPENCLAW_QUEUE_IDLE_SECONDS", "1.0"))
FILE_CHECK_SECONDS = 0.005
# Where nothing can announce (PostgreSQL without Redis, a Redis that is down): django-q2's
# polling, this often (its default, 0.2 s, was most of a send's round trip).
POLL_SECONDS = 0.05

QUEUE_VERSION = SharedVersion("queue")


def channel() -> str:
    return f"{settings.REDIS_PREFIX}:queue"


class WakingORM(ORM):
    def __init__(self, list_key: str | None = None):
        super().__init__(list_key=list_key)
        self._pubsub: tuple[int, Any] | None = None  # (pid, PubSub): a fork makes its own
        self._pubsub_down_until = 0.0

    # --- the enqueuing side ------------------------------------------------------------------

    def enqueue(self, task: str) -> int:
        pk = super().enqueue(task)
        # At once in autocommit (the row is committed); inside a transaction, at its commit:
        # announced earlier, a pusher could look before the row is visible and go back to sleep.
        transaction.on_commit(announce, using=Conf.ORM, robust=True)
        return pk

    # --- the pusher's side -------------------------------------------------------------------

    def dequeue(self) -> list[tuple[int, str]] | None:
        # What announces a task committed from now on, read before the queue is: an
        # announcement between the read of the queue and the wait is not missed.
        before = None if settings.REDIS_URL else QUEUE_VERSION.read_shared()
        pubsub = self._subscription() if settings.REDIS_URL else None
        # django-q2's read and lock of due tasks; its sleep is Q_CLUSTER's `poll`, 0 with this
        # broker (settings.py): the wait is below.
        tasks = super().dequeue()
        if tasks:
            return tasks
        if pubsub is not None:
            self._wait_published(pubsub)
        elif before:  # (b"" for an in-memory database: no other process to wake)
            self._wait_file(before)
        else:
            time.sleep(POLL_SECONDS)
        return None

    def _wait_file(self, before: bytes) -> None:
        deadline = time.monotonic() + IDLE_SECONDS
        while time.monotonic() < deadline:
            if QUEUE_VERSION.read_shared() != before:
                return
            time.sleep(FILE_CHECK_SECONDS)

    def _wait_published(self, pubsub: Any) -> None:
        try:
            deadline = time.monotonic() + IDLE_SECONDS
            # Drain: several announcements while a task ran mean one look at the queue.
            while (left := deadline - time.monotonic()) > 0:
                message = pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
                if message is not None:
                    while pubsub.get_message(ignore_subscribe_messages=True, timeout=0):
                        pass
                    return
        except Exception:  # noqa: BLE001 (any client error: poll until Redis answers again)
            log.warning("the task queue's wake channel is unreachable; polling", exc_info=True)
            self._drop_subscription()
            time.sleep(POLL_SECONDS)

    def _subscription(self) -> Any:
        """This process's subscription to the announcements (None while Redis is unreachable)."""
        pid = os.getpid()
        if self._pubsub is not None and self._pubsub[0] == pid:
            return self._pubsub[1]
        if time.monotonic() < self._pubsub_down_until:
            return None
        try:
            import redis

            # A PING every 30 s while idle: a connection that died without a word (a partition)
            # is noticed, and the pusher polls and subscribes again, rather than waiting out
            # IDLE_SECONDS for announcements that can no longer come.
            client = redis.Redis.from_url(
                settings.REDIS_URL, socket_connect_timeout=0.5, health_check_interval=30
            )
            pubsub = client.pubsub()
            pubsub.subscribe(channel())
        except Exception:  # noqa: BLE001
            self._pubsub_down_until = time.monotonic() + wakeups.RETRY_SECONDS
            log.warning("cannot subscribe to the task queue's wake channel; polling")
            return None
        self._pubsub = (pid, pubsub)
        return pubsub

    def _drop_subscription(self) -> None:
        held, self._pubsub = self._pubsub, None
        self._pubsub_down_until = time.monotonic() + wakeups.RETRY_SECONDS
        if held is not None and held[0] == os.getpid():
            with contextlib.suppress(Exception):
                held[1].close()


def announce() -> None:
    """Tell the waiting pushers that a committed task is due (a lost announcement costs that
    task `IDLE_SECONDS` at most)."""
    wakeups.send(channel(), QUEUE_VERSION, "a queued task")
