"""Exporting sessions to an OpenClaw state dir: `agents/<id>/sessions/sessions.json` and one
`<sessionId>.jsonl` transcript per session (reference §8), the layout `import_openclaw DIR`
reads. `manage.py sessions export DIR` calls export_state_dir().

A round trip (export → import into an empty database → export) gives the same sessions.json and
the same transcript lines; only each transcript's header `timestamp` (the row's creation time,
which the import does not read) differs. Transcripts are raw (the CLI is an operator's tool), and
a cold transcript is read from its file without restoring it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openclaw_common import keys

from .. import store
from ..models import GatewayConfig, Session
from ..transcript import ExportCursor
from . import cold_storage
from .jsonl_format import export_header

Progress = Callable[[str, int, int], None]


def entry_of(session: Session) -> dict[str, Any]:
    """The session as a `sessions.json` entry: what store.read_entry reads back to the same row
    (blank fields are left out, as OpenClaw leaves unset ones out)."""
    entry: dict[str, Any] = {"sessionId": session.session_id, "updatedAt": session.updated_at}
    for name, (column, _kind) in store.ENTRY_FIELDS.items():
        value = getattr(session, column)
        if value not in ("", None):
            entry[name] = value
    optional = {
        "chatType": session.chat_type,
        "lastThreadId": session.last_thread_id,
        "sendPolicy": session.send_policy,
        "spawnedBy": session.spawned_by,
    }
    entry |= {name: value for name, value in optional.items() if value}
    if session.spawn_depth:
        entry["spawnDepth"] = session.spawn_depth
    # Sorted: PostgreSQL's jsonb does not keep the order they came in, and an export should not
    # depend on the backend. sessionFile, when the entry had one, last and as the file this
    # export wrote (without one, the import reads <sessionId>.jsonl, which is what was written).
    extra = session.extra or {}
    entry |= {k: extra[k] for k in sorted(extra) if k in store.PASSTHROUGH_FIELDS}
    if entry.pop("sessionFile", None) is not None:
        entry["sessionFile"] = transcript_name(session)
    return entry


def transcript_name(session: Session) -> str:
    """The transcript's file name: the entry's own sessionFile when it is a plain name in the
    sessions dir, else `<sessionId>.jsonl` (what OpenClaw names it)."""
    given = (session.extra or {}).get("sessionFile")
    name = given.strip() if isinstance(given, str) else ""
    if name and Path(name).name == name and name not in (".", "..", "sessions.json"):
        return name
    return f"{session.session_id}.jsonl"


def transcript_lines(session: Session) -> Iterator[str]:
    """export_jsonl(raw=True), a cold part read from its file first."""
    yield export_header(session)
    cursor = ExportCursor(session.pk, raw=True, batch_size=1000)
    if session.cold_file:
        for line in cold_storage.export_lines(session.cold_file):
            yield line
            entry_id = json.loads(line)["id"]  # the seq in hex: the hot rows come after it
            cursor.after, cursor.parent = int(entry_id, 16), entry_id
    while (chunk := cursor.next_chunk()) is not None:
        yield chunk


def _owner(session: Session, settings: keys.KeySettings) -> str:
    return settings.default_agent_id if session.key in keys.RESERVED_KEYS else session.agent_id


def export_state_dir(
    directory: str | os.PathLike,
    *,
    agent_id: str | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Write every session (of `agent_id`, if given) under `directory`; {agents, sessions,
    messages} written. Existing files of the same names are replaced."""
    root = Path(directory).expanduser()
    settings = GatewayConfig.load().key_settings
    sessions = Session.objects.order_by("agent_id", "key")
    if agent_id:
        sessions = sessions.filter(agent_id=agent_id)
    total = sessions.count()
    stores: dict[str, dict[str, Any]] = {}
    messages = 0
    for done, session in enumerate(sessions.iterator(chunk_size=500), start=1):
        owner = _owner(session, settings)
        sessions_dir = root / "agents" / owner / "sessions"
        sessions_dir.mkdir(parents=True, exist_ok=True)
        entry = entry_of(session)
        stores.setdefault(owner, {})[session.key] = entry
        with open(sessions_dir / transcript_name(session), "w", encoding="utf-8") as f:
            for chunk in transcript_lines(session):
                f.write(chunk)
        messages += session.last_seq
        if progress:
            progress("export", done, total)
    for owner, entries in stores.items():
        path = root / "agents" / owner / "sessions" / "sessions.json"
        path.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"agents": len(stores), "sessions": total, "messages": messages}
