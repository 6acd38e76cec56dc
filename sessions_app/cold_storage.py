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

Compression: zstd (`.jsonl.zst`) when the `zstandard` package is installed, else gzip
(`.jsonl.gz`, standard library). A restore reads either, by the file's suffix.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import Message, Session
from .transcript import _iso, export_header

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


class ColdStorageError(Exception):
    """A cold file is missing or unreadable: the restore fails explicitly (as in 9.6)."""


def cold_dir() -> Path:
    return Path(settings.COLD_STORAGE_DIR)


def _suffix() -> str:
    return ".jsonl.zst" if zstandard is not None else ".jsonl.gz"


@contextlib.contextmanager
def _open_read(path: Path) -> Iterator[IO[bytes]]:
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
    header = orjson.loads(export_header(session))
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
                "timestamp": _iso(row[Message.TRANSCRIPT_COLUMNS.index("timestamp")]),
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


def freeze(session_pk: int) -> bool:
    """Move one session's transcript to cold storage. False when there is nothing to move, it
    is too long, or the session changed meanwhile (a message arrived: it is not idle)."""
    session = Session.objects.filter(pk=session_pk, cold_at__isnull=True).first()
    if session is None or not 0 < session.last_seq <= MAX_COLD_MESSAGES:
        return False
    last_seq = session.last_seq
    name = _write_file(session, last_seq)
    with transaction.atomic():
        marked = Session.objects.filter(
            pk=session.pk, cold_at__isnull=True, last_seq=last_seq
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
) -> int:
    """freeze() each; stops early at `deadline` (time.monotonic()), which a scheduled pass sets
    to stay inside django-q2's task timeout: the next pass goes on where it stopped."""
    moved = 0
    for done, pk in enumerate(pks, start=1):
        if deadline is not None and time.monotonic() > deadline:
            break
        moved += freeze(pk)
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


def read_messages(name: str, session_pk: int) -> Iterator[Message]:
    path = cold_dir() / name
    if not path.is_file():
        raise ColdStorageError(f"cold transcript missing: {path}")
    try:
        with _open_read(path) as f:
            for number, raw in enumerate(f):
                line = orjson.loads(raw)
                if number and line.get("type") == "message":
                    yield _message_of(line, session_pk)
    except (OSError, EOFError, ValueError, KeyError, orjson.JSONDecodeError) as exc:
        raise ColdStorageError(f"cold transcript unreadable: {path} ({exc})") from exc


def export_lines(name: str) -> Iterator[str]:
    """The cold file's message lines as transcript.export_jsonl(raw=True) writes them (the
    `__row` bookkeeping left out): `sessions export` reads a cold transcript without restoring."""
    path = cold_dir() / name
    if not path.is_file():
        raise ColdStorageError(f"cold transcript missing: {path}")
    with _open_read(path) as f:
        for number, raw in enumerate(f):
            line = orjson.loads(raw)
            if number and line.get("type") == "message":
                line.pop("__row", None)
                yield orjson.dumps(line).decode() + "\n"


def thaw(session: Session) -> int:
    """Restore a cold session's transcript rows; the number restored (0: it was not cold)."""
    if not session.cold_file:
        return 0
    name = session.cold_file
    restored = 0
    with transaction.atomic():
        if not Session.objects.filter(pk=session.pk, cold_at__isnull=False).update(
            cold_at=None, cold_file=""
        ):
            return 0
        batch: list[Message] = []
        for message in read_messages(name, session.pk):
            batch.append(message)
            if len(batch) == READ_BATCH:
                Message.objects.bulk_create(batch)
                restored, batch = restored + len(batch), []
        Message.objects.bulk_create(batch)
        restored += len(batch)
        transaction.on_commit(lambda: remove_file(name))
    session.cold_at, session.cold_file = None, ""
    return restored
