"""An ACP harness that misbehaves on purpose (tests/acp): `python misbehaving_agent.py <how>`.

- crash: a correct start, then, in the turn, one chunk and exit code 3 (a message on stderr);
- garbage: a correct start, then, in the turn, one chunk and a line that is not JSON;
- hang: never answers initialize;
- env: says its environment variable names and its cwd, as JSON text;
- stubborn: as env, and it does not end when its stdin closes (as codex-acp);
- files: the prompt is a JSON list of client requests (`{"read": path, "line"?, "limit"?}`,
  `{"write": path, "content": text}`, `{"terminal": command}`, each for the turn's ACP session
  or `"session"`'s) and of its own writes (`{"own": path, "content": text}`: appended by the
  harness itself, as its user); it makes each and says what came back, as a JSON list
  (`{"ok": …}` or `{"error": code or OSError name, "message": …}`); each session/new is a new id;
- resumable: announces loadSession; a loaded session replays "REPLAYED" (which the client must
  not store again); each turn says its session id, how it got it and how many prompts the
  session has had in this process;
- tools: announces loadSession and MCP over HTTP (mcpCapabilities.http); each turn says, as
  JSON, its session id, how the session was opened (new, loaded) and the MCP servers the client
  handed it then (name, url, the key's lookup: never the key);
- slow: one chunk a second for a minute, honouring session/cancel (and noting it in a file);
  what it has said so far is in `said.txt` in its cwd (its text is stored only when the
  segment ends, so a test waits for this file instead).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from acp import PROTOCOL_VERSION, Agent, RequestError, run_agent, update_agent_message_text
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptResponse,
)

HOW = sys.argv[1]


def servers(given: Any) -> list[dict]:
    """The MCP servers a session was handed: name, url and the key's lookup (`ocs_<lookup>_…`)."""
    said = []
    for server in given or []:
        headers = {h.name: h.value for h in getattr(server, "headers", [])}
        token = headers.get("Authorization", "").removeprefix("Bearer ")
        said.append({"name": server.name, "url": server.url, "lookup": token.split("_")[1]})
    return said


class Misbehaving(Agent):
    def __init__(self) -> None:
        self.client: Any = None
        self.cancelled = False
        self.sessions: dict[str, list[str]] = {}  # id → how it came, then its prompts

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        if HOW == "tools":
            return InitializeResponse(
                protocol_version=PROTOCOL_VERSION,
                agent_capabilities=AgentCapabilities(
                    load_session=True, mcp_capabilities=McpCapabilities(http=True)
                ),
            )
        if HOW == "resumable":
            return InitializeResponse(
                protocol_version=PROTOCOL_VERSION,
                agent_capabilities=AgentCapabilities(load_session=True),
            )
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if HOW == "tools":
            session_id = f"t{os.getpid()}-{len(self.sessions)}"
            self.sessions[session_id] = ["new", *servers(kwargs.get("mcp_servers"))]
            return NewSessionResponse(session_id=session_id)
        if HOW in ("resumable", "files"):
            session_id = f"{HOW[0]}{os.getpid()}-{len(self.sessions)}"
            self.sessions[session_id] = ["new"]
            return NewSessionResponse(session_id=session_id)
        return NewSessionResponse(session_id="s1")

    async def load_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> LoadSessionResponse | None:
        if HOW == "tools":
            self.sessions[session_id] = ["loaded", *servers(kwargs.get("mcp_servers"))]
            return LoadSessionResponse()
        self.sessions[session_id] = ["loaded"]
        await self.client.session_update(session_id, update_agent_message_text("REPLAYED"))
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled = True
        with open("cancelled.txt", "w") as marker:  # in the session's cwd
            marker.write("session/cancel received\n")

    async def say(self, text: str) -> None:
        await self.client.session_update("s1", update_agent_message_text(text))
        with open("said.txt", "a") as said:  # in the session's cwd
            said.write(text)

    async def ask(self, session_id: str, request: dict) -> dict:
        session_id = request.get("session", session_id)
        if "own" in request:
            try:
                with open(request["own"], "a") as own:
                    own.write(request["content"])
            except OSError as exc:
                return {"error": type(exc).__name__, "message": str(exc)}
            return {"ok": "appended"}
        try:
            if "read" in request:
                kwargs = {k: request[k] for k in ("line", "limit") if k in request}
                answer = await self.client.read_text_file(
                    path=request["read"], session_id=session_id, **kwargs
                )
                return {"ok": answer.content}
            if "write" in request:
                await self.client.write_text_file(
                    path=request["write"], content=request["content"], session_id=session_id
                )
                return {"ok": "written"}
            answer = await self.client.create_terminal(
                command=request["terminal"], session_id=session_id
            )
            return {"ok": answer.terminal_id}
        except RequestError as exc:
            return {"error": exc.code, "message": str(exc)}

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if HOW == "files":
            requests = json.loads(prompt[0].text)
            await self.say(json.dumps([await self.ask(session_id, r) for r in requests]))
            return PromptResponse(stop_reason="end_turn")
        if HOW == "tools":
            how, *given = self.sessions[session_id]
            text = json.dumps({"session": session_id, "how": how, "servers": given})
            await self.client.session_update(session_id, update_agent_message_text(text))
            return PromptResponse(stop_reason="end_turn")
        if HOW == "resumable":
            self.sessions[session_id].append("prompt")
            how, prompts = self.sessions[session_id][0], len(self.sessions[session_id]) - 1
            text = f"{session_id} {how} prompt {prompts}"
            await self.client.session_update(session_id, update_agent_message_text(text))
            return PromptResponse(stop_reason="end_turn")
        if HOW in ("env", "stubborn"):
            await self.say(json.dumps({"env": sorted(os.environ), "cwd": os.getcwd()}))
            return PromptResponse(stop_reason="end_turn")
        await self.say("partial output before trouble")
        await asyncio.sleep(0.3)
        if HOW == "crash":
            print("boom: the harness crashed", file=sys.stderr, flush=True)
            os._exit(3)
        if HOW == "garbage":
            os.write(1, b"this is not json-rpc\n")
            await asyncio.sleep(30)
        for i in range(60):
            if self.cancelled:
                return PromptResponse(stop_reason="cancelled")
            await self.say(f" tick {i}")
            await asyncio.sleep(1)
        return PromptResponse(stop_reason="end_turn")


if HOW == "hang":
    time.sleep(600)
else:
    asyncio.run(run_agent(Misbehaving()))
    if HOW == "stubborn":
        time.sleep(600)  # as codex-acp: its stdin closed, it stays
