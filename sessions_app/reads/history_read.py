"""What sessions_history reads as OpenClaw 2026.9.6 shows it (9.6 §4.2): raw-position paging,
anchored reads around a message, hidden control rows, inter-session rows as the sender's words,
`__openclaw` metadata per message, and the pending inputs not yet in the transcript.

Hidden rows are decided in Python on rows read by seq (they are rare: a page is one query, plus
one more for each batch that was all hidden), so every read stays an index range scan on
(session, seq).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from openclaw_common import keys

from .. import transcript
from ..lib import rawsql
from ..models import Run, Session
from ..runs.prompts import ANNOUNCE_STEP_MESSAGE
from ..runs.tokens import is_silent
from ..storage import cold_storage
from ..transcript import TOOL_RESULT, MessageRow, read_rows

HIDDEN_TOKENS = ("REPLY_SKIP", "ANNOUNCE_SKIP")
# The completion-event prompt a parent's completion turn starts with (9.6 §1.3).
COMPLETION_TOOLS = frozenset({"subagent_announce", "subagent_settle"})
PENDING_MAX_ITEMS = 20
PENDING_MAX_BYTES = 4096
PENDING_OMITTED = "[Input omitted; request limit: 1]"
# Runs whose input is appended when they start (serial runs) hold it here until then.
PENDING_KINDS = ("send", "ingest", "completion")
# A serial run that ended before it started (stopped, or failed or timed out unstarted: a worker
# lost, a deadline passed) never appended its input: cancelled or interrupted, never run again.
PENDING_STATES = {
    Run.QUEUED: "queued",
    Run.ABORTED: "cancelled",
    Run.ERROR: "interrupted",
    Run.TIMEOUT: "interrupted",
}


# Every history call reads them, and nearly always finds none: plain SQL (rawsql says why).
_PENDING_COLUMNS = rawsql.ModelColumns(Run, "r", ("id", "status", "created_at", "message"))
_PENDING_SQL = (
    f"SELECT {_PENDING_COLUMNS.sql} FROM {rawsql.table(Run)} r"
    " WHERE r.session_id = %s AND r.serial = %s AND r.input_seq IS NULL"
    f" AND r.kind IN ({', '.join(['%s'] * len(PENDING_KINDS))})"
    f" AND r.status IN ({', '.join(['%s'] * len(PENDING_STATES))})"
    " ORDER BY r.created_at, r.id"
)


def message_id(seq: int) -> str:
    """A message's id: its transcript entry id as the JSONL export writes it (8 hex digits)."""
    return f"{seq:08x}"


def seq_of_message_id(value: str) -> int | None:
    """The seq a message id names, or None when it cannot name one."""
    text = value.strip().lower()
    if not 1 <= len(text) <= 16 or any(c not in "0123456789abcdef" for c in text):
        return None
    seq = int(text, 16)
    return seq if seq >= 1 else None


def text_of(content: Any) -> str | None:
    """The text of a message made only of text (a string or text blocks), else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        parts = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "text":
                return None
            parts.append(str(block.get("text") or ""))
        return "\n".join(parts)
    return None


def is_hidden(row: MessageRow) -> bool:
    """Rows 9.6 leaves out of history in both includeTools modes: an assistant row that is only
    REPLY_SKIP or ANNOUNCE_SKIP, the `Agent-to-agent announce step.` prompt, and the
    completion-event prompt of a parent's completion turn."""
    return hidden(row.role, row.content, row.provenance)


def hidden(role: str, content: Any, provenance: dict | None) -> bool:
    """is_hidden() for a message read some other way (sessions_search's hits)."""
    text = text_of(content)
    if role == "assistant":
        return text is not None and any(is_silent(text, token) for token in HIDDEN_TOKENS)
    if role != "user":
        return False
    if text is not None and text.strip() == ANNOUNCE_STEP_MESSAGE:
        return True
    provenance = provenance or {}
    return (
        provenance.get("kind") == "inter_session"
        and provenance.get("sourceTool") in COMPLETION_TOOLS
    )


def shown(row: MessageRow, *, include_tools: bool) -> bool:
    return (include_tools or row.role != TOOL_RESULT) and not is_hidden(row)


def render(row: MessageRow) -> dict[str, Any]:
    """The payload history returns for one row: `__openclaw` metadata, and an inter-session
    input (a sessions_send ping, a forwarded reply) as the sending session's words."""
    data = row.payload()
    data["__openclaw"] = {
        "id": message_id(row.seq),
        "seq": row.seq,
        "recordTimestampMs": row.timestamp,
        "transcriptPosition": {"source": "transcript", "rawSeq": row.seq},
    }
    provenance = row.provenance or {}
    if (
        row.role == "user"
        and provenance.get("kind") == "inter_session"
        and provenance.get("sourceTool") == "sessions_send"
        and isinstance(provenance.get("sourceSessionKey"), str)
    ):
        source = provenance["sourceSessionKey"]
        agent_id = keys.agent_id_of(source)
        data["role"] = "assistant"
        text = text_of(row.content)
        if text is not None:
            data["content"] = text
        data["senderLabel"] = f"Forwarded from {agent_id}"
        data["senderSession"] = {"sessionKey": source, "agentId": agent_id}
    return data


def _read(session: Session, *, past: int, want: int, include_tools: bool, newer: bool) -> list:
    """Up to `want` shown rows beyond seq `past` (not included): the newer ones oldest first,
    or the older ones newest first. Reads on, `want` rows a query, past hidden rows."""
    found: list[MessageRow] = []
    while len(found) < want and (past < session.last_seq if newer else past > 1):
        beyond = {"above": past} if newer else {"below": past}
        rows = read_rows(
            session.pk, **beyond, include_tools=include_tools, newest_first=not newer, limit=want
        )
        found += [r for r in rows if not is_hidden(r)]
        if len(rows) < want:
            break
        past = rows[-1].seq
    return found[:want]


@dataclass
class Window:
    rows: list[MessageRow]  # oldest first
    has_more: bool  # shown rows older than the oldest one read exist


def page(session: Session, *, limit: int, offset: int, include_tools: bool) -> Window:
    """The newest `limit` shown rows among the raw positions left after skipping the newest
    `offset` (hidden and toolResult rows count as positions, 9.6 §4.2)."""
    below = session.last_seq - offset + 1
    rows = _read(session, past=below, want=limit + 1, include_tools=include_tools, newer=False)
    has_more = len(rows) > limit
    rows = rows[:limit]
    rows.reverse()
    return Window(rows, has_more)


def around(session: Session, seq: int, *, limit: int, include_tools: bool) -> list[MessageRow]:
    """Up to `limit` shown rows around the message at `seq`, growing alternately older and newer
    (9.6 §4.2). Empty when there is no such message or it is not shown."""
    anchor = read_rows(session.pk, below=seq + 1, above=seq - 1, limit=1)
    if not anchor or not shown(anchor[0], include_tools=include_tools):
        return []
    older = _read(session, past=seq, want=limit - 1, include_tools=include_tools, newer=False)
    newer = _read(session, past=seq, want=limit - 1, include_tools=include_tools, newer=True)
    before: list[MessageRow] = []
    after: list[MessageRow] = []
    while 1 + len(before) + len(after) < limit and (older or newer):
        if older:
            before.append(older.pop(0))
        if newer and 1 + len(before) + len(after) < limit:
            after.append(newer.pop(0))
    before.reverse()
    return [*before, anchor[0], *after]


def next_offset(*, offset: int, total: int, oldest_seq: int | None) -> int:
    """9.6's `nextOffset`: raw positions from the newest up to and including the oldest row
    returned, and at least one further than `offset`."""
    if oldest_seq is None:
        return offset + 1
    return max(offset + 1, total - oldest_seq + 1)


def pending_inputs(session: Session, *, before: int | None = None) -> dict[str, Any]:
    """Admitted inputs that are not in the transcript (9.6 §4.2 `pendingInputs`): runs whose
    input waits to be appended when they start (serial runs, queued), or never will be
    (cancelled or interrupted before they started). Newest first, at most 20 items sharing a 4,096-byte budget; `nextBefore`
    pages older ones. Positions count from the oldest (1)."""
    runs = [
        _PENDING_COLUMNS.values(row)
        for row in rawsql.fetchall(
            _PENDING_SQL, [session.pk, True, *PENDING_KINDS, *list(PENDING_STATES)]
        )
    ]
    total = len(runs)
    end = total if before is None else max(0, min(before - 1, total))
    items: list[dict[str, Any]] = []
    used = 0
    position = end
    while position > 0 and len(items) < PENDING_MAX_ITEMS:
        run_id, status, created_at, text = runs[position - 1]
        item = {
            "id": str(run_id),
            "state": PENDING_STATES[status],
            "acceptedAt": int(created_at.timestamp() * 1000),
            "message": {"role": "user", "content": text},
        }
        size = len(orjson.dumps(item))
        if size > PENDING_MAX_BYTES:
            item["message"] = {"role": "user", "content": PENDING_OMITTED}
            size = len(orjson.dumps(item))
        if items and used + size > PENDING_MAX_BYTES:
            break
        items.append(item)
        used += size
        position -= 1
    result: dict[str, Any] = {"items": items, "total": total}
    if position > 0:
        result["nextBefore"] = position + 1
    return result


# The most messages one page reads (sessions_history's limit, the HTTP history endpoint's).
MAX_LIMIT = 1000


def history_page(
    session: Session,
    *,
    limit: int,
    include_tools: bool,
    offset: int = 0,
    before_seq: int | None = None,
) -> dict:
    """One bounded page by raw position or before a seq, for the HTTP history endpoint:
    {messages, flags, hasMore, kept, firstSeq}. Access is the caller's job."""
    cold_storage.ensure_hot(session)
    rows, has_more = transcript.read_page(
        session, limit=limit, include_tools=include_tools, offset=offset, before_seq=before_seq
    )
    bounded = transcript.bound(rows)
    kept_rows = rows[len(rows) - bounded.kept_from_source :] if rows else []
    return {
        "messages": bounded.messages,
        "flags": bounded.flags(),
        # Messages the byte cap dropped are still to be read: the next page starts at them.
        "hasMore": has_more or bounded.kept_from_source < len(rows),
        "kept": bounded.kept_from_source,
        "firstSeq": transcript.seq_of(kept_rows[0][0]) if kept_rows else None,
    }
