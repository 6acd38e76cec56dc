"""MCP clients from the official SDK against a real server process (tests/servers.py)."""

from __future__ import annotations

import asyncio
import contextlib
import sys

from django.db import connections
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from sessions_app.models import ApiKey
from tests.servers import ROOT, child_env


async def db(fn, *args):
    """Run ORM code from a test's event loop: on a thread whose connection is closed after."""

    def run():
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(run)


def revoke(token: str) -> None:
    ApiKey.objects.get(lookup=token.split("_")[1]).revoke()


def key(scope: str = ApiKey.AGENT, **fields) -> str:
    """A fresh API key (committed: the server process reads it)."""
    if scope == ApiKey.AGENT:
        fields.setdefault("agent_id", "main")
    _, token = ApiKey.generate(scope=scope, **fields)
    return token


@contextlib.asynccontextmanager
async def http_client(server, token: str | None, *, mode: str = "auto", headers=None, **options):
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers={**auth, **(headers or {})}) as http:
        transport = streamable_http_client(server.url + "/mcp/", http_client=http)
        async with Client(transport, mode=mode, **options) as client:
            yield client


def stdio_parameters(token_or_env: str, env: dict | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--key", token_or_env],
        cwd=str(ROOT),
        env=child_env(**(env or {})),
    )


def texts(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")
