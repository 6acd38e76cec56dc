"""Backend registry: an Agent's `backend.type` picks the implementation."""

from __future__ import annotations

from .base import (
    ANNOUNCE_SKIP,
    REPLY_SKIP,
    Backend,
    BackendError,
    ToolSpec,
    TurnAborted,
    TurnInput,
    TurnOutput,
)
from .openai import OpenAIBackend
from .scripted import ScriptedBackend


def get_backend(backend_settings: dict) -> Backend:
    kind = (backend_settings or {}).get("type", "scripted")
    if kind == "scripted":
        return ScriptedBackend()
    if kind == "openai":
        return OpenAIBackend()
    raise BackendError(f"unknown backend type: {kind}")


__all__ = [
    "ANNOUNCE_SKIP",
    "REPLY_SKIP",
    "Backend",
    "BackendError",
    "ToolSpec",
    "TurnAborted",
    "TurnInput",
    "TurnOutput",
    "get_backend",
]
