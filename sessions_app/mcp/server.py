"""The MCP server: every registered tool (and OpenClaw's `mcp serve` tools) for any MCP client.

Built on the official SDK's low-level `Server`; the transports (streamable HTTP at `/mcp/`,
`manage.py mcp` on stdio) only differ in how they say who is calling (`Caller`).

- `tools/list` offers each declaration as it is: the input schema is `Declaration.parameters()`
  (what `/tools/invoke` validates with), the output schema the declared result.
- `tools/call` goes through `ToolRegistry.invoke`, the function `/tools/invoke` calls. A result
  carries the details as `structuredContent` and, as text, what OpenClaw's envelope carries
  (the pretty JSON of the details; the bridge tools have their own short texts).
- A refusal (`Forbidden`, `NotFound`), a bad argument (the Args texts, naming the argument;
  `store.check_storable`'s, as on every way in: no NUL characters or unpaired surrogates, no
  nesting past the depth limit) and a key that may not act as the session are tool results
  with `isError`, so a model can read them and correct itself (MCP 2025-11-25: input errors are
  tool errors). An unknown tool is a protocol error, as the spec says.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from openclaw_common.errors import InvalidArgument, Refusal, ToolError

from ..access.identity import Requester
from ..api.http import is_unavailable
from ..api.tools_invoke import tool_result

# ORM code off the event loop on the shared pool, stale connections dropped around it: MCP
# requests run outside Django's request cycle, as the WebSocket's do.
from ..live.consumer import in_thread
from ..store import check_storable
from ..tools import TOOLS, ToolRegistry, UnknownTool
from . import bridge_tools, resources

SERVER_NAME = "openclaw-sessions"
UNAVAILABLE = "the database is busy or unreachable; retry shortly"
PROGRESS_SECONDS = 5.0

# The registry's tools, then OpenClaw's `mcp serve` ones (MCP-only; a registry tool of the same
# name would win).
MCP_TOOLS = ToolRegistry([*TOOLS, *(t for t in bridge_tools.BRIDGE_TOOLS if t.name not in TOOLS)])

# Who is calling, per request: the transport's answer (HTTP: the key its wrapper authenticated
# for this very request; stdio: the key given at start, checked again). Raises ToolError.
Caller = Callable[[ServerRequestContext[Any, Any]], Awaitable[Requester]]


@functools.cache
def tool_list() -> list[types.Tool]:
    """Declarations do not change while the process runs: built once."""
    return [
        types.Tool(
            name=tool.name,
            description=tool.declaration.description,
            input_schema=tool.declaration.parameters(),
            output_schema=tool.declaration.result,
        )
        for tool in MCP_TOOLS
    ]


@functools.cache
def input_schema(name: str) -> dict[str, Any] | None:
    """For the SDK's `Mcp-Param-*` header check on 2026-era calls, which otherwise runs the whole
    tools/list handler on every tools/call (measured: +1.5 ms a call)."""
    return MCP_TOOLS.get(name).declaration.parameters() if name in MCP_TOOLS else None


def success(name: str, details: dict) -> types.CallToolResult:
    text = bridge_tools.result_text(name, details)
    if text is None:
        text = tool_result(details)["result"]["content"][0]["text"]
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=details, is_error=False
    )


def failure(details: dict, text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=details, is_error=True
    )


async def call(
    name: str, arguments: Any, *, caller: Caller, ctx: ServerRequestContext[Any, Any]
) -> types.CallToolResult:
    """One tool call, as a CallToolResult (or an MCPError for an unknown tool)."""
    if name not in MCP_TOOLS:
        raise MCPError(types.INVALID_PARAMS, UnknownTool(name).message)
    try:
        # What the HTTP ways in check on the decoded body (api/http.decode_json): a NUL stored
        # on SQLite is a DataError on PostgreSQL, and orjson cannot encode past 255 levels.
        check_storable(arguments, "arguments")
        requester = await caller(ctx)
        invocation = MCP_TOOLS.invoke(
            name, requester=requester, args=arguments, in_thread=in_thread
        )
        if MCP_TOOLS.get(name).run_async is not None:
            details = await with_progress(invocation, ctx)
        else:
            details = await invocation
    except Refusal as exc:
        details = {"status": exc.status, "error": exc.message}
        # OpenClaw's bridge tools say the error alone; a registry tool's text is its details.
        if name in bridge_tools.TOOLS_BY_NAME:
            return failure(details, exc.message)
        return failure(details, tool_result(details)["result"]["content"][0]["text"])
    except InvalidArgument as exc:
        return failure({"status": "error", "error": exc.message, "type": "tool_error"}, exc.message)
    except ToolError as exc:  # AccessDenied, Unauthenticated (a key revoked since the request)
        return failure(
            {"status": "error", "error": exc.message, "type": exc.error_type}, exc.message
        )
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return failure(
            {"status": "error", "error": UNAVAILABLE, "type": "unavailable"}, UNAVAILABLE
        )
    return success(name, details)


async def with_progress(invocation: Awaitable[dict], ctx: ServerRequestContext[Any, Any]) -> dict:
    """Await a tool that waits (sessions_send's reply, events_wait), telling a client that asked
    for progress (a progressToken) every PROGRESS_SECONDS that the wait is still held, so it
    neither times out nor looks hung. Cancelling the request cancels the wait."""
    task = asyncio.ensure_future(invocation)
    waited = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=PROGRESS_SECONDS)
            if done:
                return task.result()
            waited += PROGRESS_SECONDS
            await ctx.session.report_progress(waited, message=f"still waiting ({waited:.0f} s)")
    finally:
        task.cancel()


def build_server(caller: Caller) -> Server:
    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(params.name, params.arguments, caller=caller, ctx=ctx)

    return Server(
        SERVER_NAME,
        version="1",
        instructions=(
            "OpenClaw's session tools: list sessions, read transcripts, message another "
            "session and wait for its reply, spawn sub-agents. Transcripts are resources "
            "(session://<key>)."
        ),
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        **resources.handlers(caller),
    )
