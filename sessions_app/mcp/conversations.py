"""What the MCP bridge tools and the event feed both say of a session and a message: its
conversation (the route a reply takes), a message's id, its text."""

from __future__ import annotations

from typing import Any

from openclaw_common import keys


def message_id(seq: int) -> str:
    return f"{seq:08x}"


def conversation_of(row: dict) -> dict | None:
    """A sessions_list row as a conversation, or None when it has no route."""
    context = row.get("deliveryContext") or {}
    channel = context.get("channel") or row.get("lastChannel")
    if not channel and row.get("channel") not in (None, keys.UNKNOWN_CHANNEL):
        channel = row["channel"]
    to = context.get("to") or row.get("lastTo")
    if not channel or not to:
        return None
    out: dict[str, Any] = {"sessionKey": row["key"], "channel": channel, "to": to}
    for name, value in (
        ("accountId", context.get("accountId")),
        ("threadId", context.get("threadId")),
        ("label", row.get("label")),
        ("displayName", row.get("displayName")),
    ):
        if value not in (None, ""):
            out[name] = str(value)
    out["updatedAt"] = row.get("updatedAt")
    return out


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n".join(p for p in parts if isinstance(p, str))
