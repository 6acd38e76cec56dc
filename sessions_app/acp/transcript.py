"""What an ACP harness says, as transcript messages, written as it arrives.

`Mapper` turns events of the harness process (client.py: ACP `session/update` payloads, the
permission decisions, start and end) into OpenClaw transcript messages: a contiguous run of agent
text → one assistant text message, of thoughts → one thinking block, a tool call → an assistant
`toolCall` block and, when it ends (completed / failed), its `toolResult` with the same id. A
text or thought segment is stored when something else happens (a tool call, a permission, the
end of the turn): a harness streams a paragraph in dozens of chunks, and every reader (history
limits, previews, search, the completion's Result) wants the paragraph. A call still open when
the turn ends gets a toolResult saying so, so every call is paired.

`TranscriptWriter` appends the finished messages of each batch in one transaction (live
followers hear them after commit, as any append), and meanwhile hands the open segment's new
text to live followers as `session.delta` events (live/hints.publish_delta: not rows, so a
reconnect reads the stored message instead). With `streamTo: "parent"` it also writes short
progress notes into the requester's transcript and streams the deltas there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from openclaw_common import keys

from .. import store
from ..lib import hints, sanitize
from ..models import GatewayConfig, Session
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
class Segment:
    """Agent text (or thoughts) not stored yet: it grows with every chunk until closed."""

    kind: str  # "text" | "thinking"
    text: str = ""
    sent: str = ""  # what live followers were sent of it (redacted), for the next delta


# ACP's stopReason → the transcript's (pi-ai's): how a text segment closed by the turn's end ended.
STOP_REASONS = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "cancelled": "aborted",
    "refusal": "error",
}


@dataclass
class Mapper:
    """ACP events → transcript messages, keeping what pairing and the reply need."""

    harness_id: str
    open_calls: dict[str, str] = field(default_factory=dict)  # toolCallId → tool name
    final_text: str = ""  # the agent's text since its last tool call: the turn's reply
    all_text: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    segment: Segment | None = None  # the text or thoughts still streaming
    denied: int = 0  # permission requests refused this turn (a harness may then end it)

    def messages(self, events: list[tuple[str, dict]]) -> list[dict]:
        """The messages these events finish; the open segment stays open (`segment`)."""
        out: list[dict] = []
        for kind, data in events:
            if kind == "update":
                self._update(data, out)
            elif kind == "permission":
                self.denied += 0 if data.get("allowed") else 1
                self._close_segment(out)
                out.append(self._permission(data))
            elif kind == "refused":  # files.py: a file request outside the rules
                self._close_segment(out)
                out.append(
                    system(
                        f"Refused {data.get('method')}: {data.get('reason')}",
                        acp={"event": "refused", **data},
                    )
                )
            elif kind == "started":
                self._close_segment(out)
                out.append(system(self._started(data), acp={"event": "started", **data}))
        return out

    def _started(self, data: dict) -> str:
        """The start message: which ACP session, where, as whom, and how it was reached."""
        user = f", uid {data['uid']}" if data.get("uid") is not None else ""
        process = "warm process" if data.get("warm") else "new process"
        where = f"cwd {data.get('cwd')}{user}, {process} {data.get('pid')}"
        session = data.get("sessionId")
        text = {
            "warm": f"ACP harness {self.harness_id} continued session {session} ({where})",
            "load": f"ACP harness {self.harness_id} loaded session {session} with session/load "
            f"({where})",
        }.get(
            str(data.get("resumed")),
            f"ACP harness {self.harness_id} started (session {session}, {where})",
        )
        if data.get("notContinued"):
            text += (
                f"\nACP session {data['notContinued']} could not be continued ({data.get('why')}): "
                "this turn starts a new ACP session, without the harness's own memory of the "
                "earlier turns."
            )
        if data.get("sandboxNote"):
            text += f"\n{data['sandboxNote']}"
        tools = data.get("sessionTools")
        if isinstance(tools, dict):
            text += (
                f"\nSession tools: MCP server {tools.get('server')} at {tools.get('url')}, as this "
                f"session (API key id {tools.get('keyId')}, revoked when the turn ends)."
            )
        if data.get("sessionToolsNote"):
            text += f"\n{data['sessionToolsNote']}"
        return text

    def finish(self, reason: str, *, stop_reason: str = "stop", error: str = "") -> list[dict]:
        """The turn ended: the open segment, marked with how it ended (`stopReason` `aborted`
        or `error` with `errorMessage` when it was cut), and results for the calls left open."""
        out: list[dict] = []
        self._close_segment(out, stop_reason=stop_reason, error=error)
        return out + self.close_open_calls(reason)

    def close_open_calls(self, reason: str) -> list[dict]:
        """toolResults for the calls the turn left open (crash, cancel, timeout)."""
        out = [
            tool_result_message(call_id, name, f"(no result: {reason})", error=True)
            for call_id, name in self.open_calls.items()
        ]
        self.open_calls.clear()
        return out

    def _close_segment(
        self, out: list[dict], *, stop_reason: str = "stop", error: str = ""
    ) -> None:
        segment, self.segment = self.segment, None
        if segment is None or not segment.text:
            return
        key = "text" if segment.kind == "text" else "thinking"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": [{"type": segment.kind, key: _cut(segment.text)}],
            "stopReason": stop_reason,
        }
        if error:
            message["errorMessage"] = error
        out.append(message)

    def _chunk(self, kind: str, text: str, out: list[dict]) -> None:
        if self.segment is not None and self.segment.kind != kind:
            self._close_segment(out)
        if self.segment is None:
            self.segment = Segment(kind)
        self.segment.text += text

    def _update(self, update: dict, out: list[dict]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = text_of(update.get("content"))
            if text:
                self.final_text += text
                self.all_text += text
                self._chunk("text", text, out)
        elif kind == "agent_thought_chunk":
            text = text_of(update.get("content"))
            if text:
                self._chunk("thinking", text, out)
        elif kind == "tool_call":
            self._close_segment(out)
            self._tool_call(update, out)
        elif kind == "tool_call_update":
            self._tool_call_update(update, out)
        elif kind == "plan":
            self._close_segment(out)
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
        # A result is a row: the text before it is stored first, so the order reads right.
        self._close_segment(out)
        call_id = str(update.get("toolCallId") or "")
        if call_id not in self.open_calls:
            # A result for a call we never saw start (or already closed): show it, paired.
            self._tool_call({**update, "status": None}, out)
        name = self.open_calls.pop(call_id)
        text = text_of(update.get("content"))
        if not text and update.get("rawOutput") is not None:
            text = _raw_output_text(update["rawOutput"])
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


# Where harnesses put a command's output in a tool call's rawOutput when it has no `content`
# (Codex: `formatted_output`, `aggregated_output`, `stdout`): the output, not the JSON around it.
RAW_OUTPUT_KEYS = ("formatted_output", "aggregated_output", "output", "stdout")


def _raw_output_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        for key in RAW_OUTPUT_KEYS:
            if isinstance(raw.get(key), str):
                return raw[key]  # empty: the caller says `(completed)`
    return json.dumps(raw, ensure_ascii=False)


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
        self.last_seq = Session.objects.values_list("last_seq", flat=True).get(pk=child.pk)
        key_settings = GatewayConfig.load().key_settings
        self.child_display = keys.display_key(child.key, key_settings)
        self.parent_display = (
            keys.display_key(self.parent.key, key_settings) if self.parent is not None else ""
        )

    def write(self, events: list[tuple[str, dict]]) -> None:
        self.append(self.mapper.messages(events))
        self.stream()

    def close(self, reason: str, *, stop_reason: str = "stop", error: str = "") -> None:
        """The turn ended: the open segment (cut when `stop_reason` says so) and open calls."""
        self.append(self.mapper.finish(reason, stop_reason=stop_reason, error=error))

    def append(self, raw: list[dict]) -> None:
        if not raw:
            return
        messages = [store.read_message(i, m) for i, m in enumerate(raw)]
        notes = self._progress(raw) if self.parent is not None else []
        with transaction.atomic():
            _, self.last_seq = store.append_to_session(self.child, messages)
            if notes and self.parent is not None:
                store.append_to_session(self.parent, notes)
        self.written += len(messages)

    def stream(self) -> None:
        """The open segment's new text to live followers (the child's, and the parent's with
        streamTo), redacted as live messages are. Past the live text limit nothing more is
        sent: followers get the stored message, cut there as every live message is."""
        segment = self.mapper.segment
        if segment is None:
            return
        shown, _ = sanitize.redact(segment.text[: sanitize.TEXT_LIMIT])
        if shown == segment.sent:
            return
        # Usually the new text is appended; a redaction that now spans the old end rewrites it.
        offset = len(os.path.commonprefix([shown, segment.sent]))
        segment.sent = shown
        payload = {
            "sessionKey": self.child_display,
            "afterSeq": self.last_seq,
            "type": segment.kind,
            "offset": offset,
            "delta": shown[offset:],
        }
        hints.publish_delta(self.child.pk, payload)
        if self.parent is not None:
            parent_payload = {
                **payload,
                "sessionKey": self.parent_display,
                "childSessionKey": self.child_display,
            }
            hints.publish_delta(self.parent.pk, parent_payload)

    def _progress(self, raw: list[dict]) -> list:
        """One short note per batch of stored messages for the requester (streamTo: "parent"):
        a whole text segment, a tool call, a result."""
        parts = []
        for message in raw:
            for block in message.get("content") or []:
                if block.get("type") == "text" and message["role"] == "assistant":
                    parts.append(block["text"].strip())
                elif block.get("type") == "toolCall":
                    parts.append(f"[tool {block['name']}: {block.get('title') or block['id']}]")
            if message["role"] == "toolResult":
                parts.append(f"[tool result{' (error)' if message['isError'] else ''}]")
        text = " ".join(p for p in parts if p)
        if not text:
            return []
        note = system(
            f"[{self.child.key}] {text[:2000]}",
            acpProgress={"childSessionKey": self.child.key},
        )
        return [store.read_message(0, note)]
