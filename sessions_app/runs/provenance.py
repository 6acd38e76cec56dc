"""The provenance stored on a message that one session sent another (reference §4.4, §5):
`kind = "inter_session"`, the source session and the tool that carried it."""

from __future__ import annotations

_ABSENT = object()


def inter_session(source_key: str, tool: str, *, channel=_ABSENT, **extra) -> dict:
    """`channel` is recorded when given (even empty: the source had none); `extra` adds fields
    such as the sub-agent report's sourceRole and runId."""
    provenance = {"kind": "inter_session", "sourceSessionKey": source_key}
    if channel is not _ABSENT:
        provenance["sourceChannel"] = channel
    return {**provenance, "sourceTool": tool, **extra}
