"""The body of `POST /api/v1/sessions/{key}/send/`, derived from the sessions_send declaration
(the view reads it, the OpenAPI document shows it): the tool's own parameters but the target,
which is the path's, plus `idempotencyKey`. A closed object, with the tool's snake_case
spellings (9.6 §0)."""

from __future__ import annotations

from typing import Any

from ..tools.sessions_send import DECLARATION
from ..tools.shapes import obj

# The tool's parameters a REST send takes (the target is the path; label/agentId name another).
FROM_TOOL = ("message", "timeoutSeconds", "mode", "watch")
IDEMPOTENCY_KEY: dict[str, Any] = {
    "type": "string",
    "maxLength": 256,
    "description": "A repeated key returns the first call's run (or the Idempotency-Key header).",
}
NAMES = frozenset(
    {
        *FROM_TOOL,
        "idempotencyKey",
        *(snake for snake, name in DECLARATION.snake_names.items() if name in FROM_TOOL),
    }
)


def schema() -> dict[str, Any]:
    properties = DECLARATION.parameters()["properties"]
    return obj(
        {**{name: properties[name] for name in FROM_TOOL}, "idempotencyKey": IDEMPOTENCY_KEY},
        ("message",),  # (the tool also reads its aliases; REST documents the one name)
    )
