"""What the browser reads, as a few bounded queries per page (the tests pin the counts).

List: one query for the page (keyset on (updated_at, id), the `session_activity` index order),
one for the children of its rows (rows.page_rows: by the page's keys, so the lookup is planned
with them), one for the last messages (transcript.last_messages). With search text, the
message hits too (message_hits: sessions_search's search).
Transcript: index range scans on (session, seq) via transcript.read_page, so the first page of a
long transcript costs what it costs for a short one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from openclaw_common import keys

from .. import transcript
from ..lib import sanitize
from ..models import Message, Run, Session, now_ms, unlisted_keys
from ..reads import internal_rows
from ..reads import search as message_search
from ..reads.message_search import MAX_LIMIT as MESSAGE_HITS
from ..reads.message_search import find_messages
from ..rows import page_rows, session_row
from . import search
from .forms import SUBAGENT_KIND, Cursor, ListFilterForm

LIST_PAGE = 50
MESSAGE_PAGE = 50
MAX_AFTER_PAGE = 200
RUNS_SHOWN = 20
CHILDREN_SHOWN = 50
# Enough to reach past a completion turn's internal rows (prompt, NO_REPLY) to real text.
PREVIEW_MESSAGES = 6
# A sub-agent's session, as present.subagent() tells one (spawned, or a `subagent:` key).
SUBAGENT_Q = Q(spawn_depth__gte=1) | ~Q(spawned_by="") | Q(key__contains=":subagent:")

# Run statuses (as the session row shows them, Run.SESSION_STATUS) that count as errors.
ERROR_STATUSES = ("failed", "timeout")


# --- the session list -----------------------------------------------------------------------


@dataclass
class ListPage:
    rows: list[dict]  # session_row() dicts plus "_light" (the light row) and "_preview"
    next_cursor: Cursor | None


def filtered_sessions(filters: dict, *, settings: keys.KeySettings):
    """Sessions matching the list filters (cleaned ListFilterForm data), unordered. The search
    text matches key, label and display name (ui/search.py); message_hits() finds messages."""
    qs = Session.objects.listable(settings=settings)
    archived = filters.get("archived") or ""
    if archived == "":
        qs = qs.active()
    elif archived == "true":
        qs = qs.archived()
    if filters.get("kind") == SUBAGENT_KIND:
        qs = qs.filter(SUBAGENT_Q)
    elif filters.get("kind"):
        qs = qs.filter(kind=filters["kind"])
    if filters.get("channel"):
        qs = qs.filter(row_channel=filters["channel"])
    if filters.get("agent"):
        qs = qs.filter(agent_id=filters["agent"])
    if filters.get("active"):
        qs = qs.filter(updated_at__gte=max(0, now_ms() - filters["active"] * 60_000))
    if filters.get("errors"):
        qs = qs.filter(run_status__in=ERROR_STATUSES)
    text = (filters.get("q") or "").strip()
    if text:
        qs = qs.filter(search.search_q(text))
    return qs


# The filters that narrow the sessions: every list filter but the search text, the archived
# choice and the page cursor (from the form, so a new filter cannot be left out).
_NARROWING = tuple(
    name for name in ListFilterForm.base_fields if name not in ("q", "archived", "after", "range")
)


def message_hits(filters: dict, *, settings: keys.KeySettings) -> dict | None:
    """The search box's messages: sessions_search's own search (find_messages: every word,
    ranked, redacted snippets, rows history hides left out) over the sessions the other filters
    select, tool results included as the transcript page shows them. A viewer may read every
    session, so that is the visibility. None without search text."""
    text = (filters.get("q") or "").strip()
    if not text:
        return None
    if (filters.get("archived") or "") == "all" and not any(filters.get(f) for f in _NARROWING):
        # Every session: no list of them to filter by (sessions_search's visibility `all`).
        scope = message_search.Scope(None, unlisted=tuple(unlisted_keys(settings)))
    else:
        scope = message_search.Scope(filtered_sessions({**filters, "q": ""}, settings=settings))
    return find_messages(
        message_search.tokens_of(text),
        scope=scope,
        include_tools=True,
        limit=MESSAGE_HITS,
        settings=settings,
    )


def list_page(
    filters: dict,
    *,
    settings: keys.KeySettings,
    cursor: Cursor | None = None,
    only_keys: list[str] | None = None,
    limit: int = LIST_PAGE,
) -> ListPage:
    """One page of rows, newest activity first; `only_keys` narrows it to those sessions (the
    live update of single rows)."""

    qs = filtered_sessions(filters, settings=settings)
    if cursor is not None:
        qs = qs.filter(
            Q(updated_at__lt=cursor.updated_at) | Q(updated_at=cursor.updated_at, id__lt=cursor.id)
        )
    if only_keys is not None:
        qs = qs.filter(key__in=only_keys)
    page = page_rows(qs.by_activity()[: limit + 1])
    has_more = len(page) > limit
    page = page[:limit]
    last = transcript.last_messages(page, PREVIEW_MESSAGES) if page else {}
    rows = []
    for light in page:
        row = session_row(light, settings=settings, children=light.children)
        row["_light"] = light
        messages = last.get(light.pk) or []
        # The newest message a person reads as conversation, not a REPLY_SKIP or a prompt.
        row["_preview"] = next(
            (m for m in reversed(messages) if internal_rows.of_message(m) is None), None
        )
        rows.append(row)
    next_cursor = Cursor(page[-1].updated_at, page[-1].pk) if has_more else None
    return ListPage(rows=rows, next_cursor=next_cursor)


# --- one transcript -------------------------------------------------------------------------


@dataclass
class MessagePage:
    messages: list[dict]  # projected (sanitised) messages, oldest first
    has_older: bool
    has_newer: bool

    @property
    def first_seq(self) -> int | None:
        return transcript.seq_of(self.messages[0]) if self.messages else None

    @property
    def last_seq(self) -> int | None:
        return transcript.seq_of(self.messages[-1]) if self.messages else None


def _project(rows: list[tuple[dict, bool]]) -> list[dict]:
    """Sanitise each message as history does (4000-char text, image data out, secrets masked);
    no page byte cap: the browser pages by count and must not skip messages."""
    flags = sanitize.Flags()
    return [sanitize.sanitize_message(payload, flags, scan=scan) for payload, scan in rows]


def messages_before(session: Session, before: int | None, *, limit: int = MESSAGE_PAGE):
    """The newest `limit` messages with seq < before (all when before is None)."""
    rows, has_more = transcript.read_page(
        session, limit=limit, include_tools=True, before_seq=before
    )
    page = MessagePage(_project(rows), has_older=has_more, has_newer=False)
    if page.last_seq is not None:
        page.has_newer = page.last_seq < session.last_seq
    elif before is not None:
        page.has_newer = before <= session.last_seq
    return page


def messages_after(session: Session, after: int, *, limit: int = MESSAGE_PAGE) -> MessagePage:
    """The oldest `limit` messages with seq > after (what a live update appends)."""
    found = transcript.message_rows(
        Message.objects.filter(session=session, seq__gt=after).order_by("seq")[: limit + 1]
    )
    has_newer = len(found) > limit
    rows = [(row.payload(), row.scan_needed) for row in found[:limit]]
    return MessagePage(_project(rows), has_older=after > 0, has_newer=has_newer)


def messages_around(session: Session, seq: int, *, limit: int = MESSAGE_PAGE) -> MessagePage:
    """The page holding `seq` near its middle (a deep link)."""
    before = min(seq + limit // 2, session.last_seq + 1)
    before = max(before, min(limit, session.last_seq) + 1)
    return messages_before(session, before, limit=limit)


def message_content(session: Session, seq: int):
    """The raw content of one message (for its images), or None."""
    found = Message.objects.filter(session=session, seq=seq).values_list("content", flat=True)
    return next(iter(found), None)


@dataclass
class Tree:
    parent: dict | None
    children: list[dict]  # each with "children": its own children (one level further)
    more_children: bool


_TREE_FIELDS = ("key", "label", "display_name", "run_status", "archived_at", "kind", "spawned_by")


def subagent_tree(session: Session) -> Tree:
    """The spawner (one up), the spawned sessions and theirs (two down); at most 3 queries."""
    parent = None
    if session.spawned_by:
        parent = Session.objects.filter(key=session.spawned_by).values(*_TREE_FIELDS).first()
    children = list(
        Session.objects.filter(spawned_by=session.key)
        .order_by("-updated_at", "-id")
        .values(*_TREE_FIELDS, "updated_at")[: CHILDREN_SHOWN + 1]
    )
    more = len(children) > CHILDREN_SHOWN
    children = children[:CHILDREN_SHOWN]
    if children:
        grandchildren: dict[str, list[dict]] = {}
        for row in (
            Session.objects.filter(spawned_by__in=[c["key"] for c in children])
            .order_by("-updated_at", "-id")
            .values(*_TREE_FIELDS)[:500]
        ):
            grandchildren.setdefault(row["spawned_by"], []).append(row)
        for child in children:
            child["children"] = grandchildren.get(child["key"], [])
    return Tree(parent=parent, children=children, more_children=more)


def session_metadata(session: Session, tree: Tree, *, settings: keys.KeySettings) -> dict:
    """The sessions_list row of this session (childSessions from the tree already read)."""
    active_children = [c["key"] for c in tree.children if c["archived_at"] is None]
    return session_row(session, settings=settings, children=active_children)


def recent_runs(session: Session) -> list[Run]:
    return list(
        Run.objects.filter(session=session)
        .order_by("-created_at")
        .only(
            "id",
            "kind",
            "status",
            "requester_key",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "session_id",
        )[:RUNS_SHOWN]
    )
