"""The demo's ACP harness `echo`: an ACP agent that says the task back (docs/acp.md).

Run by a worker as a harness process (`python sessions_app/acp_agents/echo.py`), speaking ACP on
stdin/stdout through the `agent-client-protocol` package's agent side. It imports nothing of this
project, so it runs from any working directory. For each prompt it:
1. starts one tool call ("Read the task", kind read) and asks permission for it; the call
   completes when allowed and fails when denied (the harness's permissionMode decides);
2. streams the task text back in a few chunks (`--chunks`, default 3; `--delay` seconds apart,
   default 0.05), stopping early on session/cancel;
3. ends the turn (stopReason end_turn, or cancelled).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SseMcpServer,
    ToolCallUpdate,
)

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def chunks_of(text: str, count: int) -> list[str]:
    """`text` in `count` pieces (fewer for short text), cut at spaces where possible."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, count)))
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.rfind(" ", start + 1, end)
        if end < len(text) and space > start:
            end = space + 1
        pieces.append(text[start:end])
        start = end
    return pieces


class EchoAgent(Agent):
    def __init__(self, *, chunks: int, delay: float):
        self.chunks = chunks
        self.delay = delay
        self.client: Client | None = None
        self.cancelled: set[str] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="openclaw-echo", title="Echo", version="1"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"echo-{uuid.uuid4()}")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self.client is not None
        text = "".join(getattr(block, "text", "") for block in prompt)
        await self.read_task(session_id, text)
        for piece in chunks_of(text, self.chunks):
            if session_id in self.cancelled:
                return PromptResponse(stop_reason="cancelled")
            await self.client.session_update(session_id, update_agent_message_text(piece))
            await asyncio.sleep(self.delay)
        if session_id in self.cancelled:
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason="end_turn")

    async def read_task(self, session_id: str, text: str) -> None:
        """One tool call, so a client shows a paired call and result (and a permission)."""
        assert self.client is not None
        call_id = f"read-{uuid.uuid4().hex[:8]}"
        await self.client.session_update(
            session_id,
            start_tool_call(
                call_id,
                "Read the task",
                kind="read",
                status="pending",
                raw_input={"characters": len(text)},
            ),
        )
        answer = await self.client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title="Read the task", kind="read"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        allowed = getattr(outcome, "option_id", None) == "allow"
        result = (
            f"The task has {len(text)} characters."
            if allowed
            else "Permission denied: the task was not read."
        )
        await self.client.session_update(
            session_id,
            update_tool_call(
                call_id,
                status="completed" if allowed else "failed",
                content=[tool_content(text_block(result))],
            ),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    # The ACP Agent protocol's other methods (load_session, authenticate, …) are optional: the
    # package's router answers them from the protocol's own stubs, which mypy reads as abstract.
    agent = EchoAgent(chunks=args.chunks, delay=args.delay)  # type: ignore[abstract]
    asyncio.run(run_agent(agent))


if __name__ == "__main__":
    main()
