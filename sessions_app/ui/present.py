"""Rows and projected messages as the templates show them. Pure: no queries.

Messages arrive projected as the history API projects them (sanitised: text cut at 4000
characters, image data replaced by its size, credential-like text masked), so the browser shows
nothing the API would not.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from django.urls import reverse

from ..lib import sanitize, when
from ..manage.patch_fields import status_note_active
from ..models import now_ms
from ..reads import internal_rows, search
from ..reads.session_names import SessionName, name_of, name_of_row
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


def hits(found: dict, *, text: str) -> dict:
    """sessions_search's result (reads/message_search.find_messages) as the list shows it:
    each hit links to its message on its transcript page (`?at=<seq>#seq-<seq>`), the words
    the search matched marked in its snippet (`text`: the search box's text)."""
    tokens = search.tokens_of(text)
    shown = []
    for hit in found["results"]:
        seq = hit["seq"]
        shown.append(
            {
                **hit,
                "url": f"{session_url(hit['sessionKey'])}?at={seq}#seq-{seq}",
                "role_label": ROLE_LABELS.get(hit["role"], hit["role"]),
                "snippet_parts": search.highlight(hit["snippet"], tokens),
            }
        )
    return {
        "results": shown,
        "truncated": bool(found.get("truncated")),
        "warning": found.get("warning", ""),
    }


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
    """What marks a sessions_list row as a spawned session's (a sub-agent's or an ACP
    harness's), or None. OpenClaw's row says kind `other` and channel `unknown` for them
    (reference §1.4), which the tools keep; the browser, as the admin, names them as
    reads/session_names.py does, with the spawner and the run state."""
    return spawned(name_of_row(data), state=data.get("status") or "")


def title(data: dict) -> str:
    """A sessions_list row's title: the task label of a spawned session, else its name."""
    return name_of_row(data).title


def spawned(name: SessionName, *, state: str) -> dict | None:
    if not name.spawned:
        return None
    return {
        "parent": name.parent,
        "parent_url": session_url(name.parent) if name.parent else "",
        "label": name.task,
        "kind": name.kind,
        "css": name.css,
        "harness": name.harness,
        "state": state or "no run",
    }


def row(data: dict, *, query: str = "") -> dict:
    """A session_row() dict plus what the list template needs (underscore-free names)."""
    light = data["_light"]
    preview_message = data.get("_preview")
    return {
        "row": {k: v for k, v in data.items() if not k.startswith("_")},
        "id": light.pk,
        "url": session_url(light.key),
        "title": title(data),
        "title_parts": marked(title(data), query),
        "key_parts": marked(data["key"], query),
        "preview": preview(preview_message),
        "preview_role": (preview_message or {}).get("role", ""),
        "tokens": compact_number(data.get("totalTokens")),
        "context": compact_number(data.get("contextTokens")),
        "input_tokens": compact_number(light.input_tokens),
        "output_tokens": compact_number(light.output_tokens),
        "children": len(data.get("childSessions") or []),
        "more_children": bool(data.get("childSessionsTruncated")),
        "subagent": subagent(data),
        "pinned": bool(data.get("pinned")),
        "group": data.get("group") or "",
        "status_note": status_note(light),
    }


def marked(text: str, query: str) -> list[tuple[str, bool]]:
    """`text` in (part, matched) pieces, each place a word of the list's search `query` occurs
    marked (case-insensitive, as ui/search.py matches key, label and name)."""
    words = sorted({w for w in query.split() if w}, key=len, reverse=True)
    if not words or not text:
        return [(text, False)] if text else []
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    parts: list[tuple[str, bool]] = []
    at = 0
    for found in pattern.finditer(text):
        if found.start() > at:
            parts.append((text[at : found.start()], False))
        parts.append((found.group(), True))
        at = found.end()
    if at < len(text):
        parts.append((text[at:], False))
    return parts


def status_note(light) -> str:
    """The status note a `sessions` patch set, while it lasts (its ttlMinutes, as 9.6 keeps
    it); "" when there is none."""
    timing = {"statusSetAt": light.status_set_at, "statusTtlMinutes": light.status_ttl_minutes}
    extra = {name: value for name, value in timing.items() if value is not None}
    return light.status_note if status_note_active(light.status_note, extra, now_ms()) else ""


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
        if name == "updatedAt":
            item["when"] = when.to_ms(value)
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
        "time_ms": when.to_ms(data.get("timestamp")),
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
    name = name_of(
        key=row["key"],
        kind=row.get("kind") or "",
        label=row.get("label") or "",
        display_name=row.get("display_name") or "",
        spawned_by=row.get("spawned_by") or "",
    )
    return {
        "key": row["key"],
        "url": session_url(row["key"]),
        "title": name.title,
        "status": row.get("run_status") or "",
        "archived": row.get("archived_at") is not None,
        "kind": name.kind,
        "css": name.css,
        "harness": name.harness,
        "label": name.task,
        "subagent": name.spawned,
        "children": [_tree_node(c) for c in row.get("children", [])],
    }


def tree(found) -> dict:
    """queries.Tree for _panel.html."""
    return {
        "parent": _tree_node(found.parent) if found.parent else None,
        "children": [_tree_node(c) for c in found.children],
        "more": found.more_children,
    }


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
    return {
        "id": str(item.id),
        "short_id": str(item.id)[:8],
        "kind": item.kind,
        "status": item.status,
        "created_at": item.created_at,
        "duration": duration(item.runtime_ms),
        "requester": item.requester_key,
        "requester_url": session_url(item.requester_key) if item.requester_key else "",
        "error": item.error[:300],
    }
