"""The scripted backend: deterministic replies from rules, for the demo and the tests.

Settings: {"type": "scripted", "rules"?: [...], "delayMs"?: n}. The first rule whose `match`
(a regex, searched in the last user text) and `on` (run kinds) fit decides:
  {"match": "...", "on"?: ["send", "step", "announce", "spawn", "ingest"],
   "reply"?: "text with {input}", "toolCalls"?: [{"name", "arguments"}],
   "error"?: "message", "delayMs"?: n}
`toolCalls` run first (as the session's own tool calls), then `reply` is given; `{input}` is the
last user text, `{toolResult}` the last tool result's text, `{childResults}` the child results
of a completion turn's message (one per line) and `{tools}` the names of the tools the turn was
offered (comma-separated). A turn whose tool calls yielded (sessions_yield)
ends with them. With no rule, the reply is
`ACK: <first 60 chars of the last user text>` (api.md §3).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from .base import BackendError, CallTool, CheckAbort, TurnInput, TurnOutput, ends_turn

RUN_KINDS = ("send", "step", "announce", "spawn", "ingest", "completion")


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    b.get("text", "")
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "text"
                )
    return ""


_CHILD_RESULT = re.compile(r"<prompt-data>\n(.*?)\n</prompt-data>", re.DOTALL)


def child_results(text: str) -> str:
    """The results a completion message carries (runs/prompts.completion_message)."""
    return "\n".join(match.strip() for match in _CHILD_RESULT.findall(text))


def pick_rule(rules: list[dict[str, Any]], *, text: str, kind: str) -> dict[str, Any] | None:
    for rule in rules:
        kinds = rule.get("on")
        if kinds and kind not in kinds:
            continue
        if re.search(rule.get("match", ""), text):
            return rule
    return None


def sleep(ms: int, check_abort: CheckAbort) -> None:
    """Sleep in short slices so an abort or a deadline stops the turn promptly."""
    deadline = time.monotonic() + ms / 1000
    while True:
        check_abort()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


class ScriptedBackend:
    def run(self, turn: TurnInput, *, call_tool: CallTool, check_abort: CheckAbort) -> TurnOutput:
        settings = turn.backend or {}
        text = last_user_text(turn.messages)
        rule = pick_rule(settings.get("rules") or [], text=text, kind=turn.kind) or {}
        sleep(int(settings.get("delayMs") or 0) + int(rule.get("delayMs") or 0), check_abort)
        if rule.get("error"):
            raise BackendError(rule["error"])
        out: list[dict[str, Any]] = turn.progress
        tool_text = ""
        calls = rule.get("toolCalls") or []
        if calls:
            blocks = []
            for call in calls:
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": f"call_{uuid.uuid4().hex[:12]}",
                        "name": call["name"],
                        "arguments": call.get("arguments") or {},
                    }
                )
            out.append(self._assistant(blocks, turn, stop="toolUse"))
            yielded = False
            for block in blocks:
                check_abort()
                details = call_tool(block["name"], block["arguments"])
                yielded = yielded or ends_turn(details)
                tool_text = json.dumps(details, ensure_ascii=False)
                out.append(
                    {
                        "role": "toolResult",
                        "toolCallId": block["id"],
                        "toolName": block["name"],
                        "content": [{"type": "text", "text": tool_text}],
                        "isError": details.get("status") in ("error", "forbidden"),
                    }
                )
            if yielded:  # the turn ends with its tool calls; the engine adds the acknowledgment
                return TurnOutput(messages=out, usage={"input": 0, "output": 0, "totalTokens": 0})
        if "reply" in rule:
            reply = (
                rule["reply"]
                .replace("{input}", text)
                .replace("{toolResult}", tool_text)
                .replace("{childResults}", child_results(text))
                .replace("{tools}", ",".join(tool.name for tool in turn.tools))
            )
        else:
            reply = f"ACK: {text[:60]}"
        out.append(self._assistant([{"type": "text", "text": reply}], turn, stop="stop"))
        words = len(text.split()) + len(reply.split())
        return TurnOutput(
            messages=out,
            usage={
                "input": words * 4,
                "output": len(reply.split()) * 4,
                "totalTokens": words * 4 + len(reply.split()) * 4,
            },
        )

    @staticmethod
    def _assistant(blocks: list[dict[str, Any]], turn: TurnInput, *, stop: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": blocks,
            "api": "scripted",
            "provider": "scripted",
            "model": turn.model or "scripted",
            "stopReason": stop,
        }
