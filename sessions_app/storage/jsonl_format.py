"""OpenClaw's transcript JSONL, the format a download, a state-dir export and a cold file share:
the session header line and the timestamps. transcript.py writes the lines after the header;
storage/cold_storage.py reads and writes whole files.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from ..models import Session


def export_header(session: Session) -> str:
    header = {
        "type": "session",
        "version": 3,
        "id": str(session.session_id),
        "timestamp": session.created_at.isoformat().replace("+00:00", "Z"),
        "cwd": "",
    }
    if session.spawned_by:
        header["parentSession"] = session.spawned_by
    return orjson.dumps(header).decode() + "\n"


def iso(ms: int) -> str:
    """Epoch milliseconds as OpenClaw's timestamps: ISO 8601 UTC with a `Z`."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
