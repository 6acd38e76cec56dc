"""sessions_list (reference §2, api.md §1)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from .. import keys, transcript, visibility
from ..args import Args
from ..identity import Requester
from ..models import Agent, Session, now_ms
from ..rows import page_rows, session_row

ARGS = frozenset(
    {
        "kinds",
        "limit",
        "activeMinutes",
        "messageLimit",
        "offset",
        "agentId",
        "label",
        "search",
        "archived",
    }
)
DEFAULT_LIMIT = 100
MAX_LIMIT = 200
MAX_MESSAGE_LIMIT = 20
ARCHIVED_CHOICES = {False: False, True: True, "false": False, "true": True, "all": "all"}


def sessions_list(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """List the sessions `requester` may see, most recently updated first.

    Args: kinds (main|group|cron|hook|node|other; unknown values ignored), limit (default 100,
    at most 200: `limitApplied`), activeMinutes, messageLimit (0–20; toolResult messages removed),
    offset (→ nextOffset/hasMore), agentId, label (exact), search (key, label, display name,
    subject, sessionId), archived (false | true | "all").
    Returns {count, sessions, limitApplied, offset, hasMore, nextOffset?}.
    """
    a = Args(args, ARGS, tool="sessions_list")
    kinds = [k for k in (a.string_list("kinds") or []) if k in keys.KINDS]
    limit = a.integer("limit", minimum=1, default=DEFAULT_LIMIT)
    limit_applied = min(limit, MAX_LIMIT)
    active_minutes = a.integer("activeMinutes", minimum=1)
    message_limit = min(a.integer("messageLimit", minimum=0, default=0), MAX_MESSAGE_LIMIT)
    offset = a.integer("offset", minimum=0, default=0)
    agent_id = a.string("agentId", max_length=64)
    label = a.string("label", max_length=200)
    search = a.string("search", max_length=200)
    archived = a.choice(
        "archived", ARCHIVED_CHOICES, default=False, describe='true, false or "all"'
    )

    settings = requester.key_settings
    qs = Session.objects.listable(settings=settings).filter(
        visible_filter(visibility.policy_for(requester))
    )
    if archived is False:
        qs = qs.active()
    elif archived is True:
        qs = qs.archived()
    if agent_id:
        qs = qs.filter(agent_id=keys.normalize_agent_id(agent_id))
    if label:
        qs = qs.filter(label=label)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    if active_minutes:
        qs = qs.filter(updated_at__gte=max(0, now_ms() - active_minutes * 60_000))
    if search:
        qs = qs.filter(search_q(search))

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
    result = {
        "count": len(rows),
        "sessions": rows,
        "limitApplied": limit_applied,
        "offset": offset,
        "hasMore": has_more,
    }
    if has_more:
        result["nextOffset"] = offset + len(rows)
    return result


def visible_filter(policy: visibility.Policy):
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
