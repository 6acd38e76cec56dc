"""The provenance stored on a message that one session sent another (reference §4.4, §5):
`kind = "inter_session"`, the source session and the tool that carried it."""

from __future__ import annotations

from typing import Any

_ABSENT: Any = object()


def inter_session(
    source_key: str, tool: str, *, channel: str | None = _ABSENT, **extra: Any
) -> dict[str, Any]:
    """`channel` is recorded when given (even empty: the source had none); `extra` adds fields
    such as the sub-agent report's sourceRole and runId."""
    provenance: dict[str, Any] = {"kind": "inter_session", "sourceSessionKey": source_key}
    if channel is not _ABSENT:
        provenance["sourceChannel"] = channel
    return {**provenance, "sourceTool": tool, **extra}
