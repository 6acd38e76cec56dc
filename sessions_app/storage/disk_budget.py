"""`maxDiskBytes` / `highWaterBytes` (9.6 §6.1) for this service: how much an agent's sessions
take, and which archived sessions go, oldest first, to bring an agent back under its budget.

9.6 budgets each agent's SQLite file physically and vacuums it. Here every agent shares one
database, and its files do not shrink when rows go (PostgreSQL's never on DELETE, SQLite's only
on VACUUM), so a physical measure would go on finding the store too big and delete ever more.
What is measured instead is what the agent's transcripts take: each message's stored JSON
(content and extra: pg_column_size on PostgreSQL, the byte length of the JSON text on SQLite)
plus MESSAGE_OVERHEAD_BYTES for its row and index entries, plus the agent's cold files on disk.
It falls exactly as sessions are deleted, on both backends; it is an estimate of the database's
share, not its file size.

Tiers, as 9.6's that apply here: (1) the oldest reset/deleted archives, then (2) the oldest
sessions archived for `active-session-cap`. Manual, age-retention and other archives, and live
sessions, are never deleted for disk. The pass stops once the agent is at `highWaterBytes`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.db.models import Func, IntegerField, Sum, Value
from django.db.models.functions import Coalesce

from ..models import Message, Session
from .cold_storage import cold_dir

KIB = 1024
UNITS = {
    "": 1,
    "b": 1,
    **{u: KIB for u in ("k", "kb", "kib")},
    **{u: KIB**2 for u in ("m", "mb", "mib")},
    **{u: KIB**3 for u in ("g", "gb", "gib")},
    **{u: KIB**4 for u in ("t", "tb", "tib")},
}
_SIZE = re.compile(r"^(\d{1,15}(?:\.\d{1,6})?)\s*([a-z]*)$")
# A message row's columns besides its JSON, and its (session, seq) and search index entries.
MESSAGE_OVERHEAD_BYTES = 100
HIGH_WATER_SHARE = 0.8  # 9.6: highWaterBytes defaults to 80% of maxDiskBytes
IN_CHUNK = 500


def parse_size(value: str | int) -> int:
    """Bytes from 10737418240, "10gb", "500 MB", "1.5g" (1024-based units). Raises ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(value)
        return value
    if not isinstance(value, str):
        raise ValueError(value)
    match = _SIZE.match(value.strip().lower())
    if not match or match.group(2) not in UNITS:
        raise ValueError(value)
    return int(float(match.group(1)) * UNITS[match.group(2)])


class StoredBytes(Func):
    """The stored size of a JSON column's value (0 for NULL)."""

    output_field = IntegerField()

    # Func's signature; the template is this function's own.
    def as_sql(  # SQLite: the JSON text's bytes
        self, compiler, connection, function=None, template=None, arg_joiner=None, **extra
    ):
        return super().as_sql(
            compiler, connection, template="COALESCE(LENGTH(CAST(%(expressions)s AS BLOB)), 0)"
        )

    def as_postgresql(self, compiler, connection, **extra):
        return super().as_sql(
            compiler, connection, template="COALESCE(pg_column_size(%(expressions)s), 0)"
        )


def _message_bytes():
    return Coalesce(
        Sum(StoredBytes("content") + StoredBytes("extra") + Value(MESSAGE_OVERHEAD_BYTES)),
        Value(0),
    )


def _cold_bytes(rows: Iterable[tuple[Any, str]]) -> dict[Any, int]:
    root = cold_dir()
    sizes: dict[Any, int] = {}
    for owner, name in rows:
        try:
            size = (root / name).stat().st_size
        except OSError:
            size = 0  # a lost file takes no room (readers report it: cold_storage)
        sizes[owner] = sizes.get(owner, 0) + size
    return sizes


def usage_by_agent(agent_ids: Iterable[str]) -> dict[str, int]:
    """Each agent's transcripts: rows in the database and cold files."""
    return _stored_bytes(sorted(set(agent_ids)), message_key="session__agent_id", key="agent_id")


def session_bytes(pks: Iterable[int]) -> dict[int, int]:
    """What deleting each of these sessions frees: its messages' rows and its cold file."""
    return _stored_bytes(list(pks), message_key="session_id", key="pk")


def _stored_bytes(keys: list, *, message_key: str, key: str) -> dict:
    """The bytes of the transcripts of the sessions whose `key` (a Session field) is one of
    `keys`, per key: their messages' rows (grouped by `message_key`, the same field seen from
    Message) plus their cold files."""
    sizes = dict.fromkeys(keys, 0)
    for start in range(0, len(keys), IN_CHUNK):
        chunk = keys[start : start + IN_CHUNK]
        rows = (
            Message.objects.filter(**{f"{message_key}__in": chunk})
            .values(message_key)
            .annotate(size=_message_bytes())
            .values_list(message_key, "size")
            .order_by()
        )
        for owner, size in rows:
            sizes[owner] += int(size)
        cold = Session.objects.filter(**{f"{key}__in": chunk}).exclude(cold_file="")
        for owner, size in _cold_bytes(cold.values_list(key, "cold_file")).items():
            sizes[owner] += size
    return sizes


def target_bytes(max_bytes: int, high_water: int | None) -> int:
    """Where a pass stops: highWaterBytes (0 or unset: 80% of maxDiskBytes), at most the max."""
    return min(high_water or int(max_bytes * HIGH_WATER_SHARE), max_bytes)


def victims(
    *,
    max_bytes: int,
    high_water: int | None,
    candidates: list[tuple[int, str]],
    leaving: list[tuple[int, str]],
) -> tuple[list[int], dict[str, dict[str, int]]]:
    """The sessions to delete, in `candidates` order (tier by tier, oldest first), per agent
    until it is at its target; `leaving` go anyway (resetArchiveRetention) and count as freed.
    Also, per agent measured: {bytes, afterBytes}. Measures only agents with candidates."""
    agents = {agent for _, agent in candidates}
    if not agents:
        return [], {}
    usage = usage_by_agent(agents)
    going = [(pk, agent) for pk, agent in leaving if agent in agents]
    sizes = session_bytes([pk for pk, _ in candidates] + [pk for pk, _ in going])
    left = dict(usage)
    for pk, agent in going:
        left[agent] -= sizes[pk]
    target = target_bytes(max_bytes, high_water)
    chosen: list[int] = []
    over = {agent for agent in agents if left[agent] > max_bytes}
    for pk, agent in candidates:
        if agent in over and left[agent] > target:
            chosen.append(pk)
            left[agent] -= sizes[pk]
    report = {agent: {"bytes": usage[agent], "afterBytes": left[agent]} for agent in sorted(agents)}
    return chosen, report
