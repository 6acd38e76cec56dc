"""JSON encoding on hot paths: orjson (C) with the standard library as the fallback.

orjson's output equals `json.dumps(..., ensure_ascii=False)` with the same separators, and is
several times faster; it refuses integers past 64 bits, which the standard encoder takes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def dumps_pretty(value: Any) -> str:
    """Two-space indented JSON, as OpenClaw puts the details in a tool result's text."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return json.dumps(value, indent=2, ensure_ascii=False)


def byte_size(value: Any) -> int:
    return len(dumps_bytes(value))
