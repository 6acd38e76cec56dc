"""The session list's search over key, label, display name and message text.

PostgreSQL: full-text search on the two GIN expression indexes of migration 0008 (the SQL below
repeats their expressions exactly, or the planner cannot use them). Every word of the query must
match as a prefix ('simple' configuration: no stemming, no stop words, so ids and key parts match
as typed). Matching messages are read through the index up to MESSAGE_MATCHES rows: a word that
occurs in millions of messages costs a bounded scan, at the price of listing only the sessions of
those first matches.

A word frequent in the messages makes the index scan itself long (every match is read before the
LIMIT applies), so a search runs with a bigger work_mem (an exact bitmap: a lossy one rechecks,
i.e. re-parses, every message on its pages) and a statement timeout; when that expires the list
is searched on key, label and display name only and the page says so (`bounded`).

Elsewhere (SQLite): case-insensitive substring match of the whole query on key, label and display
name, plus a scan of the newest FALLBACK_MESSAGE_WINDOW messages' text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL

MAX_TERMS = 8
MIN_PREFIX = 3  # shorter words match whole words only: "a:*" would match half the index
MESSAGE_MATCHES = 10_000
FALLBACK_MESSAGE_WINDOW = 50_000
SEARCH_WORK_MEM = "32MB"
SEARCH_TIMEOUT_MS = 2000
T = TypeVar("T")

_PG_METADATA_SQL = """
SELECT id FROM sessions_app_session
WHERE to_tsvector('simple'::regconfig, key || ' ' || label || ' ' || display_name)
      @@ to_tsquery('simple'::regconfig, %s)
"""
_PG_SQL = (
    _PG_METADATA_SQL
    + """
UNION
SELECT session_id FROM (
    SELECT session_id FROM sessions_app_message
    WHERE to_tsvector('simple'::regconfig, sessions_app_message_text(content))
          @@ to_tsquery('simple'::regconfig, %s)
    LIMIT %s
) AS matched
"""
)

_FALLBACK_SQL = """
SELECT session_id FROM sessions_app_message
WHERE id > (SELECT COALESCE(MAX(id), 0) - %s FROM sessions_app_message)
  AND CAST(content AS TEXT) LIKE %s ESCAPE '\\'
"""


def tsquery(text: str) -> str | None:
    """`'word':* & 'other':*` from free text, or None when no word is left.

    Each whitespace-separated term is quoted, so tsquery operators in it are plain text; the
    parser then splits it as it split the indexed text (`agent:main:dev` → a phrase).
    """
    terms = []
    for term in re.split(r"[\s'\\]+", text):
        if term and re.search(r"\w", term):
            terms.append(f"'{term}':*" if len(term) >= MIN_PREFIX else f"'{term}'")
        if len(terms) == MAX_TERMS:
            break
    return " & ".join(terms) or None


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_q(text: str, *, messages: bool = True) -> Q:
    """A filter on Session for `text` (already stripped, non-empty); `messages=False` leaves
    the message text out (PostgreSQL)."""
    if connection.vendor == "postgresql":
        query = tsquery(text)
        if query is None:
            # Only punctuation: nothing for full-text search to look up; match keys literally.
            return Q(key__icontains=text)
        if not messages:
            return Q(id__in=RawSQL(_PG_METADATA_SQL, [query]))
        return Q(id__in=RawSQL(_PG_SQL, [query, query, MESSAGE_MATCHES]))
    # Message content is stored as JSON text, where non-ASCII and quotes are escaped; search for
    # the text as it is stored.
    stored = json.dumps(text)[1:-1]
    return (
        Q(key__icontains=text)
        | Q(label__icontains=text)
        | Q(display_name__icontains=text)
        | Q(id__in=RawSQL(_FALLBACK_SQL, [FALLBACK_MESSAGE_WINDOW, _like_pattern(stored)]))
    )


def bounded(fetch: Callable[[bool], T]) -> tuple[T, bool]:
    """Run `fetch(messages=True)` under the search limits; when it times out, `fetch(False)`.
    Returns (result, whether message text was left out)."""
    if connection.vendor != "postgresql":
        return fetch(True), False
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"SET LOCAL work_mem = '{SEARCH_WORK_MEM}'; "
                f"SET LOCAL statement_timeout = {SEARCH_TIMEOUT_MS}"
            )
        try:
            with transaction.atomic():
                return fetch(True), False
        except OperationalError:  # the statement timeout (QueryCanceled)
            pass
        return fetch(False), True
