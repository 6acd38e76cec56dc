"""The MCP server on stdin/stdout, for a desktop client that starts it as a subprocess
(`manage.py mcp --key …`, or the `openclaw-sessions-mcp` console script).

The key is given once, at start (or the name of an environment variable that holds it, so it
stays out of the client's config file and the process list). It is checked again on every
call with the same `authenticate` the HTTP edge uses: revoking it stops the next call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from openclaw_common.errors import Unauthenticated

from ..access.identity import Requester, authenticate, requester_for
from ..api import gate
from .server import build_server, in_thread

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def key_from(value: str) -> str:
    """`value` itself, or the environment variable it names (OPENCLAW_API_KEY)."""
    if _ENV_NAME.fullmatch(value):
        if value not in os.environ:
            raise Unauthenticated(f"--key names the environment variable {value}, which is not set")
        return os.environ[value].strip()
    return value.strip()


def bad_key_text(value: str) -> str:
    """The stdio text for a missing, unknown or revoked key. The API's one text says to send an
    `Authorization` header, which a process started with `--key` has no way to do; this one
    names what it can change, and still does not say which of the three it was."""
    if _ENV_NAME.fullmatch(value):
        return (
            f"Invalid or missing API key: the environment variable {value} (--key {value}) does "
            "not hold a usable API key; set it to one (`manage.py create_api_key`)"
        )
    return (
        "Invalid or missing API key: --key is not a usable API key; give one "
        "(`manage.py create_api_key`), or the name of an environment variable holding it "
        "(--key OPENCLAW_API_KEY)"
    )


@contextmanager
def stdio_text(key_argument: str) -> Iterator[None]:
    """Unauthenticated inside, with the stdio text for `--key` (other refusals unchanged)."""
    try:
        yield
    except Unauthenticated:
        raise Unauthenticated(bad_key_text(key_argument)) from None


def stdio_caller(token: str, session_key: str | None, key_argument: str):
    def resolve() -> Requester:
        # Admitted at each call as an HTTP request is: revoked or over its rate stops it.
        with stdio_text(key_argument):
            # A local process its user started: no address to count failures by.
            api_key = gate.admit(f"Bearer {token}", source=None)
        return requester_for(api_key, session_key=session_key)

    async def caller(ctx: ServerRequestContext[Any, Any]) -> Requester:
        return await in_thread(resolve)()

    return caller


def check_key(token: str, session_key: str | None, key_argument: str) -> None:
    """Refuse to start with a key that cannot act (a client shows the process's stderr).
    `key_argument` is what `--key` said (the key, or the variable's name), for the text."""
    with stdio_text(key_argument):
        api_key = authenticate(f"Bearer {token}")
    requester_for(api_key, session_key=session_key)


def serve(token: str, session_key: str | None, key_argument: str) -> None:
    server = build_server(stdio_caller(token, session_key, key_argument))

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
