"""The `sessions_list` row of a session (reference §2.3, api.md §1), and reading a page of them.

session_row() renders and does not query; page_rows() reads a page as SessionRows."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import F, OuterRef, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from openclaw_common import keys

from .lib import rawsql
from .models import Session, SessionEvent, total_tokens_of

_SessionsT = TypeVar("_SessionsT", bound=QuerySet[Session])


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
    pinned_at: datetime | None
    category: str
    owner: dict[str, Any] | None  # extra.owner, read by a JSON key lookup
    # The status note a `sessions` patch set, with when and for how long (extra.statusSetAt,
    # extra.statusTtlMinutes): the browser's list shows it while it lasts.
    status_note: str
    status_set_at: Any
    status_ttl_minutes: Any
    children: Sequence[str] = ()
    # The state log's head (9.6 §2.2), read in the page's statement; 0 before any event.
    state_version: int = 0

    @property
    def pk(self) -> int:
        return self.id

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def pinned(self) -> bool:
        return self.pinned_at is not None


# What values_list() reads for each field of SessionRow but `children` and `state_version`, in
# its order.
_EXTRA_KEYS = {
    "owner": "extra__owner",
    "status_set_at": "extra__statusSetAt",
    "status_ttl_minutes": "extra__statusTtlMinutes",
}
ROW_FIELDS: tuple[str, ...] = tuple(_EXTRA_KEYS.get(name, name) for name in SessionRow._fields[:-2])
_KEY = ROW_FIELDS.index("key")
# The jsonb columns a plain PostgreSQL cursor returns as text.
_JSON_AT = (
    ROW_FIELDS.index("delivery_context"),
    *(ROW_FIELDS.index(lookup) for lookup in _EXTRA_KEYS.values()),
)


def page_rows(queryset: QuerySet[Session]) -> list[SessionRow]:
    """The rows of a sliced, ordered page of sessions, each with its `children`.

    Two statements on every backend: the page (with each row's stateVersion), then the active
    children of its rows by the page's keys (children_of). PostgreSQL reads the page with a plain cursor (psycopg already
    returns UUIDs, booleans and aware datetimes; only the jsonb column needs decoding), which is
    about half the cost of `.values()` for a page of 200; elsewhere `.values_list()`.

    The children used to be a correlated `ARRAY(SELECT … WHERE c.spawned_by = p.key)` in the
    page's statement on PostgreSQL. That subquery is planned once for an unknown key, from the
    column's statistics alone: where nearly every session has `spawned_by = ''` (a store with few
    sub-agents) or one parent owns a large share of them, the planner expects thousands of
    children per row and scans the table once per page row, and the inflated cost switches on
    JIT (issue 18: 27 s for a page of 200 at 100k sessions). Read by the page's actual keys, the
    lookup is planned with those values: an index probe per key (BENCHMARKS.md, "Data shapes").
    """
    if queryset.query.combinator is None:  # a union's branches carry it (with_state_version)
        queryset = with_state_version(queryset)
    found = (
        _page_values_postgresql(queryset)
        if connection.vendor == "postgresql"
        else list(queryset.values_list(*ROW_FIELDS, "state_version"))
    )
    children = children_of([values[_KEY] for values in found])
    make = SessionRow._make
    return [
        make((*values[:-1], children.get(values[_KEY], ()), values[-1] or 0)) for values in found
    ]


# A row's stateVersion: the newest sequence of its state log, one probe of the (session,
# sequence) unique index per row, backwards, in the page's own statement (no query per row).
_STATE_VERSION = Subquery(
    SessionEvent.objects.filter(session_id=OuterRef("pk"))
    .order_by("-sequence")
    .values("sequence")[:1]
)


def with_state_version(queryset: _SessionsT) -> _SessionsT:
    """`queryset` with each session's stateVersion, as page_rows() reads it (a union of pages
    gets it on each branch: Django annotates no union)."""
    return queryset.annotate(state_version=_STATE_VERSION)


def row_of(session: Session, *, settings: keys.KeySettings) -> dict:
    """One session's sessions_list row with its active children (REST session detail, the
    sessions.patch/get RPCs): session_row() plus one children_of() query."""
    return session_row(
        session, settings=settings, children=children_of([session.key]).get(session.key, [])
    )


# At most this many of a row's active children are listed (newest first); a row with more says
# so with `childSessionsTruncated: true` (docs/api.md). A parent with 280,000 children made a
# 200-row page of ~40 MB; 9.6 itself caps a whole sessions_list result at 64 KiB.
CHILD_SESSIONS_MAX = 100


class ChildKeys(list):
    """A row's listed child keys, newest first; `more`: it has active children past these."""

    more = False


def children_of(parent_keys: list[str]) -> dict[str, ChildKeys]:
    """The keys of the active sessions each of `parent_keys` spawned, newest first, at most
    CHILD_SESSIONS_MAX each (`.more` when there are others). One query (none for no keys).

    PostgreSQL: per key, a LATERAL read of at most CHILD_SESSIONS_MAX + 1 entries of the
    `session_active_children` index, which holds the active children newest first with their
    keys, so a parent's cost does not grow with its children (the earlier `spawned_by =
    ANY(keys)` read and sorted a parent's 7,000 children: 27-39 ms at 1M sessions); written so
    that no statistics can choose another plan (_CHILDREN_SQL).
    Elsewhere: the same cut with a window function over the children of the keys.
    Children of one parent updated in the same millisecond come newest id first, as list pages
    order their rows."""
    children: dict[str, ChildKeys] = {}
    if not parent_keys:
        return children
    child_rows: Iterable[tuple[str, str]]
    if connection.vendor == "postgresql":
        # One array parameter: Django resolves each element of an `__in` list separately
        # (~200 calls per page, a few ms).
        with connection.cursor() as cursor:
            cursor.execute(_CHILDREN_SQL, [list(parent_keys), CHILD_SESSIONS_MAX + 1])
            child_rows = cursor.fetchall()
    else:
        child_rows = (
            Session.objects.active()
            .filter(spawned_by__in=parent_keys)
            .annotate(
                place=Window(
                    RowNumber(),
                    partition_by=[F("spawned_by")],
                    order_by=[F("updated_at").desc(), F("id").desc()],
                )
            )
            .filter(place__lte=CHILD_SESSIONS_MAX + 1)
            .order_by("spawned_by", "place")
            .values_list("spawned_by", "key")
        )
    for parent, child in child_rows:
        keys_of = children.get(parent)
        if keys_of is None:
            keys_of = children[parent] = ChildKeys()
        if len(keys_of) < CHILD_SESSIONS_MAX:
            keys_of.append(child)
        else:
            keys_of.more = True
    return children


# The probe is written so that the planner has one cheap plan whatever the statistics say.
# A LATERAL key is a parameter the planner cannot see, so `spawned_by = parent.key` was estimated
# from the column's statistics alone: where (nearly) every row has `spawned_by = ''` that is
# "every row matches", and a walk of `session_activity` (which yields the same order) filtering
# on spawned_by looked cheapest: issue 26, 100,003 rows removed per page row, 9 s a list at 100k
# sessions grown by bulk copies (their heap in activity order made that walk look cheaper
# still). So:
# - no equality: the key is a range [key, key] of the index's first column. Without an equality
#   the planner does not know spawned_by is fixed, so the order asked for,
#   (spawned_by, updated_at DESC, id DESC), is exactly `session_active_children`'s and no other
#   index yields it: every other plan reads and sorts all the rows it matches;
# - the upper bound is a row comparison: the planner estimates each bound as a lone inequality
#   with an unknown value (a third of the rows each, a ninth together) instead of pairing them
#   into a narrow range (0.5 %), so the range is expected to hold many rows, and reading only
#   its first CHILD_SESSIONS_MAX + 1 in index order wins over reading them all and sorting them
#   (through `session_spawned_by`, which a small store's unvacuumed heap made cheaper). Neither
#   estimate reads a statistic of spawned_by. The index condition is still the exact range
#   (spawned_by >= key AND spawned_by <= key); the row comparison is rechecked on its rows.
# tests/reads/test_list_query_plans.py pins the plan on stores without sub-agents, grown
# by copies, and skewed, before and after VACUUM. The outer ORDER BY keeps each parent's
# children together in index order (the nested loop already returns them so; the sort of at
# most (page + 1) × (CHILD_SESSIONS_MAX + 1) rows makes it sure).
_CHILDREN_SQL = """
    SELECT parent.key, child.key
    FROM unnest(%s::text[]) AS parent(key)
    CROSS JOIN LATERAL (
        SELECT key, spawned_by, updated_at, id FROM sessions_app_session
        WHERE spawned_by >= parent.key AND (spawned_by, 0) <= (parent.key, 0)
            AND archived_at IS NULL
        ORDER BY spawned_by, updated_at DESC, id DESC
        LIMIT %s
    ) AS child
    ORDER BY parent.key, child.updated_at DESC, child.id DESC
"""


def _page_values_postgresql(queryset: QuerySet[Session]) -> list[tuple]:
    """The page's ROW_FIELDS tuples, read with a plain cursor; jsonb decoded in one pass."""
    try:
        sql, params = queryset.values_list(*ROW_FIELDS, "state_version").query.sql_with_params()
    except EmptyResultSet:  # the ORM knows no row can match (as QuerySet iteration would say)
        return []
    return rawsql.decode_json(rawsql.fetchall(sql, params), _JSON_AT)


def transcript_path(session_id: str) -> str:
    """Where the transcript can be fetched: the JSONL export, named by the sessionId as
    OpenClaw's `<sessionId>.jsonl` file is (/api/v1/sessions/<key>/transcript.jsonl serves the
    same export)."""
    # A sessionId is nearly always made of characters quote() keeps (a UUID): skip it then.
    name = session_id if _URL_SAFE.fullmatch(session_id) else quote(session_id, safe="")
    return f"/api/v1/transcripts/{name}.jsonl"


_URL_SAFE = re.compile(r"[A-Za-z0-9_.~-]*")


def session_row(
    session: Session | SessionRow,
    *,
    settings: keys.KeySettings,
    children: Sequence[str] | None = None,
    messages: list[dict] | None = None,
) -> dict:
    """Absent optional fields are omitted, as OpenClaw does. (A list renders 200 of these: the
    fields are set in order with plain ifs, and keys are passed through display_key only
    under `session.scope=global`, the one setting where a displayed key differs.)"""
    if settings.scope == "global":
        show = lambda key: keys.display_key(key, settings)  # noqa: E731
        row: dict = {"key": show(session.key)}
    else:
        show = None
        row = {"key": session.key}
    row["kind"] = session.kind
    row["channel"] = session.row_channel
    row["agentId"] = session.agent_id
    label = session.label
    if label:
        row["label"] = label
    display_name = session.display_name or label
    if display_name:
        row["displayName"] = display_name
    for name, value in (
        ("model", session.model),
        ("thinkingLevel", session.thinking_level),
        ("verboseLevel", session.verbose_level),
        ("sendPolicy", session.send_policy),
    ):
        if value:
            row[name] = value
    delivery = keys.normalize_delivery_context(
        session.delivery_context,
        last_channel=session.last_channel,
        last_to=session.last_to,
        last_account_id=session.last_account_id,
        last_thread_id=session.last_thread_id,
    )
    if delivery:
        row["deliveryContext"] = delivery
    _usage_fields(row, session)
    if delivery:
        for field, name in _LAST_FIELDS:
            if field in delivery:
                row[name] = delivery[field]
    row["transcriptPath"] = transcript_path(session.session_id)
    _lineage_fields(row, session, children, show)
    row["archived"] = session.archived
    row["pinned"] = session.pinned
    if session.category:
        row["group"] = session.category
    owner = session.owner
    if owner:
        row["owner"] = {"actor": owner}
    if session.run_status:
        row["status"] = session.run_status
    if messages is not None:
        row["messages"] = messages
    return row


_LAST_FIELDS = (("channel", "lastChannel"), ("to", "lastTo"), ("accountId", "lastAccountId"))


def _usage_fields(row: dict, session: Session | SessionRow) -> None:
    row["updatedAt"] = session.updated_at
    # 9.6 §2.2: on list rows once the session has state events (a page reads it; a Session
    # model does not carry it).
    state_version = getattr(session, "state_version", 0)
    if state_version:
        row["stateVersion"] = state_version
    row["sessionId"] = str(session.session_id)
    if session.context_tokens is not None:
        row["contextTokens"] = session.context_tokens
    row["totalTokens"] = total_tokens_of(
        session.total_tokens, session.input_tokens, session.output_tokens
    )
    if session.system_sent is not None:
        row["systemSent"] = session.system_sent
    if session.aborted_last_run is not None:
        row["abortedLastRun"] = session.aborted_last_run


def _lineage_fields(
    row: dict,
    session: Session | SessionRow,
    children: Sequence[str] | None,
    show: Callable[[str], str] | None,
) -> None:
    spawned_by = session.spawned_by
    if spawned_by:
        parent = show(spawned_by) if show else spawned_by
        row["spawnedBy"] = parent
        row["parentSessionKey"] = parent
    row["spawnDepth"] = session.spawn_depth
    if not children:
        row["childSessions"] = []
    else:
        row["childSessions"] = [show(k) for k in children] if show else list(children)
        if getattr(children, "more", False):
            row["childSessionsTruncated"] = True
