"""The `/status` card of session_status (9.6 §2.1), and the session's route fields.

9.6 gives no exact template for the card (spec §8.11); this one has its lines in the same order:
model, tokens, time, the session, its run, a `📌 Tasks: …` line when sub-agents are at work,
then the optional `Route context:` and `Session state changes:` blocks with fenced JSON.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import orjson

from ..models import Message, Run, Session, now_ms

ROUTE_FIELDS = ("channel", "to", "accountId", "threadId")
ORIGIN_FIELDS = ("provider", "accountId", "threadId")


def _strings(value: Any, names: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {
        n: str(value[n]) for n in names if isinstance(value.get(n), str | int) and value[n] != ""
    }


def route_of(session: Session, *, live: bool = False) -> dict[str, dict]:
    """origin (its provider inferred from the key's channel when not stored), active (`live`:
    the caller's own session while a run of it is going, where that run's replies go) and
    deliveryContext, each only when it says something."""
    route: dict[str, dict] = {}
    origin = _strings(session.origin, ORIGIN_FIELDS)
    if "provider" not in origin and session.row_channel not in ("", "unknown"):
        origin["provider"] = session.row_channel
    if origin:
        route["origin"] = origin
    active = {
        name: value
        for name, value in (
            ("channel", session.last_channel),
            ("to", session.last_to),
            ("accountId", session.last_account_id),
            ("threadId", session.last_thread_id),
        )
        if value
    }
    if live and active:
        route["active"] = active
    delivery = _strings(session.delivery_context, ROUTE_FIELDS)
    if delivery:
        route["deliveryContext"] = delivery
    return route


def _tokens(session: Session) -> tuple[int, int, int]:
    """input, output, total; backfilled from the newest transcript usage when not stored."""
    given = (session.input_tokens, session.output_tokens, session.total_tokens)
    if any(v is not None for v in given):
        tin, tout = given[0] or 0, given[1] or 0
        return tin, tout, given[2] if given[2] is not None else tin + tout
    usage = (
        Message.objects.filter(session=session, usage__isnull=False)
        .order_by("-seq")
        .values_list("usage", flat=True)
        .first()
    )
    usage = usage if isinstance(usage, dict) else {}
    tin = _int(usage.get("input") or usage.get("inputTokens") or usage.get("prompt_tokens"))
    tout = _int(usage.get("output") or usage.get("outputTokens") or usage.get("completion_tokens"))
    total = _int(usage.get("totalTokens") or usage.get("total_tokens")) or tin + tout
    return tin, tout, total


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _ago(ms: int) -> str:
    seconds = max(0, (now_ms() - ms) // 1000)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _tasks(session: Session) -> str:
    counts = Counter(
        Run.objects.in_flight()
        .filter(session__spawned_by=session.key)
        .values_list("status", flat=True)
    )
    parts = [f"{counts[s]} {s}" for s in (Run.RUNNING, Run.QUEUED) if counts[s]]
    return f"📌 Tasks: {', '.join(parts)}" if parts else ""


def _fenced(value: Any) -> str:
    return "```json\n" + orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n```"


def text(session: Session, *, route: dict[str, dict], state: tuple[int, dict] | None = None) -> str:
    tin, tout, total = _tokens(session)
    model = session.model or "default (the agent's)"
    updated = datetime.fromtimestamp(session.updated_at / 1000, tz=UTC)
    lines = [
        f"🦞 Session status · {session.key}",
        f"🧠 Model: {model}",
        f"🧮 Tokens: {tin:,} in / {tout:,} out · total {total:,}"
        + (f" · context {session.context_tokens:,}" if session.context_tokens else ""),
        f"🕒 Updated: {updated:%Y-%m-%d %H:%M:%S} UTC ({_ago(session.updated_at)})",
        f"🗂 Session: {session.session_id} · {session.kind} · {session.row_channel}"
        + (" · archived" if session.archived_at else ""),
    ]
    if session.run_status:
        lines.append(f"🏃 Run: {session.run_status}")
    tasks = _tasks(session)
    if tasks:
        lines.append(tasks)
    if route:
        lines += ["", "Route context:", _fenced(route)]
    if state is not None:
        version, changes = state
        lines += [
            "",
            "Session state changes:",
            _fenced({"stateVersion": version, "stateChanges": changes}),
        ]
    return "\n".join(lines)
