"""The `sessions_list` row of a session (reference §2.3, api.md §1), and reading a page of them.

session_row() renders and does not query; page_rows() reads a page as SessionRows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import quote

import orjson
from django.db import connection
from django.db.models import QuerySet

from openclaw_common import keys

from .models import Session


class SessionRow(NamedTuple):
    """A session as list pages read it: the columns session_row() and
    transcript.last_messages() need, then the keys of its active child sessions, newest first.
    A tuple built in one call per row: a page of 200 costs a fraction of 200 Session models."""

    id: int
    key: str
    kind: str
    row_channel: str
    agent_id: str
    label: str
    display_name: str
    model: str
    thinking_level: str
    verbose_level: str
    send_policy: str
    delivery_context: dict[str, Any] | None
    last_channel: str
    last_to: str
    last_account_id: str
    last_thread_id: str
    updated_at: int
    session_id: str
    context_tokens: int | None
    total_tokens: int | None
    input_tokens: int | None
    output_tokens: int | None
    system_sent: bool | None
    aborted_last_run: bool | None
    spawned_by: str
    spawn_depth: int
    archived_at: datetime | None
    run_status: str
    last_seq: int
    children: Sequence[str] = ()

    @property
    def pk(self) -> int:
        return self.id

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


# The Session columns of a row, in SessionRow's order (every field but `children`).
ROW_FIELDS: tuple[str, ...] = SessionRow._fields[:-1]
_KEY = ROW_FIELDS.index("key")
_DELIVERY_CONTEXT = ROW_FIELDS.index("delivery_context")

# PostgreSQL: the page and each row's active children (newest first) in one statement. The
# children are an index probe per row (`session_spawned_by`); the outer ORDER BY restores the
# page's order, which a subquery does not keep.
_PAGE_WITH_CHILDREN = """
    SELECT {columns}, ARRAY(
        SELECT c.key FROM sessions_app_session c
        WHERE c.spawned_by = p.key AND c.archived_at IS NULL
        ORDER BY c.updated_at DESC, c.id
    )
    FROM ({page}) p
    ORDER BY {order}
"""


def page_rows(queryset: QuerySet[Session]) -> list[SessionRow]:
    """The rows of a sliced, ordered page of sessions, each with its `children`.

    PostgreSQL: one statement, read with a plain cursor (psycopg already returns UUIDs, booleans
    and aware datetimes; only the jsonb column needs decoding), which is about half the cost of
    `.values()` for a page of 200. Elsewhere: `.values_list()` and one more query for the
    children.
    """
    if connection.vendor == "postgresql":
        return _page_rows_postgresql(queryset)
    found = list(queryset.values_list(*ROW_FIELDS))
    children: dict[str, list[str]] = {}
    if found:
        child_rows = (
            Session.objects.active()
            .filter(spawned_by__in=[values[_KEY] for values in found])
            .order_by("-updated_at", "id")
            .values_list("spawned_by", "key")
        )
        for parent, child in child_rows:
            children.setdefault(parent, []).append(child)
    make = SessionRow._make
    return [make(values + (children.get(values[_KEY], ()),)) for values in found]


def _page_rows_postgresql(queryset: QuerySet[Session]) -> list[SessionRow]:
    # Row fields only (no expressions): the outer query orders by the page's columns.
    order_by = [name for name in queryset.query.order_by if isinstance(name, str)]
    assert order_by == list(queryset.query.order_by), queryset.query.order_by
    assert order_by and all(name.lstrip("-") in ROW_FIELDS for name in order_by), order_by
    page_sql, params = queryset.values_list(*ROW_FIELDS).query.sql_with_params()
    columns = ", ".join(f"p.{connection.ops.quote_name(name)}" for name in ROW_FIELDS)
    order = ", ".join(
        f"p.{name[1:]} DESC" if name.startswith("-") else f"p.{name}" for name in order_by
    )
    sql = _PAGE_WITH_CHILDREN.format(columns=columns, page=page_sql, order=order)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        raw_rows = cursor.fetchall()
    make, loads, at = SessionRow._make, orjson.loads, _DELIVERY_CONTEXT
    rows = []
    for raw in raw_rows:
        if isinstance(raw[at], str):
            raw = (*raw[:at], loads(raw[at]), *raw[at + 1 :])
        rows.append(make(raw))
    return rows


def transcript_path(key: str) -> str:
    """Where the transcript can be fetched: the JSONL export endpoint (api.md §3)."""
    return f"/api/v1/sessions/{quote(key, safe=':@')}/transcript.jsonl"


def session_row(
    session: Session | SessionRow,
    *,
    settings: keys.KeySettings,
    children: Sequence[str] | None = None,
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
