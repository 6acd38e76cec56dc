"""Session-key grammar: parse, normalise, classify. Pure functions, no ORM.

Reference: session-tools.md §1 and api.md §1. Keys are stored canonically as
`agent:<agentId>:<rest>`; the reserved keys `global` and `unknown` are stored as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_AGENT_ID = "main"
DEFAULT_MAIN_KEY = "main"
RESERVED_KEYS = frozenset({"global", "unknown"})
KINDS = ("main", "group", "cron", "hook", "node", "other")
INTERNAL_CHANNEL = "internal"
UNKNOWN_CHANNEL = "unknown"
MAX_KEY_LENGTH = 512

_VALID_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE)
_INVALID_AGENT_CHARS = re.compile(r"[^a-z0-9_-]+")
_SESSION_ID = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE
)
_SESSION_ID_SHAPE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.IGNORECASE)
_CRON_RUN = re.compile(r"^cron:[^:]+:run:[^:]+(:|$)")


class InvalidKey(ValueError):
    """The text cannot be a session key (empty, too long, or a malformed `agent:` key)."""


@dataclass(frozen=True)
class KeySettings:
    """The gateway settings that change how keys read: `session.scope` and `session.mainKey`."""

    scope: str = "per-sender"
    main_key: str = DEFAULT_MAIN_KEY
    default_agent_id: str = DEFAULT_AGENT_ID

    @property
    def alias(self) -> str:
        """What the literal "main" stands for in the store (reference §1.2)."""
        return "global" if self.scope == "global" else self.main_key


def normalize_agent_id(value: str | None) -> str:
    """`normalizeAgentId`: a safe lowercase id; blank or unusable text falls back to `main`."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_AGENT_ID
    if _VALID_AGENT_ID.match(text):
        return text.lower()
    cleaned = _INVALID_AGENT_CHARS.sub("-", text.lower()).strip("-")[:64]
    return cleaned or DEFAULT_AGENT_ID


def normalize_main_key(value: str | None) -> str:
    return (value or "").strip().lower() or DEFAULT_MAIN_KEY


def parse_agent_key(key: str | None) -> tuple[str, str] | None:
    """Split `agent:<id>:<rest>` into (agentId, rest); None when it is not an agent key.

    Lowercases, drops empty segments (so `agent::main::x` reads as `agent:main:x`).
    """
    if not key:
        return None
    parts = [p for p in key.strip().lower().split(":") if p]
    if len(parts) < 3 or parts[0] != "agent":
        return None
    return parts[1], ":".join(parts[2:])


def agent_id_of(key: str) -> str:
    """`resolveAgentIdFromSessionKey`: the parsed agent id, else the default agent."""
    parsed = parse_agent_key(key)
    return parsed[0] if parsed else DEFAULT_AGENT_ID


def rest_of(key: str) -> str:
    """The part after `agent:<id>:`, or the whole (lowercased) key when it is not an agent key."""
    parsed = parse_agent_key(key)
    return parsed[1] if parsed else key.strip().lower()


def main_session_key(agent_id: str, settings: KeySettings = KeySettings()) -> str:
    """The agent's main session as stored: `agent:<id>:<mainKey>`, or `global` under scope=global."""
    if settings.scope == "global":
        return "global"
    return f"agent:{normalize_agent_id(agent_id)}:{settings.main_key}"


def canonical_key(
    raw: str, *, agent_id: str | None = None, settings: KeySettings = KeySettings()
) -> str:
    """The stored form of a key given by a client (`toAgentStoreSessionKey` + gateway folding).

    - `main` (or the configured mainKey) → the main session of `agent_id` (default agent if None);
    - `global` / `unknown` stay as they are;
    - `agent:<id>:<rest>` → re-joined canonically (lowercase, empty segments dropped);
    - any other bare key (`cron:job`, `discord:group:dev`) → `agent:<default agent>:<key>`.

    Raises InvalidKey for blank, over-long or malformed `agent:` text.
    """
    if not isinstance(raw, str):
        raise InvalidKey("session key must be a string")
    text = raw.strip()
    if not text:
        raise InvalidKey("session key must not be empty")
    if len(text) > MAX_KEY_LENGTH:
        raise InvalidKey(f"session key is longer than {MAX_KEY_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InvalidKey("session key must not contain control characters")
    lowered = text.lower()
    if lowered in RESERVED_KEYS:
        return lowered
    owner = normalize_agent_id(agent_id) if agent_id else settings.default_agent_id
    if lowered == "main" or lowered == settings.main_key:
        return main_session_key(owner, settings)
    if lowered.startswith("agent:"):
        parsed = parse_agent_key(lowered)
        if parsed is None:
            raise InvalidKey(f"malformed agent session key: {text}")
        parsed_agent, rest = parsed
        if normalize_agent_id(parsed_agent) != parsed_agent:
            raise InvalidKey(f"malformed agent id in session key: {text}")
        return f"agent:{parsed_agent}:{rest}"
    canonical = f"agent:{settings.default_agent_id}:{':'.join(p for p in lowered.split(':') if p)}"
    if len(canonical) > MAX_KEY_LENGTH:
        # A bare key grows by its `agent:<id>:` prefix; the stored form must still fit.
        raise InvalidKey(f"session key is longer than {MAX_KEY_LENGTH} characters once stored")
    return canonical


def display_key(key: str, settings: KeySettings = KeySettings()) -> str:
    """The key as tools show it: canonical, except that `global` reads as `main` (seeds)."""
    if key == "global" and settings.scope == "global":
        return "main"
    return key


def normalize_session_id(value) -> str | None:
    """A sessionId as stored, or None when it cannot be one.

    OpenClaw writes UUIDs, but accepts any `^[a-z0-9][a-z0-9._-]{0,127}$` (it names the transcript
    file); UUIDs are lowercased so lookups match whatever case a client sends.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _SESSION_ID_SHAPE.match(text):
        return None
    return text.lower() if _SESSION_ID.match(text) else text


def looks_like_session_id(value: str) -> bool:
    return bool(_SESSION_ID.match(value.strip()))


def looks_like_session_key(value: str) -> bool:
    """`looksLikeSessionKey` (reference §1.3)."""
    text = value.strip().lower()
    if text in {"main", "global", "unknown", "current"}:
        return True
    if text.startswith(("agent:", "cron:", "hook:", "node-", "node:", "acp:")):
        return True
    return ":group:" in text or ":channel:" in text


def is_subagent_key(key: str) -> bool:
    lowered = key.strip().lower()
    return lowered.startswith("subagent:") or rest_of(lowered).startswith("subagent:")


def subagent_depth_from_key(key: str) -> int:
    return (":" + rest_of(key)).count(":subagent:")


def is_cron_run_key(key: str) -> bool:
    return bool(_CRON_RUN.match(rest_of(key)))


def classify_kind(
    key: str, *, chat_type: str | None = None, settings: KeySettings = KeySettings()
) -> str:
    """Kind from the part after `agent:<id>:` (api.md §1): main, cron, hook, node, group, other.

    Unlike reference §1.4 this reads the rest of canonical keys, so `agent:main:main` is `main`
    (api.md says the raw-string quirk is not reproduced).
    """
    if key == "global":
        return "main" if settings.scope == "global" else "other"
    if key == "unknown":
        return "other"
    rest = rest_of(key)
    if rest == settings.main_key:
        return "main"
    if rest.startswith("cron:"):
        return "cron"
    if rest.startswith("hook:"):
        return "hook"
    if rest.startswith(("node-", "node:")):
        return "node"
    if (chat_type or "").strip().lower() in {"group", "channel"}:
        return "group"
    wrapped = f":{rest}:"
    if ":group:" in wrapped or ":channel:" in wrapped:
        return "group"
    return "other"


def channel_from_key(key: str) -> str | None:
    """`<channel>:<group|channel>:<id>` in the part after `agent:<id>:` → channel."""
    parts = rest_of(key).split(":")
    if len(parts) >= 3 and parts[1] in {"group", "channel"} and parts[0]:
        return parts[0]
    return None


def derive_channel(
    *,
    kind: str,
    key: str,
    channel: str | None = None,
    origin_provider: str | None = None,
    delivery_channel: str | None = None,
    last_channel: str | None = None,
) -> str:
    """The row's `channel` (seeds "Channel field"; reference `deriveChannel`).

    cron/hook/node → `internal`; else the recorded channel, then the last delivery channel;
    else the channel named in the key; else `unknown`.
    """
    if kind in {"cron", "hook", "node"}:
        return INTERNAL_CHANNEL
    for candidate in (channel, origin_provider, delivery_channel, last_channel):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip().lower()
    return channel_from_key(key) or UNKNOWN_CHANNEL


_DELIVERY_FIELDS = ("channel", "to", "accountId", "threadId")
_INF = float("inf")


def _clean_str(value):
    if isinstance(value, str):
        value = value.strip()
        if value:
            return value
    return None


def _clean_thread(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and value not in (_INF, -_INF):
        return int(value)
    return _clean_str(value)


def normalize_delivery_context(
    delivery_context: dict | None,
    *,
    last_channel: str | None = None,
    last_to: str | None = None,
    last_account_id: str | None = None,
    last_thread_id: str | int | None = None,
) -> dict | None:
    """Merge `last*` fields (primary) with a stored deliveryContext (fallback).

    Gateway `normalizeSessionDeliveryFields`: strings trimmed, empties dropped, a finite numeric
    threadId truncated to an int; when the two channels differ, to/accountId/threadId come only
    from the primary; None when nothing is left. (Every list row asks: the helpers are module
    functions and the fields tuples, not a dict per side.)
    """
    primary = (
        _clean_str(last_channel),
        _clean_str(last_to),
        _clean_str(last_account_id),
        _clean_thread(last_thread_id),
    )
    if isinstance(delivery_context, dict) and delivery_context:
        get = delivery_context.get
        secondary = (
            _clean_str(get("channel")),
            _clean_str(get("to")),
            _clean_str(get("accountId")),
            _clean_thread(get("threadId")),
        )
    else:
        secondary = (None, None, None, None)
    channels_differ = (
        primary[0] is not None and secondary[0] is not None and primary[0] != secondary[0]
    )
    merged = {}
    for i, field in enumerate(_DELIVERY_FIELDS):
        value = primary[i]
        if value is None and not (channels_differ and i):
            value = secondary[i]
        if value is not None:
            merged[field] = value
    return merged or None
