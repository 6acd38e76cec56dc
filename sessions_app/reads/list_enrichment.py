"""The transcript-derived fields of sessions_list rows (9.6 §4.1): `derivedTitle` (from the
first user message, with includeDerivedTitles) and `lastMessagePreview` (the newest visible user
or assistant text, with includeLastMessage).

Like transcript.last_messages(), each is one query for the whole page: an OR of short `seq`
ranges on the (session, seq) index, so a giant transcript costs what a small one does. The
title looks at the first TITLE_SCAN rows of a transcript, the preview at the last PREVIEW_SCAN;
a session whose first user message or newest visible text lies beyond them gets no field.
9.6 enriches at most ENRICH_ROWS rows of a page; so does sessions_list (the MCP bridge's
conversations_list asks for the conversations it returns). Both texts are redacted. A cold
transcript (cold_storage.py) is read from its file, not restored, as the list's messages are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import reduce
from itertools import chain
from operator import or_
from typing import Any

from django.conf import settings
from django.db.models import Q

from ..lib import sanitize
from ..models import Message, Session
from ..rows import SessionRow
from ..storage import cold_storage
from ..transcript import READ_COLUMNS, MessageRow, range_rows
from . import internal_rows
from .history_read import is_hidden

ENRICH_ROWS = 100
TITLE_SCAN = 20
PREVIEW_SCAN = 20
TITLE_CHARS = 60
PREVIEW_CHARS = 160
# What is read of each session: a SessionRow (a list page) or a Session.
Listed = SessionRow | Session


def derived_titles(sessions: Sequence[Listed]) -> dict[int, str]:
    """Session id → its title: the first user message's text, on one line, cut at a word."""
    wanted = [s for s in sessions if s.last_seq > 0]
    ranges = [(s.pk, None, TITLE_SCAN) for s in wanted]
    titles: dict[int, str] = {}
    seen: set[int] = set()
    rows = _rows(ranges, newest_first=False, seen=seen)
    for session_id, row in chain(rows, _cold_rows(wanted, seen, first=TITLE_SCAN)):
        if session_id not in titles and row.role == "user" and not is_hidden(row):
            text = visible_text(row.content)
            if text:
                titles[session_id] = shorten(text, TITLE_CHARS)
    return titles


def last_previews(sessions: Sequence[Listed]) -> dict[int, str]:
    """Session id → the newest user or assistant text that history shows and that is not an
    internal row (no tool, system, silent or prompt rows), on one line."""
    wanted = [s for s in sessions if s.last_seq > 0]
    ranges = [(s.pk, s.last_seq - PREVIEW_SCAN, None) for s in wanted]
    previews: dict[int, str] = {}
    seen: set[int] = set()
    rows = _rows(ranges, newest_first=True, seen=seen)
    for session_id, row in chain(rows, _cold_rows(wanted, seen, last=PREVIEW_SCAN)):
        if session_id in previews or row.role not in ("user", "assistant"):
            continue
        # Not a completion prompt, an announce step or a silent reply (internal_rows.py).
        if internal_rows.of_row(row) is not None:
            continue
        text = visible_text(row.content)
        if text:
            previews[session_id] = shorten(text, PREVIEW_CHARS)
    return previews


def _rows(
    ranges: Sequence[tuple[int, int | None, int | None]], *, newest_first: bool, seen: set[int]
) -> Iterator[tuple[int, Any]]:
    """(session id, MessageRow) of the user and assistant rows in `ranges` ((session id, above,
    up_to) seq bounds); adds each session id to `seen`. One statement: transcript.range_rows, or
    on the plain path (settings.OPENCLAW_FAST_ROWS off) the same statement built by the ORM."""
    if not ranges:
        return
    if settings.OPENCLAW_FAST_ROWS:
        for session_id, row in range_rows(
            ranges, roles=("user", "assistant"), newest_first=newest_first
        ):
            seen.add(session_id)
            yield session_id, row
        return
    order = "-seq" if newest_first else "seq"
    terms = []
    for pk, above, up_to in ranges:
        term = Q(session_id=pk)
        if above is not None:
            term &= Q(seq__gt=above)
        if up_to is not None:
            term &= Q(seq__lte=up_to)
        terms.append(term)
    values = (
        Message.objects.filter(reduce(or_, terms))
        .filter(role__in=("user", "assistant"))
        .order_by("session_id", order)
        .values_list("session_id", *READ_COLUMNS)
    )
    new = tuple.__new__
    for v in values:
        seen.add(v[0])
        yield v[0], new(MessageRow, v[1:])


def _cold_rows(
    wanted: Sequence[Listed], seen: set[int], *, first: int = 0, last: int = 0
) -> Iterator[tuple[int, Any]]:
    """The sessions with messages but no rows (cold storage), from their files, in the order
    the caller reads (Message objects have the fields a MessageRow has)."""
    empty = [s for s in wanted if s.pk not in seen]
    for pk, messages in cold_storage.listed_messages(empty, first=first, last=last):
        yield from ((pk, m) for m in (messages if first else reversed(messages)))


def visible_text(content: Any) -> str:
    """The text blocks of a message (a string, or the text blocks of a block list), joined."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        str(block.get("text") or "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n".join(parts).strip()


def shorten(text: str, limit: int) -> str:
    """One line, redacted, at most `limit` characters, cut at a word with `…`."""
    line = " ".join(sanitize.redact(text)[0].split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"
