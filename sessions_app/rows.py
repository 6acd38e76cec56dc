"""The `sessions_list` row of a session (reference §2.3, api.md §1). Renders; does not query."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import quote

from . import keys
from .models import Session

# The columns a list row needs: pages read these with .values() into light objects, which costs
# a fraction of building 200 Session models.
ROW_FIELDS = (
    "id", "key", "kind", "row_channel", "agent_id", "label", "display_name", "model",
    "thinking_level", "verbose_level", "send_policy", "delivery_context", "last_channel",
    "last_to", "last_account_id", "last_thread_id", "updated_at", "session_id", "context_tokens",
    "total_tokens", "input_tokens", "output_tokens", "system_sent", "aborted_last_run",
    "spawned_by", "spawn_depth", "archived_at", "run_status", "last_seq",
)  # fmt: skip


def light_rows(queryset) -> list[SimpleNamespace]:
    """Session-like objects (the attributes session_row() and last_messages() read)."""
    rows = []
    for values in queryset.values(*ROW_FIELDS):
        row = SimpleNamespace(**values)
        row.pk = values["id"]
        row.archived = values["archived_at"] is not None
        rows.append(row)
    return rows


def transcript_path(key: str) -> str:
    """Where the transcript can be fetched: the JSONL export endpoint (api.md §3)."""
    return f"/api/v1/sessions/{quote(key, safe=':@')}/transcript.jsonl"


def session_row(
    session: Session | SimpleNamespace,
    *,
    settings: keys.KeySettings,
    children: list[str] | None = None,
    messages: list[dict] | None = None,
) -> dict:
    """Absent optional fields are omitted, as OpenClaw does."""
    show = lambda key: keys.display_key(key, settings)  # noqa: E731
    row: dict = {
        "key": show(session.key),
        "kind": session.kind,
        "channel": session.row_channel,
        "agentId": session.agent_id,
    }
    optional_strings = {
        "label": session.label,
        "displayName": session.display_name or session.label,
        "model": session.model,
        "thinkingLevel": session.thinking_level,
        "verboseLevel": session.verbose_level,
        "sendPolicy": session.send_policy,
    }
    delivery = keys.normalize_delivery_context(
        session.delivery_context,
        last_channel=session.last_channel,
        last_to=session.last_to,
        last_account_id=session.last_account_id,
        last_thread_id=session.last_thread_id,
    )
    row.update({k: v for k, v in optional_strings.items() if v})
    if delivery:
        row["deliveryContext"] = delivery
    row["updatedAt"] = session.updated_at
    row["sessionId"] = str(session.session_id)
    if session.context_tokens is not None:
        row["contextTokens"] = session.context_tokens
    row["totalTokens"] = (
        session.total_tokens
        if session.total_tokens is not None
        else (session.input_tokens or 0) + (session.output_tokens or 0)
    )
    if session.system_sent is not None:
        row["systemSent"] = session.system_sent
    if session.aborted_last_run is not None:
        row["abortedLastRun"] = session.aborted_last_run
    if delivery:
        for field, name in (
            ("channel", "lastChannel"),
            ("to", "lastTo"),
            ("accountId", "lastAccountId"),
        ):
            if field in delivery:
                row[name] = delivery[field]
    row["transcriptPath"] = transcript_path(session.key)
    if session.spawned_by:
        row["spawnedBy"] = show(session.spawned_by)
        row["parentSessionKey"] = show(session.spawned_by)
    row["spawnDepth"] = session.spawn_depth
    row["childSessions"] = [show(k) for k in (children or [])]
    row["archived"] = session.archived
    if session.run_status:
        row["status"] = session.run_status
    if messages is not None:
        row["messages"] = messages
    return row
