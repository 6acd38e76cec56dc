"""Finding messages for a caller (9.6 §3): the best hits of a scope, the rows history hides
left out, rendered as sessions_search's results. The tool, GET /api/v1/search/ and the transcript
browser's search box call find_messages(); search.py is the index underneath.
"""

from __future__ import annotations

from typing import Any

import orjson

from openclaw_common import keys

from . import history_read, search

MAX_LIMIT = 25  # the most hits one search returns (sessions_search's limit, the browser's)
SNIPPET_CHARS = 300
RESULTS_MAX_BYTES = 32 * 1024
# 9.6's text (§3); reading the transcript (sessions_history) restores it.
ARCHIVED_WARNING = (
    "Search excludes {n} archived transcripts. Restore a transcript to include it in search."
)


def find_messages(
    tokens: list[str],
    *,
    scope: search.Scope,
    include_tools: bool,
    limit: int,
    settings: keys.KeySettings,
) -> dict[str, Any]:
    """The search itself, for sessions_search and the transcript browser's search box: the
    best `limit` messages of `scope` (the sessions the caller may see) holding every token, as
    the tool's `{results, truncated?, archivedTranscriptsExcluded?, warning?}`.

    Rows history hides (search.find cannot tell them) are left out, so every hit can be read
    around with sessions_history; twice `limit` are read to leave room for them."""
    roles = search.CONVERSATION_ROLES + (search.TOOL_ROLES if include_tools else ())
    hits, more = search.find(tokens, scope=scope, roles=roles, limit=2 * limit)
    shown = [h for h in hits if not history_read.hidden(h.role, h.content, h.provenance)]
    results, cut = _render(shown[:limit], tokens, settings)
    payload: dict[str, Any] = {"results": results}
    if more or cut or len(shown) > limit:
        payload["truncated"] = True
    excluded = search.cold_in(scope)
    if excluded:
        payload["archivedTranscriptsExcluded"] = excluded
        payload["warning"] = ARCHIVED_WARNING.format(n=excluded)
    return payload


def _render(
    hits: list[search.Hit], tokens: list[str], settings: keys.KeySettings
) -> tuple[list[dict], bool]:
    results: list[dict] = []
    size = 2  # the array's brackets
    for hit in hits:
        result: dict[str, Any] = {
            "sessionKey": keys.display_key(hit.session_key, settings),
            "timestamp": hit.timestamp,
            "role": hit.role,
            "snippet": search.snippet(hit.content, tokens, max_chars=SNIPPET_CHARS),
            "score": hit.score,
            # What sessions_history takes back: the transcript generation and the message's
            # `__openclaw.id` there (history_read.message_id), imported or not.
            "sessionId": hit.session_id,
            "messageId": history_read.message_id(hit.seq),
            "seq": hit.seq,
        }
        size += len(orjson.dumps(result)) + 1
        if size > RESULTS_MAX_BYTES:
            return results, True
        results.append(result)
    return results, False
