"""Full-text search over transcripts (9.6 §3): the one search sessions_search, GET
/api/v1/search/ and the transcript browser's search box run (tools/sessions_search.py
find_messages calls find()).

The query is split on whitespace and every token must match as a whole word sequence (9.6 quotes
each token and joins them with AND: no operators, no prefixes). A token with no letter or digit
can match nothing (as in FTS5), so such a query finds nothing rather than everything.

Backends (the index is migration 0013's, written with the message in its transaction):
- SQLite: FTS5 `MATCH '"tok1" AND "tok2"'`, ranked by `-bm25()` (higher is better), as 9.6.
- PostgreSQL: the GIN index on the stored `search_vector` (to_tsvector('openclaw_search', text),
  written by a trigger with the message: migration 0023), each token a phraseto_tsquery; ranked
  by ts_rank.
On both, at most MAX_BACKEND_HITS visible matches are read through the index and ranked (the
result says when there were others): a word found in millions of messages costs a bounded
scan, not a ranking of every match.

Callers pass the sessions that may be searched as a Session queryset, so visibility is a filter
of the one query and applies before the limit.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import orjson
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet, Sum

from ..lib import sanitize
from ..models import Session

CONVERSATION_ROLES = ("user", "assistant")
TOOL_ROLES = ("toolResult", "tool")
MAX_BACKEND_HITS = 250  # 9.6 reads 25 hits per 200 sessions; ranking each costs a parse
MAX_LISTED_SESSIONS = 1000
# Scopes holding more messages than this are read by the text index alone (_scope_sql).
DEEP_SCOPE_MESSAGES = 200_000
# A deep scope on PostgreSQL: a query matching at most this many messages in the whole table
# reads them all from the text index (_few_matches).
FEW_MATCHES = 2_000
SNIPPET_TOKENS = 48
SNIPPET_LEAD = 12  # tokens shown before the first match
SNIPPET_ELLIPSIS = " … "
_WORD = re.compile(r"\w+")
_PG_CONFIG = "'openclaw_search'::regconfig"
# The message's stored text vector (migration 0023: written by a trigger with the message), so
# neither the match test nor ts_rank parses the text again.
_PG_VECTOR = "m.search_vector"


@dataclass(frozen=True)
class Hit:
    message_pk: int
    session_pk: int
    session_key: str
    session_id: str
    seq: int
    role: str
    timestamp: int
    score: float
    content: Any
    provenance: dict | None


def tokens_of(text: str) -> list[str]:
    """The query's tokens: whitespace-separated, as 9.6 splits them."""
    return text.split()


def searchable(tokens: list[str]) -> bool:
    """Whether every token has something to match (a letter or digit)."""
    return bool(tokens) and all(_WORD.search(t) for t in tokens)


def fts5_query(tokens: list[str]) -> str:
    """9.6's FTS5 query: each token double-quoted (inner quotes doubled), joined with AND."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in tokens)


def _pg_tsquery(tokens: list[str]) -> tuple[str, list[str]]:
    sql = " && ".join(f"phraseto_tsquery({_PG_CONFIG}, %s)" for _ in tokens)
    return f"({sql})", list(tokens)


def _sessions_sql(sessions: QuerySet[Session]) -> tuple[str, tuple]:
    try:
        sql, params = sessions.order_by().values("id").query.sql_with_params()
    except EmptyResultSet:  # the ORM knows no session can match: an empty id list
        return "SELECT 0 WHERE FALSE", ()
    return sql, tuple(params)


def _in_list(values: tuple) -> str:
    return "(" + ", ".join(["%s"] * len(values)) + ")"


# Both backends read at most MAX_BACKEND_HITS (+ 1) visible matches through the index (`hits`,
# scored there), keep the best `limit` + 1 (one more tells there were others) and only then read
# their content, so a common word costs a bounded scan. Both take the newest matches: SQLite
# walks the text index backwards (FTS5 reads its doclists backwards cheaply); PostgreSQL walks
# the id index backwards testing the stored vector for a common word, or sorts the text index's
# few matches for a rare one. (Matches in table order, as before, made a common word's plan read
# whatever the heap held first: after the search_vector backfill, a stretch of emptied pages,
# 125 ms instead of 3.)
_RANKED = """
SELECT r.id, r.session_id, r.key, s.session_id, m.seq, m.role, r.timestamp, r.score,
       {content}, r.found
FROM (
    SELECT h.*, COUNT(*) OVER () AS found FROM hits AS h
    ORDER BY h.score DESC, h.timestamp DESC, h.key ASC, h.id ASC
    LIMIT %s
) AS r
JOIN sessions_app_message m ON m.id = r.id
JOIN sessions_app_session s ON s.id = r.session_id
ORDER BY r.score DESC, r.timestamp DESC, r.key ASC, r.id ASC
"""

_SQLITE_HITS = """
WITH hits AS (
    SELECT m.id, m.session_id, s.key, m.timestamp, -bm25(sessions_app_message_fts) AS score
    FROM sessions_app_message_fts
    JOIN sessions_app_message m ON m.id = sessions_app_message_fts.rowid
    JOIN sessions_app_session s ON s.id = m.session_id
    WHERE sessions_app_message_fts MATCH %s AND m.role IN {roles} {scope}
    ORDER BY sessions_app_message_fts.rowid DESC
    LIMIT %s
)
"""

_PG_HITS = """
WITH hits AS MATERIALIZED (
    SELECT m.id, m.session_id, s.key, m.timestamp, ts_rank({vector}, {query}) AS score
    FROM sessions_app_message m JOIN sessions_app_session s ON s.id = m.session_id
    WHERE {vector} @@ {query} AND m.role IN {roles} {scope}
    ORDER BY m.id DESC
    LIMIT %s
)
"""


@dataclass(frozen=True)
class Scope:
    """Which sessions a search reads: `ids`, else `sessions` (a queryset of the visible ones),
    else every session but `unlisted` keys."""

    sessions: QuerySet[Session] | None = None
    unlisted: tuple[str, ...] = ()
    ids: list[int] | None = None


def _scope_sql(scope: Scope, pg_query: tuple[str, list] | None = None) -> tuple[str, list] | None:
    """The WHERE condition for `scope`, or None when it holds no session. `pg_query` is the
    search's tsquery on PostgreSQL (SQL and parameters), which a deep scope's plan depends on.

    A few sessions (an agent under `tree`, one named session) are named by id: the planner
    then knows from its statistics how many messages each holds, and does not walk a session of
    a million messages parsing each instead of using the text index. Many are a subquery."""
    if scope.ids is not None:
        ids = scope.ids
    elif scope.sessions is not None:
        ids = list(
            scope.sessions.order_by().values_list("id", flat=True)[: MAX_LISTED_SESSIONS + 1]
        )
    elif scope.unlisted:
        return f"AND s.key NOT IN {_in_list(scope.unlisted)}", list(scope.unlisted)
    else:
        return "", []
    if not ids:
        return None
    # On SQLite, `+column` keeps the planner from driving the search by the session's index
    # (reading a deep session's messages one by one) instead of by the text index.
    column = "m.session_id" if connection.vendor == "postgresql" else "+m.session_id"
    bound, bound_params = "", []
    if _holds_a_deep_session(ids):
        # PostgreSQL ANDs the text index's bitmap with the (session, seq) index's, which for a
        # session of a million messages reads all of its entries (90 ms at 1.2M, for 300 text
        # matches; BENCHMARKS.md). Past DEEP_SCOPE_MESSAGES the text index alone drives and the
        # sessions are a filter on its matches.
        if connection.vendor == "postgresql":
            column = "(m.session_id + 0)"
        # And the matches are read only between the scope's first and last message: a common
        # word otherwise walks the matches of every newer session before reaching an old deep
        # one's (852 ms on SQLite for a 1.2M-message session under 3.8M newer messages; 1 ms).
        span = _id_span(ids)
        if span is None:
            return None  # every transcript of the scope is cold: nothing to match
        rowid = "m.id" if connection.vendor == "postgresql" else "sessions_app_message_fts.rowid"
        if pg_query is not None and _few_matches(*pg_query):
            # A rare word: its few matches come from the text index alone. With the span
            # indexable, PostgreSQL (misjudging a rare word as common) ANDs the text index's
            # bitmap with the primary key's over the whole span: 1.2M entries, 63 ms, for 300
            # matches (BENCHMARKS.md). A common word keeps it: the span's newest rows are
            # walked backwards until enough match.
            rowid = "(m.id + 0)"
        bound, bound_params = f" AND {rowid} BETWEEN %s AND %s", list(span)
    if len(ids) <= MAX_LISTED_SESSIONS or scope.sessions is None:
        return f"AND {column} IN {_in_list(tuple(ids))}{bound}", [*ids, *bound_params]
    sql, params = _sessions_sql(scope.sessions)
    return f"AND {column} IN ({sql})", list(params)


def _id_span(ids: list[int]) -> tuple[int, int] | None:
    """The lowest and highest message id of the sessions `ids` (messages are appended in id
    order), from two probes of the (session, seq) index per session; None when they hold none."""
    if not ids:
        return None
    first = "SELECT id FROM sessions_app_message WHERE session_id = s.id ORDER BY seq {} LIMIT 1"
    sql = (
        f"SELECT MIN(({first.format('ASC')})), MAX(({first.format('DESC')})) "
        f"FROM sessions_app_session s WHERE s.id IN {_in_list(tuple(ids))}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, ids)
        low, high = cursor.fetchone()
    return None if low is None else (low, high)


def _few_matches(query_sql: str, query_params: list) -> bool:
    """Whether the tsquery matches at most FEW_MATCHES messages in the whole table: a count
    that stops at FEW_MATCHES + 1 (a few ms for a rare word or a common one)."""
    sql = (
        f"SELECT COUNT(*) FROM (SELECT 1 FROM sessions_app_message m "
        f"WHERE {_PG_VECTOR} @@ {query_sql} LIMIT %s) AS matches"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*query_params, FEW_MATCHES + 1])
        (count,) = cursor.fetchone()
    return count <= FEW_MATCHES


def _holds_a_deep_session(ids: list[int]) -> bool:
    """Whether the sessions `ids` hold more than DEEP_SCOPE_MESSAGES messages between them."""
    if len(ids) > MAX_LISTED_SESSIONS:
        return False  # a subquery: the planner reads it as a set, not by these ids
    total = Session.objects.filter(id__in=ids).aggregate(total=Sum("last_seq"))["total"]
    return (total or 0) > DEEP_SCOPE_MESSAGES


def find(
    tokens: list[str], *, scope: Scope, roles: tuple[str, ...], limit: int
) -> tuple[list[Hit], bool]:
    """The best `limit` messages in `scope` with `roles` matching every token, best first, and
    whether more matches were left out (past `limit`, or past MAX_BACKEND_HITS)."""
    if not searchable(tokens):
        return [], False
    pg_query = _pg_tsquery(tokens) if connection.vendor == "postgresql" else None
    where = _scope_sql(scope, pg_query)
    if where is None:
        return [], False
    scope_sql, scope_params = where
    if pg_query is not None:
        query_sql, query_params = pg_query
        hits_sql = _PG_HITS.format(
            vector=_PG_VECTOR,
            query=query_sql,
            roles=_in_list(roles),
            scope=scope_sql,
        )
        params = [*query_params, *query_params, *roles, *scope_params, MAX_BACKEND_HITS + 1]
        content = "m.content::text, m.provenance::text"
    else:
        hits_sql = _SQLITE_HITS.format(roles=_in_list(roles), scope=scope_sql)
        params = [fts5_query(tokens), *roles, *scope_params, MAX_BACKEND_HITS + 1]
        content = "m.content, m.provenance"
    with connection.cursor() as cursor:
        cursor.execute(hits_sql + _RANKED.format(content=content), [*params, limit + 1])
        rows = cursor.fetchall()
    # `found` counts the matches read, one past the cap when there were more than it.
    found = rows[0][-1] if rows else 0
    hits = [_hit(row[:-1]) for row in rows[:limit]]
    return hits, found > limit or found > MAX_BACKEND_HITS


def cold_in(scope: Scope) -> int:
    """How many sessions of `scope` have a cold transcript (9.6: search excludes them and says
    how many, archivedTranscriptsExcluded). Their rows left the database, so `find` cannot
    match them; one count by the partial index on cold_at."""
    cold = Session.objects.filter(cold_at__isnull=False)
    if scope.ids is not None:
        return cold.filter(pk__in=scope.ids).count() if scope.ids else 0
    if scope.sessions is not None:
        return scope.sessions.filter(cold_at__isnull=False).count()
    return cold.exclude(key__in=scope.unlisted).count()


def _hit(row: tuple) -> Hit:
    pk, session_pk, key, session_id, seq, role, timestamp, score, content, provenance = row
    # The JSON columns come as text on both backends (cast on PostgreSQL).
    content, provenance = _json(content), _json(provenance)
    return Hit(
        pk,
        session_pk,
        key,
        session_id,
        seq,
        role,
        timestamp,
        float(score or 0),
        content,
        provenance,
    )


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


# --- snippets -------------------------------------------------------------------------------


def fold(word: str) -> str:
    """A word as the index compares it: case-folded, diacritics removed."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def snippet(content: Any, tokens: list[str], *, max_chars: int) -> str:
    """About SNIPPET_TOKENS words around the first match, with ` … ` where text was cut,
    redacted, and at most `max_chars` characters plus `…`.

    The whole text is redacted before it is cut, so a secret the excerpt would split is still
    recognised; the excerpt is redacted again in case cutting made something look new."""
    text, _ = sanitize.redact(sanitize.message_text(content))
    words = list(_WORD.finditer(text))
    if not words:
        return _cap(text.strip(), max_chars)
    wanted = {fold(w) for t in tokens for w in _WORD.findall(t)}
    first = next((i for i, w in enumerate(words) if fold(w.group()) in wanted), 0)
    start = max(0, first - SNIPPET_LEAD)
    end = min(len(words), start + SNIPPET_TOKENS)
    begin_char = 0 if start == 0 else words[start].start()
    end_char = len(text) if end == len(words) else words[end - 1].end()
    excerpt = " ".join(text[begin_char:end_char].split())
    if start > 0:
        excerpt = SNIPPET_ELLIPSIS.lstrip() + excerpt
    if end < len(words):
        excerpt += SNIPPET_ELLIPSIS.rstrip()
    excerpt, _ = sanitize.redact(excerpt)
    return _cap(excerpt, max_chars)


def highlight(text: str, tokens: list[str]) -> list[tuple[str, bool]]:
    """`text` cut into (part, matched) pieces, the words the search matched marked: each word
    whose folded form is one of the tokens' words, as snippet() finds the first."""
    wanted = {fold(w) for t in tokens for w in _WORD.findall(t)}
    parts: list[tuple[str, bool]] = []
    at = 0
    for word in _WORD.finditer(text):
        if fold(word.group()) in wanted:
            if word.start() > at:
                parts.append((text[at : word.start()], False))
            parts.append((word.group(), True))
            at = word.end()
    if at < len(text):
        parts.append((text[at:], False))
    return parts


def _cap(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + "…"
