"""Rows a person reads as machinery, not conversation: a parent's completion prompt (~25 lines
of model instructions), the announce prompts, the silent replies (REPLY_SKIP, ANNOUNCE_SKIP,
NO_REPLY), a watch wake-up and an ACP harness's notes. Each is stored as an ordinary row (the
model reads it as one), so the places a person reads (the browser, the admin, `sessions tail`,
list previews) and the REST history's `internal` field ask classify() which rows these are and
for a one-line summary such as "Sub-agent research finished: success".

The rows sessions_history hides (history_read.hidden) are internal by definition; the rest are
rows OpenClaw's history shows, so that tool keeps showing them. Pure: no queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import send_modes
from ..runs import prompts
from ..runs.tokens import is_silent
from ..transcript import MessageRow
from . import history_read

SUMMARY_CHARS = 60
# The silent replies, with what each says; NO_REPLY is shown by sessions_history (9.6 keeps it).
SKIP_SAYS = {
    "REPLY_SKIP": "reply step skipped",
    "ANNOUNCE_SKIP": "announce skipped",
    "NO_REPLY": "nothing to send",
}
_OK_STATUS = prompts.completion_status_label("ok")


@dataclass(frozen=True)
class Internal:
    kind: str  # "completion" | "announce" | "skip" | "wake" | "harness"
    summary: str

    def as_json(self) -> dict[str, str]:
        """The REST history's `internal` field (docs/rest.md, "Internal rows")."""
        return {"kind": self.kind, "summary": self.summary}


def of_row(row: MessageRow) -> Internal | None:
    return classify(row.role, row.content, row.provenance)


def of_message(message: dict) -> Internal | None:
    """classify() for a payload or a projected (sanitised) message."""
    provenance = message.get("provenance")
    return classify(
        str(message.get("role") or ""),
        message.get("content"),
        provenance if isinstance(provenance, dict) else None,
    )


def mark(message: dict) -> dict:
    """`message` with `internal: {kind, summary}` when it is internal (the REST history)."""
    found = of_message(message)
    if found is not None:
        message["internal"] = found.as_json()
    return message


def classify(role: str, content: Any, provenance: dict | None) -> Internal | None:
    """Whether a stored row is internal, and its one-line summary; None for conversation."""
    text = history_read.text_of(content)
    provenance = provenance or {}
    if role == "assistant":
        # Thinking beside the token is still a silent reply; a tool call beside it is not.
        said = text if text is not None else _said(content)
        if said is None:
            return None
        for token, says in SKIP_SAYS.items():
            if is_silent(said, token):
                return Internal("skip", f"Replied {token} ({says})")
        return None
    if role == "system":
        if provenance.get("kind") != "internal_system":
            return None
        return Internal("harness", "Harness note: " + _shorten(text or "", SUMMARY_CHARS * 2))
    if role != "user":
        return None
    if history_read.hidden(role, content, provenance):
        if provenance.get("sourceTool") in history_read.COMPLETION_TOOLS:
            return Internal("completion", completion_summary(text or ""))
        return Internal("announce", "Agent-to-agent announce step")
    stripped = (text or "").strip()
    if (
        stripped == prompts.SUBAGENT_ANNOUNCE_MESSAGE
        and provenance.get("kind") == "internal_system"
    ):
        return Internal("announce", "Sub-agent announce step")
    if stripped == send_modes.WAKE_MESSAGE and provenance.get("sourceTool") == send_modes.WAKE_TOOL:
        source = str(provenance.get("sourceSessionKey") or "a watched session")
        return Internal("wake", f"Woken: {source} changed")
    return None


def _said(content: Any) -> str | None:
    """The text blocks of a reply made of text and thinking only, else None."""
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(str(block.get("text") or ""))
        elif kind != "thinking":
            return None
    return "\n".join(parts)


def completion_summary(text: str) -> str:
    """ "Sub-agent research finished: success", from the `task:` and `status:` lines
    prompts.completion_message writes for each child (a settle lists several)."""
    finished: list[tuple[str, str]] = []
    task = ""
    for line in text.splitlines():
        if line.startswith("task: "):
            task = _shorten(line[len("task: ") :], SUMMARY_CHARS)
        elif line.startswith("status: "):
            status = line[len("status: ") :].strip()
            finished.append((task, "success" if status == _OK_STATUS else status))
            task = ""
    if not finished:
        if text.startswith(prompts.SETTLE_HEADER):
            return "Yielded sub-agents finished (no results)"
        return "Sub-agent finished"
    if len(finished) == 1:
        task, status = finished[0]
        return f"Sub-agent {task} finished: {status}" if task else f"Sub-agent finished: {status}"
    each = ", ".join(f"{task or 'task'}: {status}" for task, status in finished)
    return f"{len(finished)} sub-agents finished: {each}"


def _shorten(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
