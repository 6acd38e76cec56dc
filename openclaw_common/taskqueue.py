"""The django-q2 task queue as both apps use it: one broker per process, tasks enqueued only
after the transaction that made them due has committed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.db import transaction
from django.utils.module_loading import import_string

log = logging.getLogger("openclaw.tasks")

_broker: tuple[int, Any] | None = None  # (pid, broker): a forked worker makes its own


def broker():
    """The django-q broker of this process. async_task() would build a new one for every task,
    and with Redis that is a new client and TCP connection per enqueue; redis-py's client is
    thread-safe and the ORM broker holds no connection of its own, so one per process serves."""
    global _broker
    if _broker is None or _broker[0] != os.getpid():
        from django_q.brokers import get_broker

        _broker = (os.getpid(), get_broker())
    return _broker[1]


def enqueue(task: str, *args: Any, name: str) -> None:
    """Hand `task(*args)` to the workers now, or, inside `enqueues_held()`, once the caller
    lets them go."""
    held = _held.get()
    if held is not None:
        held.append(functools.partial(_enqueue_now, task, *args, name=name))
        return
    _enqueue_now(task, *args, name=name)


def _enqueue_now(task: str, *args: Any, name: str) -> None:
    from django_q.tasks import async_task

    async_task(task, *args, q_options={"task_name": name, "broker": broker()})


# Enqueues held back by the code running now (enqueues_held), and the work an API handler
# does after its response has left (openclaw_site/middleware.ApiHandler).
_held: ContextVar[list[Callable[[], None]] | None] = ContextVar("openclaw_held", default=None)
_after_response: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "openclaw_after_response", default=None
)


@contextlib.contextmanager
def enqueues_held() -> Iterator[list[Callable[[], None]]]:
    """Within it, enqueue() (the after-commit enqueue of a run, say) keeps the task in the
    list it yields instead of handing it to the broker: a send that answers without waiting
    answers at commit, and its run is enqueued after the answer (`release_later`). The list
    travels into `sync_to_async` steps with the context."""
    held: list[Callable[[], None]] = []
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


def collect_after_response() -> list[Callable[[], None]]:
    """For an API handler, before it calls the view: the list of work to do once the response
    has been sent (run_all, in a database step)."""
    work: list[Callable[[], None]] = []
    _after_response.set(work)
    return work


def release_later(held: list[Callable[[], None]]) -> bool:
    """Hand held enqueues to the API handler's after-response work; False when there is no
    handler collecting it (the caller then runs them itself: run_all)."""
    work = _after_response.get()
    if work is None:
        return False
    work.extend(held)
    return True


def run_all(work: list[Callable[[], None]]) -> None:
    """Run held or after-response work; robust as after_commit is (the change it follows is
    committed and answered: a broker that is down is the sweeps' to make up for)."""
    for item in work:
        try:
            item()
        except Exception:
            log.exception("after-response work failed: %r", item)


def after_commit(function: Callable[..., Any], *args: Any) -> None:
    """Call `function(*args)` once the current transaction commits (at once outside one).

    Robust: an exception is logged and does not reach the caller, whose transaction has already
    committed (a broker that is down must not turn a stored change into an error response; the
    sweeps pick up what stayed due). Django 5.2 logs a robust callback's failure by its
    `__qualname__`, which a functools.partial lacks, so the callback is a named function.
    """

    def callback() -> None:
        function(*args)

    callback.__qualname__ = getattr(function, "__qualname__", None) or repr(function)
    transaction.on_commit(callback, robust=True)


def call_after_commit(path: str, *args: Any) -> None:
    """after_commit() of the function at dotted `path`, imported when the transaction commits:
    how a module calls into a layer above it (the watchers wake the run engine) without
    importing it."""

    def call(*call_args: Any) -> None:
        import_string(path)(*call_args)

    call.__qualname__ = path
    after_commit(call, *args)


def enqueue_after_commit(task: str, *args: Any, name: str) -> None:
    """enqueue() once the current transaction commits: a rolled-back change leaves nothing to run."""
    after_commit(functools.partial(enqueue, task, *args, name=name))


__all__ = [
    "after_commit",
    "broker",
    "call_after_commit",
    "collect_after_response",
    "enqueue",
    "enqueue_after_commit",
    "enqueues_held",
    "release_later",
    "run_all",
]


def keep_schedule(name: str, func: str, *, minutes: int | None = None) -> None:
    """Create or update the django-q2 schedule called `name` (idempotent: migrations and `serve`
    call it): `func` every `minutes`, or hourly without them, for ever."""
    from django_q.models import Schedule

    every = (
        {"schedule_type": Schedule.MINUTES, "minutes": minutes}
        if minutes
        else {"schedule_type": Schedule.HOURLY}
    )
    Schedule.objects.update_or_create(name=name, defaults={"func": func, "repeats": -1, **every})
