"""Cold storage (9.6 §6.1 `coldStorage`): an idle session's transcript rows move to a compressed
JSONL file under settings.COLD_STORAGE_DIR, and come back byte for byte on restore.

The file is OpenClaw's transcript layout (transcript.export_jsonl, raw), readable with
`zcat`/`zstdcat`, plus what the rows hold beyond it: a `__cold` object on the header (the last
seq moved) and a `__row` object on each message line (seq, redactNeeded, createdAt).

Crash safety, in this order: the file is written under a temporary name, fsynced and renamed
(and the directory fsynced); then ONE transaction marks the session cold, on condition that its
last_seq is still the one written, and deletes exactly the rows written. A worker killed at any
point leaves either the session hot with every row (and maybe a file the next pass replaces) or
the session cold with its file: never rows half removed. A restore inserts the rows and clears
the mark in one transaction and removes the file after commit.

Reading a cold transcript (ensure_hot, the one function every reader calls): the rows are
restored synchronously, under the session's row lock, before the read, so a history, an export,
the browser or an agent's turn gets the whole transcript in one answer; the session then stays
hot for 24 h (`hot_until`). 9.6 restores in the background instead; we do not, because no 9.6
reader has a "restoring, retry" answer: an agent given an empty or partial history acts on it.
A missing or unreadable file is TranscriptUnavailable (503, the file named), never an empty
transcript. Lists and sessions.preview leave transcripts cold (as 9.6): a list's last messages
are read from the file (listed_messages), a preview says `status: "cold"`.

Compression: zstd (`.jsonl.zst`) when the `zstandard` package is installed, else gzip
(`.jsonl.gz`, standard library). A restore reads either, by the file's suffix.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from openclaw_common.errors import Refusal

from ..models import Message, Session
from . import jsonl_format

try:  # optional: zstd when available (9.6 writes cold/*.jsonl.zst)
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None

WORKER_BATCH = 128  # transcripts per scheduled pass (9.6's worker batch)
# 9.6 keeps transcripts over 64 MiB in the database; we bound by message count, which we know
# without reading them.
MAX_COLD_MESSAGES = 200_000
READ_BATCH = 1000
_KNOWN = frozenset(
    {"role", "content", "toolCallId", "toolName", "usage", "provenance", "timestamp"}
)


# A thawed (or read) transcript stays in the database this long (9.6: "then hot for 24 h").
HOT_FOR = timedelta(hours=24)
# The shortest idle time after which the schedule freezes (retention's smallest afterDays).
MIN_IDLE = timedelta(days=1)
# How long a read may still be going on after ensure_hot returned; the session cannot be frozen
# under it meanwhile (a long export streams for minutes, not hours).
READ_MARGIN = timedelta(hours=1)

logger = logging.getLogger(__name__)


class ColdStorageError(Exception):
    """A cold file is missing or unreadable: the restore fails explicitly (as in 9.6)."""

    def __init__(self, message: str, *, name: str = "", reason: str = "unreadable"):
        super().__init__(message)
        self.name, self.reason = name, reason


class TranscriptUnavailable(Refusal):
    """A reader asked for a cold transcript whose file is missing or unreadable. 503: the
    transcript exists but cannot be served until an operator puts its file back."""

    http_status = 503
    error_type = "transcript_unavailable"
    # Retry-After: not the database's second; the file comes back only when an operator puts
    # it back, so clients asking again every second would only add load.
    retry_after = 60


def cold_dir() -> Path:
    return Path(settings.COLD_STORAGE_DIR)


def _suffix() -> str:
    return ".jsonl.zst" if zstandard is not None else ".jsonl.gz"


@contextlib.contextmanager
def _open_read(path: Path) -> Iterator[io.BufferedIOBase]:
    if path.name.endswith(".zst"):
        if zstandard is None:
            raise ColdStorageError(f"{path.name} needs the zstandard package")
        with open(path, "rb") as raw:
            yield io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw))
    else:
        with gzip.open(path, "rb") as f:
            yield f


# --- moving a transcript out ----------------------------------------------------------------


def _lines(session: Session, last_seq: int) -> Iterator[bytes]:
    header = orjson.loads(jsonl_format.export_header(session))
    header["__cold"] = {"lastSeq": last_seq}
    yield orjson.dumps(header) + b"\n"
    after, parent = 0, None
    width = len(Message.TRANSCRIPT_COLUMNS)
    while True:
        rows = list(
            Message.objects.filter(session_id=session.pk, seq__gt=after, seq__lte=last_seq)
            .order_by("seq")
            .values_list(*Message.TRANSCRIPT_COLUMNS, "redact_needed", "created_at")[:READ_BATCH]
        )
        if not rows:
            return
        for row in rows:
            seq, redact_needed, created_at = row[0], row[width], row[width + 1]
            entry_id = f"{seq:08x}"
            line = {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": jsonl_format.iso(row[Message.TRANSCRIPT_COLUMNS.index("timestamp")]),
                "message": Message.transcript_from_values(*row[:width]),
                "__row": {
                    "seq": seq,
                    "redactNeeded": redact_needed,
                    "createdAt": created_at.isoformat(),
                },
            }
            parent = entry_id
            yield orjson.dumps(line) + b"\n"
        after = rows[-1][0]


def _write_file(session: Session, last_seq: int) -> str:
    """Write, fsync and rename the session's cold file; its name."""
    directory = cold_dir()
    directory.mkdir(parents=True, exist_ok=True)
    # A name of its own per attempt: an attempt that loses the race (another sweep moved the
    # session first) removes only its own file, never the one the session now points at.
    name = f"{session.session_id}.{secrets.token_hex(4)}{_suffix()}"
    final, temporary = directory / name, directory / f".{name}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as raw:
            writer = (
                zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False)
                if zstandard is not None
                else gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
            )
            for line in _lines(session, last_seq):
                writer.write(line)
            writer.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temporary, final)
        _fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    return name


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _freezable(idle_before: datetime | None) -> Q:
    """Hot, not kept hot (hot_until), and idle since before `idle_before` when given. Checked
    again in the transaction that marks it cold: a read may have thawed or touched it since."""
    now = timezone.now()
    condition = Q(cold_at__isnull=True) & (Q(hot_until__isnull=True) | Q(hot_until__lte=now))
    if idle_before is not None:
        condition &= Q(updated_at__lt=int(idle_before.timestamp() * 1000))
    return condition


def freeze(session_pk: int, *, idle_before: datetime | None = None) -> bool:
    """Move one session's transcript to cold storage. False when there is nothing to move, it
    is too long, it is kept hot (hot_until), or it changed meanwhile (a message arrived, a
    reader thawed or touched it). The schedule passes `idle_before`; an operator's direct call
    may leave it out."""
    session = Session.objects.filter(_freezable(idle_before), pk=session_pk).first()
    if session is None or not 0 < session.last_seq <= MAX_COLD_MESSAGES:
        return False
    last_seq = session.last_seq
    name = _write_file(session, last_seq)
    with transaction.atomic():
        marked = Session.objects.filter(
            _freezable(idle_before), pk=session.pk, last_seq=last_seq
        ).update(cold_at=timezone.now(), cold_file=name)
        if marked:
            Message.objects.filter(session_id=session.pk, seq__lte=last_seq).delete()
    if not marked:
        remove_file(name)
    return bool(marked)


def freeze_many(
    pks: list[int],
    *,
    progress: Callable[[str, int, int], None] | None = None,
    deadline: float | None = None,
    idle_before: datetime | None = None,
) -> int:
    """freeze() each; stops early at `deadline` (time.monotonic()), which a scheduled pass sets
    to stay inside django-q2's task timeout: the next pass goes on where it stopped."""
    moved = 0
    for done, pk in enumerate(pks, start=1):
        if deadline is not None and time.monotonic() > deadline:
            break
        moved += freeze(pk, idle_before=idle_before)
        if progress:
            progress("cold storage", done, len(pks))
    return moved


def remove_orphans(*, older_than_seconds: float = 3600) -> int:
    """Cold files no session points at, older than an hour: a worker killed between a file's
    rename and its commit leaves one (its rows stayed in the database)."""
    directory, removed = cold_dir(), 0
    if not directory.is_dir():
        return 0
    used = set(Session.objects.exclude(cold_file="").values_list("cold_file", flat=True))
    cutoff = time.time() - older_than_seconds
    for path in directory.glob("*.jsonl.*"):
        if path.name in used or path.name.startswith("."):
            continue
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed


def remove_stale_temporaries(*, older_than_seconds: float = 3600) -> int:
    """Temporary files a killed worker left (`.<name>.tmp-<pid>`): never referenced by a row."""
    directory, removed = cold_dir(), 0
    if not directory.is_dir():
        return 0
    cutoff = time.time() - older_than_seconds
    for path in directory.glob(".*.tmp-*"):
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed


def remove_file(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (cold_dir() / name).unlink()


# --- bringing it back -----------------------------------------------------------------------


def _message_of(line: dict[str, Any], session_pk: int) -> Message:
    data, row = line["message"], line["__row"]
    return Message(
        session_id=session_pk,
        seq=row["seq"],
        role=data["role"],
        content=data.get("content"),
        provenance=data.get("provenance"),
        tool_call_id=data.get("toolCallId", ""),
        tool_name=data.get("toolName", ""),
        usage=data.get("usage"),
        timestamp=data["timestamp"],
        extra={k: v for k, v in data.items() if k not in _KNOWN},
        redact_needed=row["redactNeeded"],
        created_at=datetime.fromisoformat(row["createdAt"]),
    )


_UNREADABLE: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    TypeError,
    orjson.JSONDecodeError,
) + ((zstandard.ZstdError,) if zstandard is not None else ())


def read_messages(name: str, session_pk: int) -> Iterator[Message]:
    path = cold_dir() / name
    if not path.is_file():
        raise ColdStorageError(f"cold transcript missing: {path}", name=name, reason="missing")
    try:
        with _open_read(path) as f:
            for number, raw in enumerate(f):
                line = orjson.loads(raw)
                if number and line.get("type") == "message":
                    yield _message_of(line, session_pk)
    except _UNREADABLE as exc:
        raise ColdStorageError(f"cold transcript unreadable: {path} ({exc})", name=name) from exc


def export_lines(name: str) -> Iterator[str]:
    """The cold file's message lines as transcript.export_jsonl(raw=True) writes them (the
    `__row` bookkeeping left out): `sessions export` reads a cold transcript without restoring."""
    path = cold_dir() / name
    if not path.is_file():
        raise ColdStorageError(f"cold transcript missing: {path}", name=name, reason="missing")
    with _open_read(path) as f:
        for number, raw in enumerate(f):
            line = orjson.loads(raw)
            if number and line.get("type") == "message":
                line.pop("__row", None)
                yield orjson.dumps(line).decode() + "\n"


def thaw(session: Session) -> int:
    """Restore a cold session's transcript rows under its row lock, and keep it hot for HOT_FOR;
    the number restored (0: it was not cold). The file named by the locked row is the one read,
    never the caller's copy (it may have been thawed and frozen again since it was loaded).
    ColdStorageError when the file is missing or unreadable: nothing is changed then."""
    restored = 0
    with transaction.atomic():
        locked = (
            Session.objects.select_for_update()
            .filter(pk=session.pk)
            .values_list("cold_file", flat=True)
            .first()
        )
        if locked is None:  # deleted meanwhile
            return 0
        hot_until = timezone.now() + HOT_FOR
        if locked:
            batch: list[Message] = []
            for message in read_messages(locked, session.pk):
                batch.append(message)
                if len(batch) == READ_BATCH:
                    Message.objects.bulk_create(batch)
                    restored, batch = restored + len(batch), []
            Message.objects.bulk_create(batch)
            restored += len(batch)
            transaction.on_commit(lambda: remove_file(locked))
        Session.objects.filter(pk=session.pk).update(
            cold_at=None, cold_file="", hot_until=hot_until
        )
    session.cold_at, session.cold_file, session.hot_until = None, "", hot_until
    return restored


def _safe_to_read(session: Session) -> bool:
    """Whether `session`, hot when loaded, cannot be frozen before a read that starts now ends:
    kept hot for longer than READ_MARGIN, or active too recently for any schedule to freeze it.
    Both only grow, so a stale copy errs on the safe side. No query."""
    now = timezone.now()
    if session.hot_until is not None and session.hot_until > now + READ_MARGIN:
        return True
    return session.updated_at > int((now - MIN_IDLE + READ_MARGIN).timestamp() * 1000)


def ensure_hot(session: Session) -> Session:
    """Make `session`'s whole transcript readable from the database, and keep it there for the
    read: THE function every transcript reader calls before reading rows.

    - hot and recently active or kept hot: nothing (no query);
    - cold: its rows are restored synchronously under the row lock (thaw), hot for 24 h;
    - hot but idle (a freeze may be on its way): `hot_until` is set under the row lock, so a
      freeze racing this read fails its final check instead of deleting the rows being read.

    Raises TranscriptUnavailable when the cold file is missing or unreadable (the session stays
    cold, nothing half restored). Returns `session`, updated in place."""
    if session.cold_at is None and _safe_to_read(session):
        return session
    try:
        restored = thaw(session)
    except ColdStorageError as exc:
        logger.error("cold transcript of %s could not be restored: %s", session.key, exc)
        raise unavailable(exc) from exc
    if restored:
        logger.info("thawed %s (%d messages)", session.key, restored)
    return session


def listed_messages(
    sessions: Iterable[Any], *, first: int = 0, last: int = 0
) -> Iterator[tuple[int, list[Message]]]:
    """What a list shows of those `sessions` (pk, last_seq) that are cold: each one's `first`
    or `last` messages in seq order, read from its file and not restored (9.6: lists keep
    payloads archived). Callers pass the sessions whose rows came back empty; one query, only
    if there are any. TranscriptUnavailable when a file is missing or unreadable."""
    last_seqs = {s.pk: s.last_seq for s in sessions}
    if not last_seqs:
        return
    cold = Session.objects.filter(pk__in=last_seqs, cold_at__isnull=False)
    for pk, name in cold.values_list("pk", "cold_file"):
        try:
            if first:
                head = []
                for message in read_messages(name, pk):
                    if message.seq > first:
                        break
                    head.append(message)
                yield pk, head
            else:
                after = last_seqs[pk] - last
                yield pk, [m for m in read_messages(name, pk) if m.seq > after]
        except ColdStorageError as exc:
            logger.error("cold transcript %s could not be read: %s", name, exc)
            raise unavailable(exc) from exc


def unavailable(exc: ColdStorageError) -> TranscriptUnavailable:
    """The reader's error: names the file (not the server's path) and what is wrong with it."""
    return TranscriptUnavailable(
        f"Transcript is in cold storage and its archive {exc.name} is {exc.reason}; "
        "an operator must restore that file under COLD_STORAGE_DIR."
    )
