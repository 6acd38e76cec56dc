"""What an ACP harness says, as transcript messages, written as it arrives.

`Mapper` turns events of the harness process (client.py: ACP `session/update` payloads, the
permission decisions, start and end) into OpenClaw transcript messages: agent text → assistant
text, thoughts → thinking blocks, a tool call → an assistant `toolCall` block and, when it ends
(completed / failed), its `toolResult` with the same id. A call still open when the turn ends
gets a toolResult saying so, so every call is paired. `TranscriptWriter` appends each batch in
its own transaction (live followers hear it after commit, as any append), and with
`streamTo: "parent"` also writes short progress notes into the requester's transcript.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from .. import store
from ..models import Session
from ..transcript import tool_result_message

MAX_TEXT = 100_000  # one message's text; longer tool output is cut (the harness keeps its own)


def text_of(content: Any) -> str:
    """The text of an ACP content block, or of a tool call's content list."""
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text") or "")
        if content.get("type") == "content":  # ToolCallContent wrapping a block
            return text_of(content.get("content"))
        if content.get("type") == "diff":
            return f"diff {content.get('path', '')}"
        if content.get("type") == "resource_link":
            return str(content.get("uri") or "")
        return ""
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(c) for c in content) if t)
    return ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n…(cut)"


@dataclass
class Mapper:
    """ACP events → transcript messages, keeping what pairing and the reply need."""

    harness_id: str
    open_calls: dict[str, str] = field(default_factory=dict)  # toolCallId → tool name
    final_text: str = ""  # the agent's text since its last tool call: the turn's reply
    all_text: str = ""
    usage: dict[str, int] = field(default_factory=dict)

    def messages(self, events: list[tuple[str, dict]]) -> list[dict]:
        out: list[dict] = []
        for kind, data in events:
            if kind == "update":
                self._update(data, out)
            elif kind == "permission":
                out.append(self._permission(data))
            elif kind == "started":
                out.append(
                    system(
                        f"ACP harness {self.harness_id} started (session {data.get('sessionId')}, "
                        f"cwd {data.get('cwd')})",
                        acp={"event": "started", **data},
                    )
                )
        return out

    def close_open_calls(self, reason: str) -> list[dict]:
        """toolResults for the calls the turn left open (crash, cancel, timeout)."""
        out = [
            tool_result_message(call_id, name, f"(no result: {reason})", error=True)
            for call_id, name in self.open_calls.items()
        ]
        self.open_calls.clear()
        return out

    def _update(self, update: dict, out: list[dict]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = text_of(update.get("content"))
            if text:
                self.final_text += text
                self.all_text += text
                _append_block(out, "text", text)
        elif kind == "agent_thought_chunk":
            text = text_of(update.get("content"))
            if text:
                _append_block(out, "thinking", text)
        elif kind == "tool_call":
            self._tool_call(update, out)
        elif kind == "tool_call_update":
            self._tool_call_update(update, out)
        elif kind == "plan":
            entries = update.get("entries") or []
            lines = [f"- [{e.get('status', '')}] {e.get('content', '')}" for e in entries]
            out.append(system("Plan:\n" + "\n".join(lines), acp={"event": "plan"}))
        elif kind == "usage_update":
            self._usage(update)

    def _tool_call(self, update: dict, out: list[dict]) -> None:
        call_id = str(update.get("toolCallId") or "")
        name = str(update.get("kind") or "other")
        self.final_text = ""
        raw = update.get("rawInput")
        arguments = raw if isinstance(raw, dict) else ({"input": raw} if raw is not None else {})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": call_id,
                        "name": name,
                        "arguments": arguments,
                        "title": str(update.get("title") or ""),
                    }
                ],
                "stopReason": "toolUse",
            }
        )
        self.open_calls[call_id] = name
        if update.get("status") in ("completed", "failed"):
            self._tool_call_update(update, out)

    def _tool_call_update(self, update: dict, out: list[dict]) -> None:
        status = update.get("status")
        if status not in ("completed", "failed"):
            return  # pending / in_progress: the call's result is still to come
        call_id = str(update.get("toolCallId") or "")
        if call_id not in self.open_calls:
            # A result for a call we never saw start (or already closed): show it, paired.
            self._tool_call({**update, "status": None}, out)
        name = self.open_calls.pop(call_id)
        text = text_of(update.get("content"))
        if not text and update.get("rawOutput") is not None:
            raw = update["rawOutput"]
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        out.append(
            tool_result_message(
                call_id, name, _cut(text or f"({status})"), error=status == "failed"
            )
        )

    def _permission(self, data: dict) -> dict:
        call = data.get("toolCall") or {}
        title = call.get("title") or call.get("kind") or call.get("toolCallId") or "a tool call"
        verdict = "allowed" if data.get("allowed") else "denied"
        return system(
            f"Permission {verdict} by permissionMode {data.get('mode')}: {title}",
            acp={"event": "permission", **data},
        )

    def _usage(self, update: dict) -> None:
        used = update.get("used")
        if isinstance(used, int):
            self.usage = {"totalTokens": used}


def _append_block(out: list[dict], block_type: str, text: str) -> None:
    """Chunks that arrive together go into one message (the same kind in a row)."""
    key = "text" if block_type == "text" else "thinking"
    last = out[-1] if out else None
    if (
        last is not None
        and last.get("role") == "assistant"
        and len(last["content"]) == 1
        and last["content"][0].get("type") == block_type
    ):
        last["content"][0][key] += text
        return
    out.append({"role": "assistant", "content": [{"type": block_type, key: text}]})


def system(text: str, **extra: Any) -> dict:
    return {
        "role": "system",
        "content": [{"type": "text", "text": text}],
        "provenance": {"kind": "internal_system", "sourceTool": "sessions_spawn"},
        **extra,
    }


class TranscriptWriter:
    """Appends a child's messages as they come; with a parent, progress notes there too."""

    def __init__(self, child: Session, *, parent_key: str | None, harness_id: str):
        self.child = child
        self.parent = Session.objects.filter(key=parent_key).first() if parent_key else None
        self.mapper = Mapper(harness_id)
        self.written = 0

    def write(self, events: list[tuple[str, dict]]) -> None:
        self.append(self.mapper.messages(events))

    def close(self, reason: str) -> None:
        self.append(self.mapper.close_open_calls(reason))

    def append(self, raw: list[dict]) -> None:
        if not raw:
            return
        messages = [store.read_message(i, m) for i, m in enumerate(raw)]
        notes = self._progress(raw) if self.parent is not None else []
        with transaction.atomic():
            store.append_to_session(self.child, messages)
            if notes and self.parent is not None:
                store.append_to_session(self.parent, notes)
        self.written += len(messages)

    def _progress(self, raw: list[dict]) -> list:
        """One short note per batch for the requester (streamTo: "parent")."""
        parts = []
        for message in raw:
            for block in message.get("content") or []:
                if block.get("type") == "text" and message["role"] == "assistant":
                    parts.append(block["text"])
                elif block.get("type") == "toolCall":
                    parts.append(f"[tool {block['name']}: {block.get('title') or block['id']}]")
            if message["role"] == "toolResult":
                parts.append(f"[tool result{' (error)' if message['isError'] else ''}]")
        text = "".join(parts).strip()
        if not text:
            return []
        note = system(
            f"[{self.child.key}] {text[:2000]}",
            acpProgress={"childSessionKey": self.child.key},
        )
        return [store.read_message(0, note)]
