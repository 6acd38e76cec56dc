"""The django-q2 task queue as both apps use it: one broker per process, tasks enqueued only
after the transaction that made them due has committed.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils.module_loading import import_string

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
    """Hand `task(*args)` to the workers now."""
    from django_q.tasks import async_task

    async_task(task, *args, q_options={"task_name": name, "broker": broker()})


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


__all__ = ["after_commit", "broker", "call_after_commit", "enqueue", "enqueue_after_commit"]


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
