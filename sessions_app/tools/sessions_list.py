"""sessions_list (reference §2, api.md §1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from .. import transcript
from ..access import visibility
from ..access.identity import Requester
from ..models import Run, Session, SessionQuerySet, now_ms
from ..reads import list_enrichment
from ..reads.list_enrichment import ENRICH_ROWS
from ..rows import page_rows, session_row, with_state_version
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Boolean, Choice, Declaration, Integer, String, StringList, Tool
from .shapes import BOOLEAN, INTEGER, SESSION_ROW, STRING, array, obj

DEFAULT_LIMIT = 100
MAX_LIMIT = 200
MAX_MESSAGE_LIMIT = 20
ARCHIVED_CHOICES = {False: False, True: True, "false": False, "true": True, "all": "all"}

DECLARATION = Declaration(
    name="sessions_list",
    policy=Policy(groups=(SESSIONS_GROUP,), orchestrator=True),
    description=(
        "List the sessions you can see, most recently active first, with their key, kind, "
        "channel and token counts. Set messageLimit to include each session's last "
        "messages (tool results left out; use sessions_history for those)."
    ),
    params=(
        StringList(
            "kinds",
            "Only sessions of these kinds.",
            item_enum=tuple(keys.KINDS),
        ),
        Integer(
            "limit",
            f"Maximum rows (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
            minimum=1,
            default=DEFAULT_LIMIT,
        ),
        Integer("activeMinutes", "Only sessions updated within this many minutes.", minimum=1),
        Integer(
            "messageLimit",
            f"Include the last N messages of each session (0-{MAX_MESSAGE_LIMIT}, default 0).",
            default=0,
        ),
        Integer("offset", "Skip this many rows (paging; see nextOffset).", default=0),
        String("agentId", "Only sessions of this agent.", max_length=64),
        String("label", "Only sessions with exactly this label.", max_length=200),
        String(
            "search",
            "Text to find in the key, label, display name or sessionId.",
            max_length=200,
        ),
        Choice(
            "archived",
            'Archived sessions: "false" (default), "true" or "all".',
            choices=ARCHIVED_CHOICES,
            enum=("false", "true", "all"),
            describe='true, false or "all"',
            default=False,
        ),
        # OpenClaw 2026.9.6 (§4.1). Filters only narrow the list; they never grant access.
        Choice(
            "relationship",
            "owned, created or involving: relative to an authenticated requesting user, which "
            "API keys are not (use ownerId or creatorId).",
            choices={"owned": "owned", "created": "created", "involving": "involving"},
            enum=("owned", "created", "involving"),
            describe="owned, created, or involving",
        ),
        String(
            "ownerId", "Only sessions whose owner (else creator) is this actor id.", max_length=200
        ),
        String("creatorId", "Only sessions created by this actor id.", max_length=200),
        String("projectId", "Only sessions of this stored project.", max_length=200),
        String(
            "workspaceDir", "Only sessions with this stored workspace directory.", max_length=4096
        ),
        String(
            "group",
            'Only sessions of this sidebar group; "" selects ungrouped sessions.',
            max_length=512,
            blank_ok=True,
        ),
        Boolean("pinned", "Only pinned (true) or unpinned (false) sessions.", default=None),
        Boolean("activeOnly", "Only sessions with a queued or running run.", default=None),
        Boolean("excludeSubagents", "Leave out sub-agent sessions that are not in a group."),
        Boolean(
            "includeDerivedTitles",
            f"Add derivedTitle (the first user message) to the first {ENRICH_ROWS} rows.",
        ),
        Boolean(
            "includeLastMessage",
            f"Add lastMessagePreview (the newest user or assistant text) to the first "
            f"{ENRICH_ROWS} rows.",
        ),
    ),
    result=obj(
        {
            "count": INTEGER,
            "sessions": array(SESSION_ROW),
            "limitApplied": INTEGER,
            "offset": INTEGER,
            "hasMore": BOOLEAN,
            "nextOffset": INTEGER,
            "visibility": obj(
                {"mode": STRING, "restricted": BOOLEAN, "warning": STRING},
                ("mode", "restricted", "warning"),
                "Present when the caller's visibility is narrower than all sessions.",
            ),
        },
        ("count", "sessions", "limitApplied", "offset", "hasMore"),
    ),
    rpc="sessions.list",
)


@DECLARATION.arguments
@dataclass(frozen=True)
class ListArgs:
    kinds: list[str] | None
    limit: int
    activeMinutes: int | None
    messageLimit: int
    offset: int
    agentId: str | None
    label: str | None
    search: str | None
    archived: bool | str
    relationship: str | None
    ownerId: str | None
    creatorId: str | None
    projectId: str | None
    workspaceDir: str | None
    group: str | None
    pinned: bool | None
    activeOnly: bool | None
    excludeSubagents: bool
    includeDerivedTitles: bool
    includeLastMessage: bool


def sessions_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """List the sessions `requester` may see, most recently updated first.

    Args: kinds (main|group|cron|hook|node|other; unknown values ignored), limit (default 100,
    at most 200: `limitApplied`), activeMinutes, messageLimit (0–20; toolResult messages removed),
    offset (→ nextOffset/hasMore), agentId, label (exact), search (key, label, display name,
    subject, sessionId), archived (false | true | "all").
    Returns {count, sessions, limitApplied, offset, hasMore, nextOffset?}.
    """
    a = DECLARATION.read(args, ListArgs)
    kinds = [k for k in (a.kinds or []) if k in keys.KINDS]
    limit_applied = min(a.limit, MAX_LIMIT)
    message_limit = min(a.messageLimit, MAX_MESSAGE_LIMIT)
    offset = a.offset

    settings = requester.key_settings
    policy = visibility.policy_for(requester)
    qs = Session.objects.listable(settings=settings)
    if a.archived is False:
        qs = qs.active()
    elif a.archived is True:
        qs = qs.archived()
    if a.agentId:
        qs = qs.filter(agent_id=keys.normalize_agent_id(a.agentId))
    if a.label:
        qs = qs.filter(label=a.label)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    if a.activeMinutes:
        qs = qs.filter(updated_at__gte=max(0, now_ms() - a.activeMinutes * 60_000))
    if a.search:
        qs = qs.filter(search_q(a.search))
    qs = qs.filter(filters_96(a))

    page = page_rows(visible_page(qs, policy, offset=offset, limit=limit_applied + 1))
    has_more = len(page) > limit_applied
    page = page[:limit_applied]
    messages = transcript.last_messages(page, message_limit) if message_limit else None

    rows = [
        session_row(
            s,
            settings=settings,
            children=s.children,
            messages=(messages.get(s.pk, []) if messages is not None else None),
        )
        for s in page
    ]
    _enrich(rows, page, titles=a.includeDerivedTitles, previews=a.includeLastMessage)
    result: dict[str, Any] = {
        "count": len(rows),
        "sessions": rows,
        "limitApplied": limit_applied,
        "offset": offset,
        "hasMore": has_more,
    }
    if has_more:
        result["nextOffset"] = offset + len(rows)
    note = visibility_note(policy)
    if note:
        result["visibility"] = note
    return result


RELATIONSHIP_TEXT = (
    "relationship requires an authenticated requesting user; use an explicit ownerId or "
    "creatorId instead"
)
SCOPES = {
    "self": "current session only",
    "tree": "current session + own spawn subtree",
    "sandbox": "current session + own spawn subtree (sandbox: spawned sessions only)",
    "agent": "all sessions of this agent",
}


def filters_96(a: ListArgs) -> Q:
    """The 9.6 filters (§4.1) as one Q. `relationship` needs a requesting user; callers here
    are API keys and sessions, never users, so it is refused with 9.6's text (a 400 here,
    where 9.6 throws)."""
    if a.relationship:
        raise InvalidArgument(RELATIONSHIP_TEXT)
    q = Q()
    if a.ownerId:
        q &= Q(extra__owner__id=a.ownerId) | Q(
            extra__owner__isnull=True, extra__createdActor__id=a.ownerId
        )
    if a.creatorId:
        q &= Q(extra__createdActor__id=a.creatorId)
    if a.projectId:
        q &= Q(extra__projectId=a.projectId)
    if a.workspaceDir:
        q &= Q(extra__workspaceDir=a.workspaceDir)
    if a.group is not None:
        q &= Q(category=a.group)
    if a.pinned is not None:
        q &= Q(pinned_at__isnull=not a.pinned)
    if a.activeOnly is not None:
        running = Q(run_status=Run.SESSION_STATUS[Run.RUNNING])
        q &= running if a.activeOnly else ~running
    if a.excludeSubagents:
        # 9.6 drops sub-agent runs and ungrouped spawned sessions (ACP children, …).
        q &= ~(Q(key__contains=":subagent:") | (~Q(spawned_by="") & Q(category="")))
    return q


def visibility_note(policy: visibility.Policy) -> dict[str, Any] | None:
    """9.6's disclosure when the caller sees less than every session (§4.1)."""
    mode = policy.visibility
    if mode == "all" and not policy.restrict_to_spawned:
        return None
    scope = SCOPES["sandbox" if policy.restrict_to_spawned else mode]
    return {
        "mode": mode,
        "restricted": True,
        "warning": (
            f"Session visibility is restricted (effective tools.sessions.visibility={mode}: "
            f"{scope}). Sessions outside that scope are omitted from results and count."
        ),
    }


def _enrich(rows: list[dict], page: list, *, titles: bool, previews: bool) -> None:
    """derivedTitle / lastMessagePreview on the first ENRICH_ROWS rows, when asked."""
    found = [
        (name, by_id)
        for name, by_id, wanted in (
            ("derivedTitle", list_enrichment.derived_titles, titles),
            ("lastMessagePreview", list_enrichment.last_previews, previews),
        )
        if wanted
    ]
    for name, read in found:
        values = read(page[:ENRICH_ROWS])
        for row, session in zip(rows, page, strict=True):
            if session.pk in values:
                row[name] = values[session.pk]


def visible_page(
    qs: SessionQuerySet, policy: visibility.Policy, *, offset: int, limit: int
) -> QuerySet[Session]:
    """`qs` narrowed to what `policy` may see, newest activity first, rows offset..offset+limit.

    Where the visibility is a union of index ranges (visibility.activity_branches: `tree`),
    each branch is read newest first up to the page's end and the union sorted: PostgreSQL then
    merges the branches' index scans instead of filtering the whole activity index. (SQLite
    cannot order and limit inside a compound statement: it keeps the one filter.)"""
    end = offset + limit
    branches = visibility.activity_branches(policy)
    if branches and connection.features.supports_slicing_ordering_in_compound:
        first, *rest = [
            with_state_version(qs.filter(branch)).by_activity()[:end] for branch in branches
        ]
        return first.union(*rest, all=True).order_by("-updated_at", "-id")[offset:end]
    return qs.filter(visibility.visible_filter(policy)).by_activity()[offset:end]


def search_q(text: str) -> Q:
    q = (
        Q(key__icontains=text)
        | Q(label__icontains=text)
        | Q(display_name__icontains=text)
        | Q(subject__icontains=text)
    )
    session_id = keys.normalize_session_id(text)
    if session_id:
        q |= Q(session_id=session_id)
    return q


TOOL = Tool(DECLARATION, sessions_list)
