"""Database work inside async code that goes on after it: a wait, a poll loop, a stream.

Under ASGI, asgiref gives each request a thread of its own for `sync_to_async` (its
ThreadSensitiveContext), and Django's connections are per thread: a connection opened by a
request's first query stays checked out of the psycopg pool until the request ends. A request
that then waits 20 s for a run holds a pool connection it does not use; ten such waits emptied
the pool (max 10) and every other client's request queued on it until the pool's timeout
(issue 16: 54 waits and the probe answered 503 after 10-60 s). A step hands its connection back
as it returns, so waiting holds none.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connection

P = ParamSpec("P")
R = TypeVar("R")


def release_connection() -> None:
    """Hand this thread's connection back to PostgreSQL's pool. Not inside a transaction: a
    test's wrapping transaction (or a caller's atomic block) keeps it.

    SQLite's is kept: there is no pool to give it back to, it holds no lock between statements
    (autocommit), and opening it again (the file, the init_command's three PRAGMAs) cost 1.4 ms
    a step on a 2-core VM, a third of an agents_list call (issue 26). The API handler's steps
    run on long-lived threads, so each keeps one connection; a thread that ends takes its
    connection with it."""
    if connection.vendor == "sqlite" or connection.in_atomic_block:
        return
    connection.close()


def db_step(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`sync_to_async(fn)`, releasing the connection when `fn` returns or raises."""

    @functools.wraps(fn)
    def step(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            release_connection()

    return sync_to_async(step)
