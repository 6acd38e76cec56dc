"""sessions.patch's fields beyond the `sessions` tool's own (9.6 §2.4), so a 9.6 client's patch
never breaks on a field it may send: each is checked and goes where it has a meaning here.

- Columns: `verboseLevel`, `reasoningLevel` (the session's levels, as the ingest PATCH sets).
- Kept in `Session.extra` under the 9.6 name (where an imported 9.6 store keeps them too, and
  what `sessions export` writes back), and returned in the RPC's `entry`: `autoLabel`,
  `boardFace`, `boardPresentation`, `unread` (with `markedUnreadAt`), `contextWindow`,
  `fastMode`, `traceLevel`, `responseUsage`, `groupActivation`: display and runtime
  preferences of the client's; and `toolOverrides`, which is applied: an `{allow?, deny?}`
  narrowing of the session's tools (runs/tool_policy.narrow; it never adds a tool).
- Accepted and not stored (IGNORED, listed in the result's `ignored`): `elevatedLevel`,
  `execHost`, `execNode`, `permissionMode`, `sandboxMode` (this service runs no exec or host
  tools; sandboxing is the API key's or the agent's `sandboxed`) and `agentRuntime` (the runtime
  follows the key: `agent:<id>:acp:*` runs an ACP harness, every other session its agent's
  backend). Storing them would tell a client a setting is in force that is not.
- PRIVILEGED (9.6 `operator.admin`): operator keys only.
- Refused with their own texts: the retired `execSecurity`/`execAsk` (even as null) and the
  spawn-lineage fields.

`null` clears any of them (9.6: "null clears").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, InvalidArgument, SessionChanged

from .. import store
from ..access.identity import Requester
from ..lib.jsontext import byte_size
from ..models import Session, now_ms
from ..rows import row_of
from ..runs.tool_policy import clean_tool_policy

DEFAULT_STATUS_TTL_MINUTES = 30  # 9.6: ttlMinutes 1–120, default 30

RETIRED = ("execSecurity", "execAsk")
LINEAGE = (
    "spawnedBy",
    "spawnDepth",
    "subagentRole",
    "subagentControlScope",
    "parentSessionKey",
    "spawnedWorkspaceDir",
    "forkedFromParent",
)
MAX_LEVEL = 32  # the level columns' width
MAX_TEXT = 200
MAX_PRESENTATION_BYTES = 2048
MAX_CONTEXT_WINDOW = 100_000_000
FAST_MODES = (True, False, "auto")
RESPONSE_USAGES = ("off", "tokens", "full", "on")
GROUP_ACTIVATIONS = ("mention", "always")


def _level(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string")
    if len(value.strip()) > MAX_LEVEL:
        raise InvalidArgument(f"{name} must be at most {MAX_LEVEL} characters")
    return store.text_without_nul(name, value.strip())


def _text_or_flag(name: str, value: Any) -> str | bool:
    if isinstance(value, bool):
        return value
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise InvalidArgument(f"{name} must be a string of at most {MAX_TEXT} characters")
    return store.text_without_nul(name, value)


def _presentation(name: str, value: Any) -> Any:
    """A display setting whose shape 9.6 leaves to its dashboard: a string, number, boolean or
    object, at most 2 KiB of JSON."""
    if isinstance(value, list) or byte_size(value) > MAX_PRESENTATION_BYTES:
        raise InvalidArgument(
            f"{name} must be a string, number, boolean or object of at most "
            f"{MAX_PRESENTATION_BYTES} bytes"
        )
    return value


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be boolean")
    return value


def _context_window(name: str, value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_CONTEXT_WINDOW
    ):
        raise InvalidArgument(f"{name} must be a positive integer")
    return value


def _choice(*allowed: Any) -> Callable[[str, Any], Any]:
    shown = ", ".join(a if isinstance(a, str) else str(a).lower() for a in allowed)

    def read(name: str, value: Any) -> Any:
        if not any(value is a or (isinstance(a, str) and value == a) for a in allowed):
            raise InvalidArgument(f"{name} must be one of {shown}")
        return value

    return read


def _tool_overrides(name: str, value: Any) -> dict[str, list[str]]:
    return clean_tool_policy(name, value)


def _scalar(name: str, value: Any) -> Any:
    if isinstance(value, dict | list):
        raise InvalidArgument(f"{name} must be a string, number or boolean")
    return value


COLUMNS = {"verboseLevel": "verbose_level", "reasoningLevel": "reasoning_level"}
IGNORED = (
    "elevatedLevel",
    "execHost",
    "execNode",
    "permissionMode",
    "sandboxMode",
    "agentRuntime",
)
READERS: dict[str, Callable[[str, Any], Any]] = {
    "verboseLevel": _level,
    "reasoningLevel": _level,
    "autoLabel": _text_or_flag,
    "boardFace": _presentation,
    "boardPresentation": _presentation,
    "unread": _boolean,
    "contextWindow": _context_window,
    "fastMode": _choice(*FAST_MODES),
    "traceLevel": _level,
    "responseUsage": _choice(*RESPONSE_USAGES),
    "groupActivation": _choice(*GROUP_ACTIVATIONS),
    "toolOverrides": _tool_overrides,
    # Accepted and not applied (no exec hosts or sandboxes here): any scalar.
    **dict.fromkeys(IGNORED, _scalar),
}
FIELDS = tuple(READERS)
PREFERENCES = tuple(n for n in FIELDS if n not in COLUMNS and n not in IGNORED)
PRIVILEGED = frozenset({*IGNORED, "toolOverrides"} - {"agentRuntime"})
# What `unread: true` records; `expectedMarkedUnreadAt` is checked against it.
MARKED_UNREAD_AT = "markedUnreadAt"


def refuse_retired(params: dict) -> None:
    """9.6's refusals for the retired exec fields (even as null) and spawn lineage."""
    for name in RETIRED:
        if name in params:
            raise InvalidArgument(f"{name} is retired and cannot be patched")
    for name in LINEAGE:
        if name in params:
            raise InvalidArgument(f"{name} is spawn lineage and cannot be patched")


def read(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of this module present in `raw`, checked; None clears."""
    return {
        name: None if raw[name] is None else READERS[name](name, raw[name])
        for name in FIELDS
        if name in raw
    }


def check_privileged(requester: Requester, changes: dict[str, Any]) -> None:
    """9.6 needs operator.admin for these: here, an operator key (AccessDenied otherwise)."""
    if requester.is_operator:
        return
    for name in FIELDS:
        if name in changes and name in PRIVILEGED:
            raise AccessDenied(f"{name} can be patched with an operator key only")


def columns(changes: dict[str, Any]) -> dict[str, Any]:
    return {column: changes[name] or "" for name, column in COLUMNS.items() if name in changes}


def apply(extra: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`extra` with the preferences of `changes` written (None removes one)."""
    extra = dict(extra)
    for name in PREFERENCES:
        if name not in changes:
            continue
        value = changes[name]
        if name == "unread":
            extra.pop(MARKED_UNREAD_AT, None)
            if value:
                extra[MARKED_UNREAD_AT] = now_ms()
        if value is None or (name == "unread" and not value):
            extra.pop(name, None)
        else:
            extra[name] = value
    return extra


def check_marked_unread(session: Session, expected: Any, display: str) -> None:
    """`expectedMarkedUnreadAt` (ms, or null for "not marked"): a client's guard that nobody
    marked or cleared the session unread since it read it."""
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int)):
        raise InvalidArgument("expectedMarkedUnreadAt must be an integer or null")
    if (session.extra or {}).get(MARKED_UNREAD_AT) != expected:
        raise SessionChanged(display, "patch")


def status_note_active(note: str, extra: dict[str, Any], at_ms: int) -> bool:
    """Whether a status note is still active at `at_ms`: 9.6 keeps a note for its
    `ttlMinutes` (default 30) from when it was set (`extra.statusSetAt`)."""
    if not note:
        return False
    set_at = extra.get("statusSetAt")
    if not isinstance(set_at, int):
        return True  # set before the time was recorded: kept, as it was
    ttl = extra.get("statusTtlMinutes") or DEFAULT_STATUS_TTL_MINUTES
    return at_ms < set_at + ttl * 60_000


def entry_of(session: Session, settings: keys.KeySettings) -> dict[str, Any]:
    """One session as a client that patched it reads it back (the sessions.patch RPC's
    `entry`, REST `GET /api/v1/sessions/{key}/`): its sessions_list row and the preferences it
    keeps."""
    return {**row_of(session, settings=settings), **entry_fields(session)}


def entry_fields(session: Session) -> dict[str, Any]:
    """What the RPC's `entry` adds to the sessions_list row: the stored preferences."""
    extra = session.extra or {}
    fields: dict[str, Any] = {}
    if session.reasoning_level:
        fields["reasoningLevel"] = session.reasoning_level
    for name in (*PREFERENCES, MARKED_UNREAD_AT):
        if name in extra:
            fields[name] = extra[name]
    for name, value in (("icon", session.icon), ("color", session.color)):
        if value:
            fields[name] = value
    # A status note (and its attention) lasts its ttlMinutes from when it was set (9.6).
    if status_note_active(session.status_note, extra, now_ms()):
        fields["statusNote"] = session.status_note
        if "attention" in extra:
            fields["attention"] = extra["attention"]
    return fields
