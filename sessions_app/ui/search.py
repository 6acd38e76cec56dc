"""The session list's search over key, label and display name. The search box's message hits
are sessions_search's own search (ui/queries.py message_hits → tools/sessions_search.py
find_messages), not this module.

PostgreSQL: full-text search on the GIN expression index of migration 0008 (the SQL below
repeats its expression exactly, or the planner cannot use it). Every word must match as a prefix
('simple' configuration: no stemming, no stop words, so ids and key parts match as typed).

Elsewhere (SQLite): case-insensitive substring match of the whole query on key, label and display
name.
"""

from __future__ import annotations

import re

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

MAX_TERMS = 8
MIN_PREFIX = 3  # shorter words match whole words only: "a:*" would match half the index

_PG_METADATA_SQL = """
SELECT id FROM sessions_app_session
WHERE to_tsvector('simple'::regconfig, key || ' ' || label || ' ' || display_name)
      @@ to_tsquery('simple'::regconfig, %s)
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


def search_q(text: str) -> Q:
    """A filter on Session for `text` (already stripped, non-empty)."""
    if connection.vendor == "postgresql":
        query = tsquery(text)
        if query is None:
            # Only punctuation: nothing for full-text search to look up; match keys literally.
            return Q(key__icontains=text)
        return Q(id__in=RawSQL(_PG_METADATA_SQL, [query]))
    return Q(key__icontains=text) | Q(label__icontains=text) | Q(display_name__icontains=text)
