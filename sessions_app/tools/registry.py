"""The tools by name, and the two ways every adapter calls one.

- `invoke()` (async): `/tools/invoke`, the WebSocket RPCs and any later protocol. Tools that wait
  (sessions_send) wait here holding no thread; the rest run in a worker thread.
- `call()` (sync): an agent's own tool call during its run, on a django-q worker.

Both raise the tool's errors (InvalidArgument, Refusal, UnknownTool); each adapter maps them to
its protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from asgiref.sync import sync_to_async

from openclaw_common.errors import ToolError

from ..access.identity import Requester
from .declaration import Tool


class UnknownTool(ToolError):
    http_status = 404
    error_type = "not_found"

    def __init__(self, name: str):
        super().__init__(f"Tool not available: {name}")


# How an async adapter runs sync tool code: asgiref's default (the request's thread) unless the
# adapter brings its own (the WebSocket consumer runs ORM code on a pool with fresh connections).
SyncRunner = Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]):
        self._tools = {tool.name: tool for tool in tools}

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def get(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise UnknownTool(name)
        return tool

    async def invoke(
        self,
        name: str,
        *,
        requester: Requester | Callable[[], Requester],
        args: Any,
        idempotency_key: str | None = None,
        in_thread: SyncRunner = sync_to_async,
    ) -> dict[str, Any]:
        """`requester` may be the function that resolves it (sync, database work): a sync tool
        then resolves it in the same thread step as it runs, one hand-off to a thread instead
        of two (each is a thread switch and a pool checkout; BENCHMARKS.md, issue 18)."""
        tool = self.get(name)
        args = tool.declaration.known(args)
        if tool.run_async is not None:
            if callable(requester):
                requester = await in_thread(requester)()
            return await tool.run_async(
                requester=requester, args=args, idempotency_key=idempotency_key
            )

        def run() -> dict[str, Any]:
            return tool.run(requester=requester() if callable(requester) else requester, args=args)

        return await in_thread(run)()

    def call(self, name: str, *, requester: Requester, args: Any) -> dict[str, Any]:
        return self.get(name).call(requester=requester, args=args)
