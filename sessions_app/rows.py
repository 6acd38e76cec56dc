"""The `sessions_list` row of a session (reference §2.3, api.md §1), and reading a page of them.

session_row() renders and does not query; light_rows() and page_rows() read the page."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import quote

import orjson
from django.db import connection

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


# PostgreSQL: the page and each row's active children (newest first) in one statement. The
# children are an index probe per row (`session_spawned_by`); the outer ORDER BY restores the
# page's order, which a subquery does not keep.
_PAGE_WITH_CHILDREN = """
    SELECT p.*, ARRAY(
        SELECT c.key FROM sessions_app_session c
        WHERE c.spawned_by = p.key AND c.archived_at IS NULL
        ORDER BY c.updated_at DESC, c.id
    )
    FROM ({page}) p
    ORDER BY {order}
"""


def page_rows(queryset) -> list[SimpleNamespace]:
    """light_rows() for a sliced, ordered page, each with `.children`: the keys of its active
    child sessions, newest first.

    PostgreSQL: one statement, read with a plain cursor (psycopg already returns UUIDs, booleans
    and aware datetimes; only the jsonb column needs decoding), which is about half the cost of
    `.values()` for a page of 200. Elsewhere: `.values()` and one more query for the children.
    """
    if connection.vendor != "postgresql":
        rows = light_rows(queryset)
        children: dict[str, list[str]] = {}
        if rows:
            child_rows = (
                Session.objects.active()
                .filter(spawned_by__in=[r.key for r in rows])
                .order_by("-updated_at", "id")
                .values_list("spawned_by", "key")
            )
            for parent, child in child_rows:
                children.setdefault(parent, []).append(child)
        for row in rows:
            row.children = children.get(row.key, [])
        return rows
    order_by = queryset.query.order_by
    assert order_by and all(name.lstrip("-") in ROW_FIELDS for name in order_by), order_by
    page_sql, params = queryset.values(*ROW_FIELDS).query.sql_with_params()
    order = ", ".join(
        f"p.{name[1:]} DESC" if name.startswith("-") else f"p.{name}" for name in order_by
    )
    with connection.cursor() as cursor:
        cursor.execute(_PAGE_WITH_CHILDREN.format(page=page_sql, order=order), params)
        names = [column.name for column in cursor.description][:-1]
        raw_rows = cursor.fetchall()
    rows = []
    for raw in raw_rows:
        row = SimpleNamespace(**dict(zip(names, raw[:-1], strict=True)))
        if isinstance(row.delivery_context, str):
            row.delivery_context = orjson.loads(row.delivery_context)
        row.pk = row.id
        row.archived = row.archived_at is not None
        row.children = raw[-1]
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
