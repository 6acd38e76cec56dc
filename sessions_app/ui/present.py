"""Rows and projected messages as the templates show them. Pure: no queries.

Messages arrive projected as the history API projects them (sanitised: text cut at 4000
characters, image data replaced by its size, credential-like text masked), so the browser shows
nothing the API would not.
"""

from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, datetime
from typing import Any

from django.urls import reverse

from openclaw_common import keys

from ..lib import sanitize
from ..reads import internal_rows
from ..transcript import TOOL_RESULT, seq_of

PREVIEW_CHARS = 160
MAX_PRETTY_CHARS = 20_000
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_DATA_URL = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]{64,}")
_CARD_FIELDS = ("Status", "Result", "Notes", "Stats")
_CARD_LINE = re.compile(r"^(Status|Result|Notes|Stats):\s?(.*)$")
_STATS_KEY = re.compile(r"sessionKey (\S+)")
ROLE_LABELS = {"user": "User", "assistant": "Assistant", TOOL_RESULT: "Tool result"}
# An assistant message that is only one of these tokens says "nothing to send" (the reply loop,
# the announce step): shown as a quiet marker, not as a message.
SKIP_MARKERS = {"REPLY_SKIP": "reply step skipped", "ANNOUNCE_SKIP": "announce skipped"}
# A tool call with its result shows open when both are at most this long, folded otherwise.
OPEN_CARD_CHARS = 600
OPEN_CARD_LINES = 16


def session_url(key: str) -> str:
    """The transcript page of `key` (reverse() percent-encodes it; colons stay readable)."""
    return reverse("ui:transcript", kwargs={"key": key})


def hits(found: dict) -> dict:
    """sessions_search's result (reads/message_search.find_messages) as the list shows it:
    each hit links to its message on its transcript page (`?at=<seq>#seq-<seq>`)."""
    shown = []
    for hit in found["results"]:
        seq = hit["seq"]
        shown.append(
            {
                **hit,
                "url": f"{session_url(hit['sessionKey'])}?at={seq}#seq-{seq}",
                "role_label": ROLE_LABELS.get(hit["role"], hit["role"]),
                "time_iso": ms_to_iso(hit["timestamp"]),
                "time_text": ms_to_text(hit["timestamp"]),
            }
        )
    return {
        "results": shown,
        "truncated": bool(found.get("truncated")),
        "warning": found.get("warning", ""),
    }


def ms_to_iso(ms: int | None) -> str:
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return ""


def ms_to_text(ms: int | None) -> str:
    iso = ms_to_iso(ms)
    return iso.replace("T", " ").replace("+00:00", " UTC") if iso else ""


def relative(ms: int | None, now: int) -> str:
    """ "3 min ago" (the browser keeps it fresh; this is the text without JavaScript)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    seconds = max(0, (now - ms) // 1000)
    if seconds < 45:
        return "just now"
    for size, unit in ((86400 * 365, "y"), (86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def compact_number(value: int | None) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        return ""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            text = f"{value / size:.1f}".rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return str(value)


def _hide_data_urls(text: str) -> str:
    return _DATA_URL.sub(lambda m: f"[inline data: {len(m.group(0))} bytes]", text)


def message_text(message: dict) -> str:
    """The readable text of a projected message (text blocks only)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def preview(message: dict | None) -> str:
    """One line for the list: the text, or what the message holds instead."""
    if not message:
        return ""
    text = " ".join(_hide_data_urls(message_text(message)).split())
    if not text:
        content = message.get("content")
        parts = []
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "toolCall":
                    parts.append(f"→ {block.get('name') or 'tool'}(…)")
                elif block.get("type") == "image":
                    parts.append("[image]")
                elif block.get("type") == "thinking":
                    parts.append("[thinking]")
        text = " ".join(parts)
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1].rstrip() + "…"
    return text


def subagent(data: dict) -> dict | None:
    """What marks a sessions_list row as a sub-agent's, or None. OpenClaw's row says kind
    `other` and channel `unknown` for them (reference §1.4), which the tools keep; the browser
    shows the spawner, the task label and the run state instead."""
    key = data.get("key") or ""
    parent = data.get("spawnedBy") or ""
    if not (keys.is_subagent_key(key) or parent or (data.get("spawnDepth") or 0) > 0):
        return None
    return {
        "parent": parent,
        "parent_url": session_url(parent) if parent else "",
        "label": data.get("label") or "",
        "state": data.get("status") or "no run",
    }


def row(data: dict, *, now: int) -> dict:
    """A session_row() dict plus what the list template needs (underscore-free names)."""
    light = data["_light"]
    preview_message = data.get("_preview")
    return {
        "row": {k: v for k, v in data.items() if not k.startswith("_")},
        "id": light.pk,
        "url": session_url(light.key),
        "title": data.get("displayName") or data["key"],
        "updated_iso": ms_to_iso(data["updatedAt"]),
        "updated_text": ms_to_text(data["updatedAt"]),
        "updated_relative": relative(data["updatedAt"], now),
        "preview": preview(preview_message),
        "preview_role": (preview_message or {}).get("role", ""),
        "tokens": compact_number(data.get("totalTokens")),
        "context": compact_number(data.get("contextTokens")),
        "input_tokens": compact_number(light.input_tokens),
        "output_tokens": compact_number(light.output_tokens),
        "children": len(data.get("childSessions") or []),
        "more_children": bool(data.get("childSessionsTruncated")),
        "subagent": subagent(data),
    }


# The sessions_list row fields the panel lists, in this order (absent ones shown as such).
METADATA_FIELDS = (
    "key",
    "kind",
    "channel",
    "agentId",
    "label",
    "displayName",
    "deliveryContext",
    "updatedAt",
    "sessionId",
    "model",
    "contextTokens",
    "totalTokens",
    "thinkingLevel",
    "verboseLevel",
    "systemSent",
    "abortedLastRun",
    "sendPolicy",
    "lastChannel",
    "lastTo",
    "lastAccountId",
    "transcriptPath",
    "spawnedBy",
    "parentSessionKey",
    "spawnDepth",
    "childSessions",
    "archived",
    "status",
)


def metadata(data: dict) -> list[dict]:
    """A session_row() dict as the panel's name/value list."""
    items = []
    for name in METADATA_FIELDS:
        value = data.get(name)
        is_json = isinstance(value, dict | list)
        shown: Any  # the value as the card shows it: JSON text, true/false, or as stored
        if is_json:
            shown = pretty_json(value)
        elif isinstance(value, bool):
            shown = "true" if value else "false"
        else:
            shown = value
        item = {"name": name, "value": shown, "absent": name not in data, "json": is_json}
        if name == "updatedAt" and value is not None:
            item["hint"] = ms_to_text(value)
        items.append(item)
    return items


def pretty_json(value) -> str:
    """Indented JSON, bounded and with credential-like text masked (tool arguments are not
    covered by the history sanitiser, which only reads text fields)."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    text, _ = sanitize.truncate_text(text, MAX_PRETTY_CHARS)
    text, _ = sanitize.redact(text)
    return text


def announce_card(text: str) -> dict | None:
    """Status / Result / Notes / Stats of a sub-agent report (flows.subagent_report), or None."""
    if not text.lstrip().startswith("Status:"):
        return None
    fields: dict[str, list[str]] = {}
    current = None
    for line in text.strip().splitlines():
        match = _CARD_LINE.match(line)
        if match and match[1] not in fields:
            current = match[1]
            fields[current] = [match[2]]
        elif current:
            fields[current].append(line)
    if "Result" not in fields:
        return None
    card = {name.lower(): "\n".join(fields.get(name, [])).strip() for name in _CARD_FIELDS}
    status = card["status"].split()[0].lower() if card["status"] else ""
    card["status_class"] = {"success": "ok", "failed": "bad", "blocked": "warn"}.get(status, "")
    found = _STATS_KEY.search(card["stats"])
    card["child_url"] = session_url(found[1].rstrip(".,;")) if found else ""
    return card


def image_mime(block: dict) -> str:
    """The MIME type an image block declares (OpenClaw's or Anthropic's field names)."""
    source = block.get("source")
    if not isinstance(source, dict):
        source = {}
    return block.get("mimeType") or block.get("mediaType") or source.get("media_type") or ""


def _image_block(block: dict, *, image_url: str, index: int) -> dict:
    mime = image_mime(block)
    shown = block.get("omitted") and mime in IMAGE_TYPES
    encoded = block.get("bytes")
    size = ""
    if isinstance(encoded, int) and not isinstance(encoded, bool):
        size = f"{compact_number(encoded * 3 // 4)}B"  # `bytes` counts the base64 text
    return {
        "type": "image",
        "url": f"{image_url}{index}/" if shown else "",
        "mime": mime,
        "size": size,
    }


def _blocks(content, *, image_url: str) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": _hide_data_urls(content)}] if content else []
    if not isinstance(content, list):
        return [] if content is None else [{"type": "other", "json": pretty_json(content)}]
    blocks = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            blocks.append({"type": "text", "text": _hide_data_urls(str(block.get("text", "")))})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "text": str(block.get("thinking", ""))})
        elif kind == "toolCall":
            blocks.append(
                {
                    "type": "tool_call",
                    "name": str(block.get("name") or "tool"),
                    "id": str(block.get("id") or ""),
                    "args": pretty_json(block.get("arguments", block.get("partialJson", {}))),
                }
            )
        elif kind == "image":
            blocks.append(_image_block(block, image_url=image_url, index=index))
        else:
            blocks.append(
                {"type": "other", "label": str(kind or "block"), "json": pretty_json(block)}
            )
    return blocks


def message(data: dict, *, image_base: str) -> dict:
    """A projected message for _message.html. `image_base` is the session's images URL."""
    seq = seq_of(data)
    role = str(data.get("role") or "")
    provenance = data.get("provenance") if isinstance(data.get("provenance"), dict) else None
    source = None
    if provenance and provenance.get("kind") == "inter_session":
        source_key = str(provenance.get("sourceSessionKey") or "")
        source = {
            "key": source_key,
            "url": session_url(source_key) if source_key else "",
            "tool": str(provenance.get("sourceTool") or ""),
            "role": str(provenance.get("sourceRole") or ""),
        }
    blocks = _blocks(data.get("content"), image_url=f"{image_base}{seq}/")
    if role == TOOL_RESULT:
        blocks = [_pretty_result_block(b) for b in blocks]
    text = message_text(data)
    card = announce_card(text) if role != TOOL_RESULT else None
    truncated = sanitize.TRUNCATION_SUFFIX in text
    return {
        "seq": seq,
        "role": role,
        "role_label": ROLE_LABELS.get(role, role or "message"),
        "role_class": re.sub(r"[^a-z0-9-]", "", role.lower()) or "other",
        "time_iso": ms_to_iso(data.get("timestamp")),
        "time_text": ms_to_text(data.get("timestamp")),
        "sender": str(data.get("senderName") or ""),
        "model": str(data.get("model") or ""),
        "source": source,
        "provenance_kind": str(provenance.get("kind") or "") if provenance else "",
        "is_tool_result": role == TOOL_RESULT,
        "tool_name": str(data.get("toolName") or ""),
        "tool_call_id": str(data.get("toolCallId") or ""),
        "is_error": data.get("isError") is True,
        # A reply cut short (a stopped run, a crashed ACP harness: pi-ai's stopReason).
        "cut": role == "assistant" and data.get("stopReason") in ("aborted", "error"),
        "cut_reason": str(data.get("errorMessage") or data.get("stopReason") or ""),
        "blocks": blocks,
        "card": card,
        "truncated": truncated,
        # A completion prompt, an announce step, a silent reply, a harness note: one folded line
        # (its summary), the text inside (internal_rows.py).
        "internal": internal.summary if (internal := internal_rows.of_message(data)) else "",
        "skip": SKIP_MARKERS.get(text.strip()) if role == "assistant" else None,
        "skip_token": text.strip(),
        "paired_with": None,  # the seq of the message whose tool call shows this result
    }


def _pretty_result_block(block: dict) -> dict:
    """A tool result's text that is JSON, indented as tool arguments are."""
    text = block.get("text") if block.get("type") == "text" else None
    if not isinstance(text, str) or not text.lstrip().startswith(("{", "[")):
        return block
    try:
        value = json.loads(text)
    except ValueError:
        return block
    return {**block, "text": pretty_json(value), "pretty": True}


def _card_is_short(call: dict, result: dict) -> bool:
    texts = [call.get("args") or ""] + [str(b.get("text") or "") for b in result["blocks"]]
    joined = "\n".join(texts)
    return len(joined) <= OPEN_CARD_CHARS and joined.count("\n") < OPEN_CARD_LINES


def pair_tool_calls(messages: list[dict]) -> list[dict]:
    """Each tool result whose call is on the same page goes into that call's card (args and
    result together, open when short); the result's own message becomes a quiet stub that keeps
    its seq (links, live updates). A result without its call on the page shows as before."""
    calls: dict[str, tuple[dict, dict]] = {}
    for message in messages:
        for block in message["blocks"]:
            if block.get("type") == "tool_call" and block.get("id"):
                calls[block["id"]] = (message, block)
        found = calls.pop(message["tool_call_id"], None) if message["is_tool_result"] else None
        if found is None:
            continue
        call_message, block = found
        result = {
            "seq": message["seq"],
            "blocks": message["blocks"],
            "is_error": message["is_error"],
            "truncated": message["truncated"],
        }
        block["result"] = result
        block["open"] = _card_is_short(block, result)
        message["paired_with"] = call_message["seq"]
    return messages


def _tree_node(row: dict) -> dict:
    return {
        "key": row["key"],
        "url": session_url(row["key"]),
        "title": row.get("display_name") or row.get("label") or row["key"],
        "status": row.get("run_status") or "",
        "archived": row.get("archived_at") is not None,
        "kind": row.get("kind") or "",
        "label": row.get("label") or "",
        "subagent": keys.is_subagent_key(row["key"]) or bool(row.get("spawned_by")),
        "children": [_tree_node(c) for c in row.get("children", [])],
    }


def tree(found) -> dict:
    """queries.Tree for _panel.html."""
    return {
        "parent": _tree_node(found.parent) if found.parent else None,
        "children": [_tree_node(c) for c in found.children],
        "more": found.more_children,
    }


def _when(value) -> tuple[str, str]:
    if value is None:
        return "", ""
    return value.isoformat(timespec="seconds"), value.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


def run(item) -> dict:
    """A Run for the runs table."""
    created_iso, created_text = _when(item.created_at)
    return {
        "id": str(item.id),
        "short_id": str(item.id)[:8],
        "kind": item.kind,
        "status": item.status,
        "created_iso": created_iso,
        "created_text": created_text,
        "duration": duration(item.runtime_ms),
        "requester": item.requester_key,
        "requester_url": session_url(item.requester_key) if item.requester_key else "",
        "error": item.error[:300],
    }
