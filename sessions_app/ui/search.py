"""The session list's search over key, label, display name and message text.

Message text is matched by sessions_search's own function (sessions_app/search.py: every word,
whole words, the index of migration 0013 on both backends), so the list and the tool find the
same messages. Its matches are read through the index up to search.MAX_BACKEND_HITS rows: a word
that occurs in millions of messages costs a bounded scan, at the price of listing only the
sessions of those first matches.

PostgreSQL: key, label and display name by full-text search on the GIN expression index of
migration 0008 (the SQL below repeats its expression exactly, or the planner cannot use it).
Every word must match as a prefix ('simple' configuration: no stemming, no stop words, so ids and
key parts match as typed).

A word frequent in the messages makes the index scan itself long (every match is read before the
LIMIT applies), so a search runs with a bigger work_mem (an exact bitmap: a lossy one rechecks,
i.e. re-parses, every message on its pages) and a statement timeout; when that expires the list
is searched on key, label and display name only and the page says so (`bounded`).

Elsewhere (SQLite): case-insensitive substring match of the whole query on key, label and display
name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL

from .. import search

MAX_TERMS = 8
MIN_PREFIX = 3  # shorter words match whole words only: "a:*" would match half the index
SEARCH_WORK_MEM = "32MB"
SEARCH_TIMEOUT_MS = 2000
T = TypeVar("T")

_PG_METADATA_SQL = """
SELECT id FROM sessions_app_session
WHERE to_tsvector('simple'::regconfig, key || ' ' || label || ' ' || display_name)
      @@ to_tsquery('simple'::regconfig, %s)
"""
_UNION = "\nUNION\n"


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


def search_q(text: str, *, messages: bool = True) -> Q:
    """A filter on Session for `text` (already stripped, non-empty); `messages=False` leaves
    the message text out (PostgreSQL)."""
    tokens = search.tokens_of(text)
    with_messages = messages and search.searchable(tokens)
    if connection.vendor == "postgresql":
        query = tsquery(text)
        if query is None:
            # Only punctuation: nothing for full-text search to look up; match keys literally.
            return Q(key__icontains=text)
        if not with_messages:
            return Q(id__in=RawSQL(_PG_METADATA_SQL, [query]))
        message_sql, params = search.matching_sessions_sql(tokens)
        return Q(id__in=RawSQL(_PG_METADATA_SQL + _UNION + message_sql, [query, *params]))
    found = Q(key__icontains=text) | Q(label__icontains=text) | Q(display_name__icontains=text)
    if with_messages:
        found |= Q(id__in=RawSQL(*search.matching_sessions_sql(tokens)))
    return found


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
