"""sessions_list (reference §2, api.md §1)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from openclaw_common import keys

from .. import transcript, visibility
from ..identity import Requester
from ..models import Agent, Session, now_ms
from ..rows import page_rows, session_row
from .declaration import Choice, Declaration, Integer, String, StringList, Tool
from .shapes import BOOLEAN, INTEGER, SESSION_ROW, array, obj

DEFAULT_LIMIT = 100
MAX_LIMIT = 200
MAX_MESSAGE_LIMIT = 20
ARCHIVED_CHOICES = {False: False, True: True, "false": False, "true": True, "all": "all"}

DECLARATION = Declaration(
    name="sessions_list",
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
    ),
    result=obj(
        {
            "count": INTEGER,
            "sessions": array(SESSION_ROW),
            "limitApplied": INTEGER,
            "offset": INTEGER,
            "hasMore": BOOLEAN,
            "nextOffset": INTEGER,
        },
        ("count", "sessions", "limitApplied", "offset", "hasMore"),
    ),
    group="sessions",
    rpc="sessions.list",
)


def sessions_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """List the sessions `requester` may see, most recently updated first.

    Args: kinds (main|group|cron|hook|node|other; unknown values ignored), limit (default 100,
    at most 200: `limitApplied`), activeMinutes, messageLimit (0–20; toolResult messages removed),
    offset (→ nextOffset/hasMore), agentId, label (exact), search (key, label, display name,
    subject, sessionId), archived (false | true | "all").
    Returns {count, sessions, limitApplied, offset, hasMore, nextOffset?}.
    """
    a = DECLARATION.read(args)
    kinds = [k for k in (a.kinds or []) if k in keys.KINDS]
    limit_applied = min(a.limit, MAX_LIMIT)
    message_limit = min(a.messageLimit, MAX_MESSAGE_LIMIT)
    offset = a.offset

    settings = requester.key_settings
    qs = Session.objects.listable(settings=settings).filter(
        visible_filter(visibility.policy_for(requester))
    )
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

    page = page_rows(qs.by_activity()[offset : offset + limit_applied + 1])
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
    result: dict[str, Any] = {
        "count": len(rows),
        "sessions": rows,
        "limitApplied": limit_applied,
        "offset": offset,
        "hasMore": has_more,
    }
    if has_more:
        result["nextOffset"] = offset + len(rows)
    return result


def visible_filter(policy: visibility.Policy) -> Q:
    """visibility.visible_q(), reading the agent ids only when the allow list needs them: with
    `all`, agent-to-agent on and an allow list that admits everyone (empty or "*"), every agent
    is visible and the list needs no agent filter (and no query to find that out)."""
    if policy.visibility == "all" and policy.a2a_enabled and not policy.restrict_to_spawned:
        if not policy.a2a_allow or any(p.strip() == "*" for p in policy.a2a_allow):
            return Q()
        return visibility.visible_q(
            policy, agent_ids=list(Agent.objects.values_list("id", flat=True))
        )
    return visibility.visible_q(policy)


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
