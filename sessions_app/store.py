"""Writing sessions and transcripts: ingest, append, patch. The one entry point for each change.

Callers (REST views, import_openclaw, seed_demo, admin) validate nothing themselves: these
functions check the input and raise InvalidArgument / NotFound with messages naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Field

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, InvalidArgument, NotFound
from policies_app.policy import parse_send_command

from . import state_log
from .lib import jsondepth, sanitize
from .lib.args import closed
from .models import Agent, ApiKey, GatewayConfig, Message, Run, Session, live_hint, now_ms

MAX_MESSAGES_PER_APPEND = 1000
MESSAGE_ROLES = ("user", "assistant", "toolResult", "tool", "system")
PROVENANCE_KINDS = ("external_user", "inter_session", "internal_system")
CHAT_TYPES = {
    "direct": "direct",
    "dm": "direct",
    "group": "group",
    "supergroup": "group",
    "channel": "channel",
}

# SessionEntry fields we keep in columns: OpenClaw name → (model field, kind).
_STR, _INT, _BOOL, _OBJ = "str", "int", "bool", "obj"
ENTRY_FIELDS: dict[str, tuple[str, str]] = {
    "label": ("label", _STR),
    "displayName": ("display_name", _STR),
    "subject": ("subject", _STR),
    "channel": ("channel", _STR),
    "lastChannel": ("last_channel", _STR),
    "lastTo": ("last_to", _STR),
    "lastAccountId": ("last_account_id", _STR),
    "model": ("model", _STR),
    "modelProvider": ("model_provider", _STR),
    "thinkingLevel": ("thinking_level", _STR),
    "verboseLevel": ("verbose_level", _STR),
    "reasoningLevel": ("reasoning_level", _STR),
    "contextTokens": ("context_tokens", _INT),
    "inputTokens": ("input_tokens", _INT),
    "outputTokens": ("output_tokens", _INT),
    "totalTokens": ("total_tokens", _INT),
    "systemSent": ("system_sent", _BOOL),
    "abortedLastRun": ("aborted_last_run", _BOOL),
    "deliveryContext": ("delivery_context", _OBJ),
    "origin": ("origin", _OBJ),
}
# Other SessionEntry fields (reference §8.2): accepted and kept as they are in `extra`.
PASSTHROUGH_FIELDS = frozenset(
    {
        "sessionFile",
        "groupId",
        "groupChannel",
        "space",
        "providerOverride",
        "modelOverride",
        "authProfileOverride",
        "authProfileOverrideSource",
        "authProfileOverrideCompactionCount",
        "resolvedModel",
        "totalTokensFresh",
        "compactionCount",
        "memoryFlushAt",
        "memoryFlushCompactionCount",
        "estimatedCostUsd",
        "groupActivation",
        "queueMode",
        "queueDebounceMs",
        "queueCap",
        "queueDrop",
        "lastHeartbeatText",
        "lastHeartbeatSentAt",
        "cliSessionIds",
        "claudeCliSessionId",
        "skillsSnapshot",
        "systemPromptReport",
        "elevatedLevel",
        "responseUsage",
        "ttsAuto",
        "fastMode",
        "sessionStartedAt",
        "lastInteractionAt",
        "lifecycleRevision",
        "parentSessionKey",
        "childSessions",
        "subagentRole",
        "subagentControlScope",
        "status",
        "startedAt",
        "endedAt",
        "runtimeMs",
        "execHost",
        "execSecurity",
        "execAsk",
        "execNode",
        "sendPolicyReason",
        # sessions.patch preferences kept under their 9.6 names (patch_fields.py)
        "autoLabel",
        "boardFace",
        "boardPresentation",
        "unread",
        "markedUnreadAt",
        "contextWindow",
        "traceLevel",
        "toolOverrides",
    }
)
SPECIAL_FIELDS = frozenset(
    {
        "key",
        "sessionId",
        "updatedAt",
        "chatType",
        "lastThreadId",
        "sendPolicy",
        "spawnedBy",
        "spawnDepth",
    }
)
MAX_STRING = 2000


def require_scope(api_key: ApiKey, *scopes: str) -> None:
    if api_key.scope not in scopes:
        raise AccessDenied(
            f"This API key's scope ({api_key.scope}) cannot do this; it needs {' or '.join(scopes)}"
        )


# --- field readers --------------------------------------------------------------------------


def check_storable(value: Any, where: str = "", *, check_depth: bool = True) -> None:
    """Refuse strings no column can hold, naming where they are (`messages[0].content`), and
    values nested deeper than jsondepth.max_depth() (unless `check_depth` is False: the caller
    flattens them).

    JSON escapes can smuggle in NUL (PostgreSQL text and jsonb refuse it) and unpaired
    surrogates like "\\ud800" (not encodable as UTF-8, so neither database nor response can
    take them). Iterative, because values may nest as deep as json.loads allows. `where` is the
    path of `value` itself.
    """
    if check_depth and jsondepth.depth_exceeds(value, limit := jsondepth.max_depth()):
        raise InvalidArgument(jsondepth.too_deep_text(where or "request body", limit))
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
                child_path = f"{path}.{name}" if path else name
                _check_string(str(key), f"field name {child_path}")
                stack.append((child, child_path))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, str):
            _check_string(item, path or "request body")


def _check_string(text: str, where: str) -> None:
    if "\x00" in text:
        raise InvalidArgument(f"{where} must not contain NUL characters")
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{where} is not valid Unicode (unpaired surrogate)") from None


def _string(name: str, value: Any, *, max_length: int = MAX_STRING) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string")
    if len(value) > max_length:
        raise InvalidArgument(f"{name} must be at most {max_length} characters")
    return text_without_nul(name, value).strip()


def text_without_nul(name: str, value: str) -> str:
    """`value`, refused when it holds a NUL character (PostgreSQL stores none, in text or jsonb:
    a DataError, a 500, instead of a clear 400)."""
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters")
    return value


def _non_negative_int(name: str, value: Any, *, maximum: int = 2**53 - 1) -> int | None:
    # The default ceiling is JavaScript's safe-integer range: OpenClaw's own numbers never pass it.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgument(f"{name} must be a non-negative integer")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value != int(value):
            raise InvalidArgument(f"{name} must be a non-negative integer")
        value = int(value)
    if value < 0:
        raise InvalidArgument(f"{name} must be a non-negative integer")
    if value > maximum:
        raise InvalidArgument(f"{name} must be at most {maximum}")
    return value


def _max_length(column: str) -> int:
    """The Session column's own limit (PostgreSQL refuses longer text with a DataError)."""
    field = Session._meta.get_field(column)
    assert isinstance(field, Field) and field.max_length is not None, column
    return field.max_length


def _bool(name: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InvalidArgument(f"{name} must be a boolean")


def _object(name: str, value: Any) -> dict | None:
    if value is None or isinstance(value, dict):
        return value
    raise InvalidArgument(f"{name} must be an object")


def _send_policy(value: Any) -> str:
    """ "allow" | "deny" set an override; null, "", "inherit" clear it."""
    if value is None:
        return ""
    if isinstance(value, str) and value.strip().lower() in {"allow", "deny", "inherit", ""}:
        value = value.strip().lower()
        return "" if value == "inherit" else value
    raise InvalidArgument('sendPolicy must be "allow", "deny", "inherit" or null')


def canonical_session_key(raw: Any, *, settings: keys.KeySettings, field: str = "key") -> str:
    if not isinstance(raw, str):
        raise InvalidArgument(f"{field} must be a string")
    try:
        return keys.canonical_key(raw, settings=settings)
    except keys.InvalidKey as exc:
        raise InvalidArgument(f"{field}: {exc}") from None


def get_session(raw_key: str, *, settings: keys.KeySettings) -> Session:
    """Look a session up by key in either form (bare or canonical); NotFound with OpenClaw's text.

    A key that cannot be one (`agent::`, control characters) is InvalidArgument, as on reads.
    """
    try:
        canonical = keys.canonical_key(raw_key, settings=settings)
    except keys.InvalidKey as exc:
        raise InvalidArgument(f"key: {exc}") from None
    session = Session.objects.filter(key=canonical).first()
    if session is None:
        raise NotFound(f"Session not found: {raw_key}")
    return session


# --- sessions -------------------------------------------------------------------------------


@dataclass
class EntryChanges:
    key: str
    agent_id: str
    fields: dict[str, Any]
    extra: dict[str, Any]
    session_id: str | None
    updated_at: int | None


def read_entry(entry: Any, *, settings: keys.KeySettings, key: str | None = None) -> EntryChanges:
    """Validate a `sessions.json` entry (plus its key) into column values."""
    if not isinstance(entry, dict):
        raise InvalidArgument("session entry must be a JSON object")
    check_storable(entry)
    _refuse_unknown_fields(entry)
    canonical = canonical_session_key(
        key if key is not None else entry.get("key"), settings=settings
    )
    if canonical in keys.RESERVED_KEYS:
        agent_id = settings.default_agent_id
    else:
        agent_id = keys.agent_id_of(canonical)

    fields = _column_values(entry)
    if "chatType" in entry:
        fields["chat_type"] = _chat_type(entry["chatType"])
    if "lastThreadId" in entry:
        fields["last_thread_id"] = _last_thread_id(entry["lastThreadId"])
    if "sendPolicy" in entry:
        fields["send_policy"] = _send_policy(entry["sendPolicy"])
    if "spawnedBy" in entry:
        fields["spawned_by"] = _spawned_by(entry["spawnedBy"], settings=settings)
    if "spawnDepth" in entry:
        fields["spawn_depth"] = (
            _non_negative_int("spawnDepth", entry["spawnDepth"], maximum=32) or 0
        )

    session_id = _session_id(entry.get("sessionId"))
    updated_at = _non_negative_int("updatedAt", entry.get("updatedAt"), maximum=2**53 - 1)
    extra = {k: entry[k] for k in entry if k in PASSTHROUGH_FIELDS}
    return EntryChanges(canonical, agent_id, fields, extra, session_id, updated_at)


def _refuse_unknown_fields(entry: dict) -> None:
    closed(entry, ENTRY_FIELDS.keys() | PASSTHROUGH_FIELDS | SPECIAL_FIELDS)


def _column_values(entry: dict) -> dict[str, Any]:
    """The ENTRY_FIELDS the entry has, checked by kind, by column."""
    fields: dict[str, Any] = {}
    for name, (column, kind) in ENTRY_FIELDS.items():
        if name not in entry:
            continue
        value = entry[name]
        if kind == _STR:
            fields[column] = _string(name, value, max_length=_max_length(column))
        elif kind == _INT:
            fields[column] = _non_negative_int(name, value)
        elif kind == _BOOL:
            fields[column] = _bool(name, value)
        else:
            fields[column] = _object(name, value)
    return fields


def _chat_type(value: Any) -> str:
    raw = _string("chatType", value).lower()
    if raw and raw not in CHAT_TYPES:
        raise InvalidArgument('chatType must be "direct", "group" or "channel"')
    return CHAT_TYPES.get(raw, "")


def _last_thread_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float | type(None)):
        raise InvalidArgument("lastThreadId must be a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgument("lastThreadId must be a string or a finite number")
    # Refused rather than cut: a shortened thread id would route replies elsewhere.
    text = "" if value is None else str(value)
    if len(text) > _max_length("last_thread_id"):
        raise InvalidArgument(
            f"lastThreadId must be at most {_max_length('last_thread_id')} characters"
        )
    return text


def _spawned_by(value: Any, *, settings: keys.KeySettings) -> str:
    if value in (None, ""):
        return ""
    return canonical_session_key(value, settings=settings, field="spawnedBy")


def _session_id(value: Any) -> str | None:
    if value is None:
        return None
    session_id = keys.normalize_session_id(value)
    if session_id is None:
        raise InvalidArgument(
            "sessionId must be a UUID or 1-128 letters, digits, '.', '_' and '-' "
            "starting with a letter or digit"
        )
    return session_id


def upsert_session(
    *, api_key: ApiKey | None, entry: Any, key: str | None = None, touch: bool = True
) -> tuple[Session, bool]:
    """Create or update a session from a `sessions.json` entry. Returns (session, created).

    updatedAt becomes the later of the stored and the given value; with none given and
    `touch`, now (OpenClaw `mergeSessionEntry`). `api_key` None means a trusted local caller
    (management commands).
    """
    if api_key is not None:
        require_scope(api_key, ApiKey.OPERATOR, ApiKey.INGEST)
    config = GatewayConfig.load()
    settings = config.key_settings
    changes = read_entry(entry, settings=settings, key=key)
    if not Agent.objects.filter(pk=changes.agent_id).exists():
        raise InvalidArgument(f"agent not found: {changes.agent_id}")
    for attempt in range(2):
        try:
            with transaction.atomic():
                return _write_entry(changes, settings=settings, touch=touch)
        except IntegrityError:
            # Lost a race creating the same key (or a duplicate sessionId): retry as an update.
            if attempt == 1:
                if (
                    changes.session_id
                    and Session.objects.filter(session_id=changes.session_id)
                    .exclude(key=changes.key)
                    .exists()
                ):
                    raise InvalidArgument("sessionId is already used by another session") from None
                raise
    raise AssertionError("unreachable")


def _write_entry(
    changes: EntryChanges, *, settings: keys.KeySettings, touch: bool
) -> tuple[Session, bool]:
    existing = Session.objects.select_for_update().filter(key=changes.key).first()
    created = existing is None
    if existing is None:
        session = Session(key=changes.key, agent_id=changes.agent_id)
    else:
        session = existing
        check_spawned_by_unchanged(session, changes.fields)
    if changes.session_id and changes.session_id != session.session_id:
        clash = Session.objects.filter(session_id=changes.session_id).exclude(key=changes.key)
        if clash.exists():
            raise InvalidArgument("sessionId is already used by another session")
        session.session_id = changes.session_id
    for column, value in changes.fields.items():
        setattr(session, column, value if value is not None or column in _NULLABLE else "")
    if changes.extra:
        session.extra = {**(session.extra or {}), **changes.extra}
    if changes.updated_at is not None:
        session.updated_at = max(session.updated_at if not created else 0, changes.updated_at)
    elif touch:
        session.updated_at = max(session.updated_at, now_ms())
    session.refresh_derived(settings)
    session.mark_changed("created" if created else "updated")
    session.save()
    if created:
        record_creation(session)
    live_hint(session.pk, session.change_reason)
    return session, created


def record_creation(session: Session) -> None:
    """The state log's `created` on a new session, and `child_spawned` on its parent."""
    spawner = session.spawned_by
    state_log.record(
        session.pk,
        "created",
        actor_type="agent" if spawner else "system",
        actor_id=spawner,
        summary=f"Session {session.key} created" + (f" by {spawner}" if spawner else ""),
    )
    parent = Session.objects.filter(key=spawner).values_list("pk", flat=True).first()
    if parent is not None:
        state_log.record(
            parent,
            "child_spawned",
            actor_type="agent",
            actor_id=spawner,
            summary=f"Spawned {session.key}",
            lock=True,
        )


def check_spawned_by_unchanged(session: Session, fields: dict) -> None:
    """`spawnedBy` is set once, at creation: it decides who may read the session (visibility
    `tree`, the sandbox clamp), so an ingest key that could rewrite it could widen access.
    Sending the stored value again is fine (an upsert repeats the whole entry)."""
    if "spawned_by" in fields and (fields["spawned_by"] or "") != session.spawned_by:
        raise InvalidArgument(
            f"spawnedBy of {session.key} is set once, at creation "
            f"(it is {session.spawned_by or 'empty'}); it cannot be changed"
        )


_NULLABLE = frozenset(
    {
        "context_tokens",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "system_sent",
        "aborted_last_run",
        "delivery_context",
        "origin",
    }
)

PATCH_FIELDS = {
    "label": "label",
    "displayName": "display_name",
    "model": "model",
    "thinkingLevel": "thinking_level",
    "verboseLevel": "verbose_level",
    "reasoningLevel": "reasoning_level",
}


def patch_session(*, api_key: ApiKey, key: str, changes: Any) -> Session:
    """OpenClaw `sessions.patch`: label, displayName, model, levels and the sendPolicy override."""
    require_scope(api_key, ApiKey.OPERATOR, ApiKey.INGEST)
    if not isinstance(changes, dict) or not changes:
        raise InvalidArgument("body must be a non-empty JSON object")
    closed(changes, PATCH_FIELDS.keys() | {"sendPolicy"})
    values = {
        PATCH_FIELDS[k]: _string(k, v, max_length=_max_length(PATCH_FIELDS[k]))
        for k, v in changes.items()
        if k in PATCH_FIELDS
    }
    if "sendPolicy" in changes:
        _send_policy(changes["sendPolicy"])  # refuse a bad value before writing anything
    settings = GatewayConfig.load().key_settings
    with transaction.atomic():
        session = get_session(key, settings=settings)
        session = Session.objects.select_for_update().get(pk=session.pk)
        if values:
            save_changed(session, values)
        if "sendPolicy" in changes:
            # The one way the override is set: PATCH, /send and the admin all come here.
            set_send_policy(session=session, policy=changes["sendPolicy"])
    return session


def save_changed(session: Session, values: dict[str, Any]) -> None:
    """Write `values` to a session the caller's transaction has locked, as a change people see:
    updatedAt moves forward and live subscribers hear of it (PATCH, the sessions tool, reset)."""
    for column, value in values.items():
        setattr(session, column, value)
    session.updated_at = max(session.updated_at, now_ms())
    session.mark_changed("updated")
    session.save()
    live_hint(session.pk, "updated")


def set_send_policy(*, session: Session, policy: str | None) -> Session:
    """Set or clear the per-session send-policy override ("allow", "deny", None/"inherit")."""
    value = _send_policy(policy)
    Session.objects.update_changed(
        [session.pk], "updated", send_policy=value, updated_at=max(session.updated_at, now_ms())
    )
    session.refresh_from_db(fields=["send_policy", "updated_at", "changed_ms", "change_reason"])
    return session


def set_session_model(session: Session, model: str | None) -> bool:
    """Set the model a session's runs use (`provider/model`; None clears the override), as
    sessions.patch with expectedSessionId: refused when the session was replaced meanwhile.
    Returns whether it changed; `session` is updated in place."""
    model = model or ""
    provider = model.split("/", 1)[0] if "/" in model else ""
    if session.model == model and session.model_provider == provider:
        return False
    updated = Session.objects.filter(session_id=session.session_id).update_changed(
        [session.pk], "updated", model=model, model_provider=provider
    )
    if not updated:
        raise InvalidArgument(f"Session {session.key} changed before patch. Retry.")
    session.model, session.model_provider = model, provider
    return True


# --- transcript -----------------------------------------------------------------------------


def read_message(index: int, raw: Any) -> Message:
    """Validate one transcript message (reference §8.3) into an unsaved Message."""
    where = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{where} must be an object")
    check_storable(raw, where, check_depth=False)
    # API input deeper than the limit was refused at the edge (check_storable on the body);
    # what gets here too deep comes from a model backend or an import: stored flattened.
    raw = jsondepth.flatten_message(raw)
    role = raw.get("role")
    if role not in MESSAGE_ROLES:
        raise InvalidArgument(f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}")
    content = raw.get("content")
    blocks_ok = isinstance(content, list) and all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
    )
    if content is not None and not isinstance(content, str) and not blocks_ok:
        raise InvalidArgument(f"{where}.content must be a string or an array of blocks with a type")
    if isinstance(content, str) and "\x00" in content:
        raise InvalidArgument(f"{where}.content must not contain NUL characters")
    timestamp = _non_negative_int(f"{where}.timestamp", raw.get("timestamp"), maximum=2**53 - 1)
    provenance = _object(f"{where}.provenance", raw.get("provenance"))
    if provenance is not None and provenance.get("kind") not in PROVENANCE_KINDS:
        provenance = None  # unknown kinds are ignored, as OpenClaw does
    extra = {
        k: v
        for k, v in raw.items()
        if k
        not in {
            "role",
            "content",
            "timestamp",
            "provenance",
            "toolCallId",
            "toolName",
            "usage",
            "__openclaw",
        }
    }
    return Message(
        redact_needed=sanitize.needs_redaction(raw),
        role=role,
        content=content,
        provenance=provenance,
        tool_call_id=_string(f"{where}.toolCallId", raw.get("toolCallId"), max_length=200),
        tool_name=_string(f"{where}.toolName", raw.get("toolName"), max_length=200),
        usage=_object(f"{where}.usage", raw.get("usage")),
        timestamp=timestamp if timestamp is not None else now_ms(),
        extra=extra,
    )


def read_messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list) or not raw:
        raise InvalidArgument("messages must be a non-empty array")
    if len(raw) > MAX_MESSAGES_PER_APPEND:
        raise InvalidArgument(f"messages must have at most {MAX_MESSAGES_PER_APPEND} items")
    return [read_message(i, m) for i, m in enumerate(raw)]


def append_to_session(
    session: Session, messages: list[Message], *, touch: bool = True
) -> tuple[int, int]:
    """Append validated messages at the next seqs, atomically. Returns (firstSeq, lastSeq).
    `touch` off leaves updatedAt alone (imports).

    Inside a caller's transaction no savepoint is taken: nothing catches a failed append and
    goes on with that transaction, and the savepoint cost two statements per append."""
    with transaction.atomic(savepoint=False):
        first = session.allocate_seqs(len(messages), touch=touch)
        _insert(session, messages, first)
    return first, first + len(messages) - 1


def _insert(session: Session, messages: list[Message], first: int) -> None:
    for offset, message in enumerate(messages):
        message.session_id = session.pk
        message.seq = first + offset
    Message.objects.bulk_create(messages)


# --- a run's messages (runs/engine.py, inside its starting or finishing transaction) ----------
# Each touches the session row once: the UPDATE that allocates the seqs also shows the run.


def append_run_input(session: Session, text: str, *, provenance: dict | None) -> int:
    """Append a starting run's input message (a user message) and show the run queued on the
    session. Returns the message's seq."""
    payload: dict[str, Any] = {"role": "user", "content": text}
    if provenance:
        payload["provenance"] = provenance
    message = read_message(0, payload)
    seq = session.allocate_run_input_seq()
    _insert(session, [message], seq)
    return seq


def finish_run_with_reply(
    run: Run, messages: list[Message], *, reply: str, usage: dict | None
) -> bool:
    """The run goes to ok with its turn's reply and the reply's messages are appended, once:
    False (nothing written) when something else finished the run first (an abort, a timeout, a
    redelivered task). Needs run.session locked and fresh (runs/engine.py lock_sessions)."""
    if not messages:
        return run.mark_finished(Run.OK, reply=reply, usage=usage)
    # The session is locked, so the reply's last seq is known before it is appended, and the
    # run's finishing UPDATE records it too.
    session = run.session
    reply_seq = session.last_seq + len(messages)
    if not run.mark_replied(reply=reply, usage=usage, reply_seq=reply_seq):
        return False
    first = session.allocate_run_reply_seqs(run, len(messages))
    assert first + len(messages) - 1 == reply_seq, (first, len(messages), reply_seq)
    _insert(session, messages, first)
    return True


def record_human_message(session: Session, messages: list[Message]) -> None:
    """One `human_direct_message` state event for an ingested batch holding a person's message
    (a user message not relayed from another session). The append holds the session's lock."""
    human = [
        m
        for m in messages
        if m.role == "user" and (m.provenance or {}).get("kind") != "inter_session"
    ]
    if not human:
        return
    sender = human[-1].extra.get("senderId") or human[-1].extra.get("senderName") or ""
    text = " ".join(sanitize.message_text(human[-1].content).split())
    state_log.record(
        session.pk,
        "human_direct_message",
        actor_type="human",
        actor_id=sender if isinstance(sender, str) else "",
        summary=sanitize.redact(text[:160])[0] or "(no text)",
    )


# --- the owner-only /send command (reference §6) ---------------------------------------------


def send_command_of(messages: list[Message]):
    """The /send command of a standalone message from the owner, or None.

    A gateway marks its owner's messages with `senderIsOwner: true` (kept with the message);
    a /send from anyone else is an ordinary message, as OpenClaw ignores it.
    """
    if len(messages) != 1 or messages[0].role != "user":
        return None
    message = messages[0]
    if message.extra.get("senderIsOwner") is not True:
        return None
    content = message.content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        content = content[0].get("text") if content[0].get("type") == "text" else None
    return parse_send_command(content) if isinstance(content, str) else None


def apply_send_command(session: Session, messages: list[Message], command) -> dict:
    """Store the command and OpenClaw's reply; set the override (no agent run: it is a command)."""
    reply = read_message(
        0,
        {
            "role": "assistant",
            "content": [{"type": "text", "text": command.reply}],
            "provenance": {"kind": "internal_system", "sourceTool": "send_command"},
        },
    )
    with transaction.atomic():
        first, last = append_to_session(session, [*messages, reply])
        if command.policy is not None:
            set_send_policy(session=session, policy=command.policy or None)
    session.refresh_from_db(fields=["send_policy"])
    return {
        "appended": len(messages) + 1,
        "firstSeq": first,
        "lastSeq": last,
        "command": {"reply": command.reply, "sendPolicy": session.send_policy or "inherit"},
    }
