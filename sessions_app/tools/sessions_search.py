"""sessions_search (9.6 §3): full-text search over the transcripts the caller may see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..access import visibility
from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..lib.args import Args
from ..models import Session, unlisted_keys
from ..reads import message_search, search
from ..reads.message_search import MAX_LIMIT
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Boolean, Declaration, Integer, String, Tool
from .shapes import BOOLEAN, INTEGER, STRING, array, obj

DEFAULT_LIMIT = 10
MAX_QUERY_CHARS = 4096

HIT = obj(
    {
        "sessionKey": STRING,
        "timestamp": INTEGER,
        "role": {"type": "string", "enum": ["user", "assistant", "toolResult", "tool"]},
        "snippet": STRING,
        "score": {"type": "number"},
        "sessionId": STRING,
        "messageId": STRING,
        "seq": INTEGER,
    },
    ("sessionKey", "timestamp", "role", "snippet", "score", "sessionId", "messageId", "seq"),
)

DECLARATION = Declaration(
    name="sessions_search",
    policy=Policy(groups=(SESSIONS_GROUP,), orchestrator=True),
    description=(
        "Search the transcripts of the sessions you can see for messages containing every word "
        "of `query` (whole words, no operators). Returns the best matches with a snippet; pass "
        "a hit's sessionKey, messageId and sessionId to sessions_history to read around it "
        "(with includeTools for a tool result)."
    ),
    params=(
        # Read by hand below: 9.6's texts for an empty or long query are not args.py's.
        String(
            "query",
            "Words to find; every word must match.",
            required=True,
            min_length=1,
            max_length=MAX_QUERY_CHARS,
        ),
        String(
            "sessionKey",
            'Search only this session (key or sessionId; "current" or "main" accepted).',
            max_length=keys.MAX_KEY_LENGTH,
        ),
        Integer(
            "limit",
            f"Maximum results (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
            minimum=1,
            default=DEFAULT_LIMIT,
        ),
        Boolean("includeTools", "Also search tool results (default false; beyond OpenClaw 9.6)."),
    ),
    result=obj(
        {
            "results": array(HIT, "Best first: score, then newest, sessionKey, message."),
            "truncated": BOOLEAN,
            "indexing": BOOLEAN,
            "archivedTranscriptsExcluded": INTEGER,
            "warning": STRING,
        },
        ("results",),
    ),
    # No `rpc`: 9.6's sessions.search RPC takes other parameters (sessionKeys, scope).
)


@DECLARATION.arguments
@dataclass(frozen=True)
class SearchArgs:
    query: str
    sessionKey: str | None
    limit: int
    includeTools: bool


def _query(raw: Any) -> list[str]:
    """9.6's query rules and texts: trimmed, not empty, at most 4096 characters."""
    if isinstance(raw, dict) and raw.get("query") is not None:
        value = raw["query"]
        if not isinstance(value, str):
            raise InvalidArgument("query must be a string")
        text = value.strip()
        if not text:
            raise InvalidArgument("query must not be empty")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidArgument(f"query must not exceed {MAX_QUERY_CHARS} characters")
        if "\x00" in text:
            raise InvalidArgument("query must not contain NUL characters")
        return search.tokens_of(text)
    raise InvalidArgument("query required")


def _limit(raw: Any) -> None:
    """9.6 refuses a limit above 25 with its positive-integer text (not a clamp)."""
    value = raw.get("limit") if isinstance(raw, dict) else None
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            return  # the reader names it
        if number >= MAX_LIMIT + 1:
            raise InvalidArgument("limit must be a positive integer")


def search_scope(requester: Requester, session_key: str | None) -> search.Scope:
    """The sessions the search may read: the one named (Forbidden/NotFound as history says
    them, with the `Session search` prefix), else every session the caller may list, active and
    archived, and its own session."""
    if session_key and session_key.strip().lower() != "current":
        session = resolve_session(requester, session_key, action="search")
        return search.Scope(ids=[session.pk])
    if session_key:  # "current"
        return search.Scope(Session.objects.filter(key=requester.session_key))
    policy = visibility.policy_for(requester)
    visible = visibility.visible_filter(policy)
    settings = requester.key_settings
    if not visible:  # every session (and Q(key=…) | Q() would be Q(key=…) alone)
        return search.Scope(None, unlisted=tuple(unlisted_keys(settings)))
    listable = Session.objects.listable(settings=settings)
    me = policy.requester_key
    if policy.restrict_to_spawned or policy.visibility in ("self", "tree"):
        # These see their own session and some it spawned (visibility.visible_q): read those
        # by the two key indexes and let can_list() decide. The filter as SQL (`agent = … AND
        # (key = … OR spawned_by = …)`) makes SQLite, without statistics, read every session
        # of the agent. tests/tools/test_sessions_search.py checks the two agree.
        rows = listable.filter(Q(key=me) | Q(spawned_by=me))
        return search.Scope(
            ids=[
                pk
                for pk, key, agent, spawned_by in rows.values_list(
                    "pk", "key", "agent_id", "spawned_by"
                )
                if key == me
                or visibility.can_list(policy, key=key, agent_id=agent, spawned_by=spawned_by)
            ]
        )
    return search.Scope(listable.filter(Q(key=me) | visible))


def sessions_search(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The messages (user and assistant text; tool results too with includeTools) of the
    sessions `requester` may see that contain every word of `query`, best first.

    Visibility is applied before `limit`. Snippets are redacted and at most 300 characters
    (+ `…`); the results are capped at 32 KiB of JSON. `truncated` says that more visible hits
    existed than were returned. Cold transcripts (retention's cold storage) are not searched:
    `archivedTranscriptsExcluded` counts the visible ones, with 9.6's warning.
    """
    args = DECLARATION.camel(args)  # session_key too (9.6 §0); query and limit are read by hand
    Args(args, DECLARATION.names, tool=DECLARATION.name)  # the object and unknown names first
    tokens = _query(args)
    _limit(args)
    a = DECLARATION.read(args, SearchArgs)
    scope = search_scope(requester, a.sessionKey)
    return message_search.find_messages(
        tokens,
        scope=scope,
        include_tools=a.includeTools,
        limit=a.limit,
        settings=requester.key_settings,
    )


TOOL = Tool(DECLARATION, sessions_search)
