"""The MCP server on stdin/stdout, for a desktop client that starts it as a subprocess
(`manage.py mcp --key …`, or the `openclaw-sessions-mcp` console script).

The key is given once, at start (or the name of an environment variable that holds it, so it
stays out of the client's config file and the process list). It is checked again on every
call with the same `authenticate` the HTTP edge uses: revoking it stops the next call.
"""

from __future__ import annotations

import os
import re
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


def stdio_caller(token: str, session_key: str | None):
    header = f"Bearer {token}"

    def resolve() -> Requester:
        # Admitted at each call as an HTTP request is: revoked or over its rate stops it.
        return requester_for(gate.admit(header), session_key=session_key)

    async def caller(ctx: ServerRequestContext[Any, Any]) -> Requester:
        return await in_thread(resolve)()

    return caller


def check_key(token: str, session_key: str | None) -> None:
    """Refuse to start with a key that cannot act (a client shows the process's stderr)."""
    requester_for(authenticate(f"Bearer {token}"), session_key=session_key)


def serve(token: str, session_key: str | None = None) -> None:
    server = build_server(stdio_caller(token, session_key))

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
