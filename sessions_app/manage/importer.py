"""Importing an OpenClaw state dir: `agents/<id>/sessions/sessions.json` plus the JSONL transcripts.

Reference: session-tools.md §8 and api.md §5. `import_openclaw` (the management command) calls
`import_state_dir()` and prints its report. Every write goes through store.upsert_session,
store.append_to_session and agents.upsert_agent, so imported data is validated exactly as the
ingest API validates it.

Idempotency: entries are upserted every run (which changes nothing when nothing changed), and a
transcript contributes only the valid messages beyond the session's stored count (`last_seq`),
so a re-run after OpenClaw appended to a file imports just the tail.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction

from openclaw_common import keys
from openclaw_common.errors import ToolError

from .. import store
from ..models import Agent, GatewayConfig, Message, Session
from .agents import upsert_agent

BATCH_SIZE = store.MAX_MESSAGES_PER_APPEND
KNOWN_ENTRY_FIELDS = frozenset(store.ENTRY_FIELDS) | store.PASSTHROUGH_FIELDS | store.SPECIAL_FIELDS
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


class StateDirError(Exception):
    """Nothing to import: the state dir is missing or holds no session store."""


class UnsafePath(ValueError):
    """A transcript path that would leave the agent's sessions dir."""


class NotRegularFile(OSError):
    """A FIFO, device or socket where a file was expected: refused, never read (a FIFO would
    block the import forever, a device could be read without end)."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular(path: Path):
    """`path` opened for reading in binary mode if it is a regular file (symlinks followed);
    else NotRegularFile. Opened without blocking first, so a FIFO with no writer cannot hang
    the open itself, then checked on the open descriptor (no swap between check and read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # as open() says it
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(f"{path} is {kind}, not a regular file; refused")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def max_line_bytes() -> int:
    return int(getattr(django_settings, "IMPORT_MAX_LINE_BYTES", 16 * 1024 * 1024))


@dataclass(frozen=True)
class Problem:
    """One thing skipped or refused, printed as `<path>[:<line>]: <reason>`."""

    path: Path
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.reason}"


@dataclass
class ImportReport:
    agents: set[str] = field(default_factory=set)
    agents_created: set[str] = field(default_factory=set)
    sessions_created: int = 0
    sessions_updated: int = 0
    sessions_unchanged: int = 0
    sessions_failed: int = 0
    messages_added: int = 0
    lines_skipped: int = 0
    stores_read: int = 0
    stores_failed: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return self.sessions_created + self.sessions_updated + self.sessions_unchanged

    def summary(self) -> str:
        return (
            f"import_openclaw: {len(self.agents)} agents ({len(self.agents_created)} new), "
            f"{self.sessions} sessions ({self.sessions_created} new, "
            f"{self.sessions_updated} updated), {self.messages_added} messages added, "
            f"{self.lines_skipped} lines skipped, {self.sessions_failed} sessions failed"
        )


@dataclass
class _Run:
    report: ImportReport
    on_problem: Callable[[Problem], None] | None
    config: GatewayConfig
    # canonical key → where it was imported from, to refuse the same session twice in one run
    imported: dict[str, str] = field(default_factory=dict)
    # unknown entry fields already reported (once per name per run)
    unknown_fields: set[str] = field(default_factory=set)

    def problem(self, path: Path, reason: str, line: int | None = None) -> None:
        problem = Problem(path, reason, line)
        self.report.problems.append(problem)
        if self.on_problem is not None:
            self.on_problem(problem)

    def session_failed(self, store_path: Path, raw_key: str, reason: str) -> None:
        self.problem(store_path, f"{raw_key}: {reason}")
        self.report.sessions_failed += 1


def import_state_dir(
    state_dir: str | os.PathLike, *, on_problem: Callable[[Problem], None] | None = None
) -> ImportReport:
    """Import every `agents/*/sessions/sessions.json` under `state_dir` and their transcripts.

    Each session (entry + transcript) is written in one transaction: a session that fails is
    rolled back and reported, and the import goes on. `on_problem` is called for each problem as
    it is found (they are also collected in the report). Raises StateDirError when there is no
    store to read; a store that is unreadable or not a JSON object is reported and counted in
    `stores_failed`.
    """
    root = Path(state_dir).expanduser()
    if not root.is_dir():
        raise StateDirError(f"state dir not found: {root}")
    # Not only regular files: a FIFO or device in a store's place is reported, not passed over.
    stores = sorted(p for p in root.glob("agents/*/sessions/sessions.json") if not p.is_dir())
    if not stores:
        raise StateDirError(f"no agents/*/sessions/sessions.json under {root}")
    run = _Run(report=ImportReport(), on_problem=on_problem, config=GatewayConfig.load())
    for path in stores:
        _import_store(run, path)
    return run.report


def _import_store(run: _Run, path: Path) -> None:
    agent_id = path.parent.parent.name
    if keys.normalize_agent_id(agent_id) != agent_id:
        run.problem(path, f"{agent_id!r} is not a valid agent id; store skipped")
        run.report.stores_failed += 1
        return
    try:
        with open_regular(path) as f:
            data = json.load(f)
    except NotRegularFile as exc:
        run.problem(path, f"{exc}; store skipped")
        run.report.stores_failed += 1
        return
    except (OSError, ValueError, RecursionError) as exc:
        run.problem(path, f"cannot read the session store ({exc}); store skipped")
        run.report.stores_failed += 1
        return
    if not isinstance(data, dict):
        run.problem(path, "the session store is not a JSON object; store skipped")
        run.report.stores_failed += 1
        return
    run.report.stores_read += 1
    if _ensure_agent(agent_id):
        run.report.agents_created.add(agent_id)
    run.report.agents.add(agent_id)
    # Bare keys in this store belong to this agent (api.md §3 says the default agent for the
    # ingest API; here the directory is the better owner).
    base = run.config.key_settings
    settings = keys.KeySettings(scope=base.scope, main_key=base.main_key, default_agent_id=agent_id)
    for raw_key, entry in data.items():
        _import_session(run, path, raw_key, entry, settings)


def _ensure_agent(agent_id: str) -> bool:
    """Create the agent with default settings if it does not exist; never touch an existing one."""
    if Agent.objects.filter(pk=agent_id).exists():
        return False
    upsert_agent(api_key=None, agent_id=agent_id, data={"name": agent_id})
    return True


def _import_session(
    run: _Run, store_path: Path, raw_key: str, entry: Any, settings: keys.KeySettings
) -> None:
    checked = _checked_entry(run, store_path, raw_key, entry, settings)
    if checked is None:
        return
    key, entry, transcript = checked
    # Reserved keys (global, unknown) belong to the gateway's default agent, as store does it.
    owner = (
        run.config.key_settings.default_agent_id
        if key in keys.RESERVED_KEYS
        else keys.agent_id_of(key)
    )
    try:
        written = _write_session(run, store_path, raw_key, key, entry, transcript, owner)
    except ToolError as exc:
        run.session_failed(store_path, raw_key, f"{exc.message}; session rolled back")
        return
    # One broken session (an unreadable file, a database error) must not stop the others.
    except Exception as exc:
        run.session_failed(store_path, raw_key, f"{type(exc).__name__}: {exc}; session rolled back")
        return
    run.imported[key] = f"{store_path} {raw_key!r}"
    _count(run.report, owner, written)


def _checked_entry(
    run: _Run, store_path: Path, raw_key: str, entry: Any, settings: keys.KeySettings
) -> tuple[str, dict, Path | None] | None:
    """The canonical key, the entry without unknown fields and its transcript's path; None when
    the session is skipped (reported)."""
    try:
        key = keys.canonical_key(raw_key, agent_id=settings.default_agent_id, settings=settings)
    except keys.InvalidKey as exc:
        run.session_failed(store_path, raw_key, f"{exc}; session skipped")
        return None
    if key in run.imported:
        run.session_failed(store_path, raw_key, f"same session as {run.imported[key]}; skipped")
        return None
    if not isinstance(entry, dict):
        run.session_failed(store_path, raw_key, "the entry is not a JSON object; session skipped")
        return None
    entry = _known_fields(run, store_path, raw_key, entry, settings)
    problem = unstorable(entry)
    if problem is not None:
        run.session_failed(store_path, raw_key, f"the entry {problem}; session skipped")
        return None
    try:
        transcript = transcript_path(store_path.parent, entry, agent_id=settings.default_agent_id)
    except UnsafePath as exc:
        run.session_failed(store_path, raw_key, f"{exc}; session skipped")
        return None
    explicit = isinstance(entry.get("sessionFile"), str) and entry["sessionFile"].strip()
    if transcript is not None and explicit and not transcript.exists():
        run.problem(store_path, f"{raw_key}: transcript not found: {transcript}")
    return key, entry, transcript


@dataclass(frozen=True)
class _Written:
    agent_created: bool
    created: bool
    changed: bool  # the stored values of an existing session changed
    messages_added: int
    lines_skipped: int


def _write_session(
    run: _Run,
    store_path: Path,
    raw_key: str,
    key: str,
    entry: dict,
    transcript: Path | None,
    owner: str,
) -> _Written:
    """The entry and the new part of its transcript, in one transaction (rolled back whole when
    this raises)."""
    skipped = 0

    def skip(problem: Problem) -> None:
        nonlocal skipped
        skipped += 1
        run.problem(problem.path, problem.reason, problem.line)

    with transaction.atomic():
        agent_created = _ensure_agent(owner)
        before = _entry_values(Session.objects.filter(key=key))
        new_id = keys.normalize_session_id(entry.get("sessionId"))
        if before and new_id and new_id != before["session_id"]:
            # The service keeps one transcript per key, so a reset cannot be mirrored.
            run.problem(
                store_path,
                f"{raw_key}: sessionId changed from {before['session_id']} to {new_id} "
                f"(reset in OpenClaw?); its transcript is still matched by count against "
                f"the {before['last_seq']} messages stored",
            )
        entry = _keep_spawned_by(run, store_path, raw_key, entry, before)
        session, created = store.upsert_session(api_key=None, key=key, entry=entry, touch=False)
        added = 0
        if transcript is not None and transcript.exists():
            added = _append_transcript(run, session, transcript, skip)
        after = _entry_values(Session.objects.filter(pk=session.pk))
    return _Written(agent_created, created, after != before, added, skipped)


def _keep_spawned_by(
    run: _Run, store_path: Path, raw_key: str, entry: dict, before: dict | None
) -> dict:
    """The entry without a spawnedBy that would change the stored one: it is set once, at
    creation (it decides who may read the session). A re-import keeps the session's transcript
    coming and notes the difference instead of failing the whole session."""
    given = entry.get("spawnedBy")
    if before is None or "spawnedBy" not in entry or not isinstance(given, str | None):
        return entry
    if (given or "") == before["spawned_by"]:
        return entry
    run.problem(
        store_path,
        f"{raw_key}: spawnedBy changed from {before['spawned_by'] or 'empty'} to "
        f"{given or 'empty'}; kept {before['spawned_by'] or 'empty'} (set once, at creation)",
    )
    return {k: v for k, v in entry.items() if k != "spawnedBy"}


def _count(report: ImportReport, owner: str, written: _Written) -> None:
    report.agents.add(owner)
    if written.agent_created:
        report.agents_created.add(owner)
    report.messages_added += written.messages_added
    report.lines_skipped += written.lines_skipped
    if written.created:
        report.sessions_created += 1
    elif written.messages_added or written.changed:
        report.sessions_updated += 1
    else:
        report.sessions_unchanged += 1


def _entry_values(queryset) -> dict | None:
    """A session's stored values, without the live change mark (every upsert moves it)."""
    values = queryset.values().first()
    if values is not None:
        values.pop("changed_ms")
        values.pop("change_reason")
    return values


def _known_fields(
    run: _Run, store_path: Path, raw_key: str, entry: dict, settings: keys.KeySettings
) -> dict:
    """The entry without fields store.read_entry would refuse (each reported once per run)."""
    cleaned = {}
    for name, value in entry.items():
        if name in KNOWN_ENTRY_FIELDS:
            cleaned[name] = value
        elif name not in run.unknown_fields:
            run.unknown_fields.add(name)
            run.problem(store_path, f"{raw_key}: unknown session field {name!r} dropped")
    # A bare spawnedBy (`main`, `discord:group:dev`) names a session of this store's agent too.
    spawned_by = cleaned.get("spawnedBy")
    if isinstance(spawned_by, str) and spawned_by.strip():
        # A malformed one is left as is: store reports it, naming the field.
        with contextlib.suppress(keys.InvalidKey):
            cleaned["spawnedBy"] = keys.canonical_key(
                spawned_by, agent_id=settings.default_agent_id, settings=settings
            )
    return cleaned


def transcript_path(sessions_dir: Path, entry: dict, *, agent_id: str) -> Path | None:
    """Where an entry's transcript is (reference §8.1), always inside `sessions_dir`.

    `sessionFile` (relative, or absolute inside the dir) wins over `<sessionId>.jsonl`. An
    absolute `…/agents/<agent_id>/sessions/<file>` from another state-dir location (a copied
    `~/.openclaw`) means `<file>` here, as OpenClaw reads it. Raises UnsafePath for anything
    that resolves outside the dir (`..`, other absolute paths, symlinks leading out).
    """
    base = sessions_dir.resolve()
    session_file = entry.get("sessionFile")
    if isinstance(session_file, str) and session_file.strip():
        given = Path(session_file.strip())
        candidate = given if given.is_absolute() else base / given
        if given.is_absolute() and not _inside(candidate.resolve(), base):
            moved = Path(os.path.normpath(given)).parts
            if len(moved) > 4 and moved[-4:-1] == ("agents", agent_id, "sessions"):
                candidate = base / moved[-1]
    elif session_file is not None and not isinstance(session_file, str):
        raise UnsafePath("sessionFile must be a string")
    else:
        session_id = entry.get("sessionId")
        if not isinstance(session_id, str) or not session_id.strip():
            return None
        candidate = base / f"{session_id.strip()}.jsonl"
    resolved = candidate.resolve()
    if not _inside(resolved, base):
        raise UnsafePath(f"transcript path {str(session_file or candidate)!r} is outside {base}")
    return resolved


def _inside(path: Path, base: Path) -> bool:
    return path != base and path.is_relative_to(base)


def _append_transcript(
    run: _Run, session: Session, path: Path, skip: Callable[[Problem], None]
) -> int:
    """Append the file's valid messages beyond the `last_seq` already stored, in batches."""
    stored = session.last_seq
    position = 0
    added = 0
    batch: list[Message] = []
    for message in read_transcript(path, on_skip=skip):
        position += 1
        if position <= stored:
            continue
        batch.append(message)
        if len(batch) == BATCH_SIZE:
            store.append_to_session(session, batch, touch=False)
            added += len(batch)
            batch = []
    if batch:
        store.append_to_session(session, batch, touch=False)
        added += len(batch)
    if position < stored:
        run.problem(
            path,
            f"{position} valid messages, fewer than the {stored} already stored for "
            f"{session.key}; nothing appended",
        )
    return added


def read_transcript(path: Path, *, on_skip: Callable[[Problem], None]) -> Iterator[Message]:
    """The transcript's messages (reference §8.3), validated, unsaved, streamed line by line.

    Every parseable line with a truthy `message` contributes it (so the session header and the
    other entry types are passed over); blank lines are ignored. Lines that are not JSON and
    messages that fail store.read_message go to `on_skip` and are left out.
    """
    limit = max_line_bytes()
    with open_regular(path) as f:
        for number, raw in enumerate(_bounded_lines(f, limit), start=1):
            if raw is None:
                too_long = f"line longer than {limit} bytes (IMPORT_MAX_LINE_BYTES); skipped"
                on_skip(Problem(path, too_long, number))
                continue
            message, reason = _line_message(raw, first=number == 1)
            if reason is not None:
                on_skip(Problem(path, reason, number))
            elif message is not None:
                yield message


def _bounded_lines(f, limit: int) -> Iterator[bytes | None]:
    """The file's lines, each read with at most `limit` bytes (plus its newline) in memory; a
    longer line is read past in chunks and given as None."""
    while True:
        raw = f.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        while True:  # the rest of the over-long line
            chunk = f.readline(64 * 1024)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield None


def _line_message(raw: bytes, *, first: bool) -> tuple[Message | None, str | None]:
    """One JSONL line → (message, None), (None, why it is skipped), or (None, None) to pass over."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    if first:
        text = text.lstrip("\ufeff")
    if not text.strip():
        return None, None
    try:
        line = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(line, dict) or not line.get("message"):
        return None, None
    message = line["message"]
    if isinstance(message, dict):
        if "role" not in message:
            return None, "message has no role"
        # Caught here, so one such line is skipped instead of failing the session's insert.
        problem = unstorable(message, check_depth=False)  # too deep: stored flattened
        if problem is not None:
            return None, f"message {problem}"
        if message.get("timestamp") is None:
            line_ms = _line_timestamp_ms(line.get("timestamp"))
            if line_ms is not None:
                message = {**message, "timestamp": line_ms}
    try:
        return store.read_message(0, message), None
    except ToolError as exc:
        return None, exc.message.replace("messages[0]", "message", 1)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def unstorable(value: Any, *, check_depth: bool = True) -> str | None:
    """Why `value` cannot be stored (store.check_storable's message), or None."""
    try:
        store.check_storable(value, "", check_depth=check_depth)
    except ToolError as exc:
        return exc.message
    return None


def _line_timestamp_ms(value: Any) -> int | None:
    """A transcript line's ISO `timestamp` (or a number of ms) as epoch milliseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = (moment - _EPOCH) // _ONE_MS
    return ms if ms >= 0 else None
