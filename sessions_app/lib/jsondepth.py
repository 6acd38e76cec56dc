"""How deep stored JSON may nest (issue 16).

orjson, which the live hub and the API encode with, refuses values nested deeper than 255
levels, and a message it cannot encode would stall whatever encodes it. So every way in keeps
nesting at most `max_depth()` levels of objects and arrays (`OPENCLAW_MAX_JSON_DEPTH`, default
64): API input is refused with a 400 naming the limit (store.check_storable); messages from a
model backend or an import are stored flattened (`flatten_message`): each container at the
limit becomes its JSON text, and the message says so in its `flattened` field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.conf import settings

DEFAULT_MAX_DEPTH = 64
FLATTENED_FIELD = "flattened"


def max_depth() -> int:
    return int(getattr(settings, "OPENCLAW_MAX_JSON_DEPTH", DEFAULT_MAX_DEPTH))


def too_deep_text(where: str, limit: int) -> str:
    return f"{where} nests objects and arrays deeper than {limit} levels (the limit is {limit})"


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` containers. Iterative: the value may come from a
    parser that nests deeper than Python recurses."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, ValueError, TypeError):
        return "[nested too deep to show]"


def _flatten(value: Any, depth: int, limit: int) -> Any:
    if not isinstance(value, dict | list):
        return value
    if depth >= limit:
        return _as_text(value)
    if isinstance(value, dict):
        return {k: _flatten(v, depth + 1, limit) for k, v in value.items()}
    return [_flatten(v, depth + 1, limit) for v in value]


def flatten_message(message: dict, limit: int | None = None) -> dict:
    """`message` unchanged when it nests at most `limit` levels; else a copy whose containers
    at the limit are replaced by their JSON text, marked with a `flattened` field. Recursion
    stops at `limit`, so this is safe for any depth."""
    limit = max(limit or max_depth(), 4)
    if not depth_exceeds(message, limit):
        return message
    flat = _flatten(message, 1, limit)
    flat[FLATTENED_FIELD] = {
        "maxDepth": limit,
        "reason": f"nested deeper than {limit} levels; deeper parts are stored as JSON text",
    }
    return flat
