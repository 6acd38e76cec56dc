"""Managing sessions (9.6 §2.3 the `sessions` tool, §2.4 sessions.patch/reset/delete/groups.*).

One function per action, called by the tool (tools/sessions.py), the REST views, the WebSocket
RPCs (live/session_rpcs.py), `manage.py sessions` and retention (retention.py):

- `find_managed(requester, raw)`: the session a caller may manage (visibility as the other tools;
  an operator key, the gateway's owner, manages every session).
- `read_patch(raw)` → changes; `patch(session, changes, …)`; `patch_targets(…)` for batches.
- `archive(session, …)` / `restore(session)`: archiving stops the session's work first.
- `reset(session, …)`: a new sessionId; the old transcript moves to an archived row, browsable.
- `delete(session, …)`: only an archived session unless asked; `archive_then_delete()` is the
  tool's order; `check_archivable()` / `check_deletable()` say what each refuses (dry runs).
- `group_list()`; `group_set`, `group_rename`, `group_delete` (the owner's: check_catalog_owner).

Every refusal is a domain error with 9.6's text (InvalidArgument 400, Forbidden 403).
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, Forbidden, InvalidArgument, SessionChanged

from .. import store
from ..access import visibility
from ..access.identity import VIEWER, Requester
from ..access.resolve import find_session, forbidden_text, not_found_text
from ..lib.jsontext import byte_size
from ..models import ApiKey, Message, Run, Session, SessionGroup, new_session_id, now_ms
from ..runs import control, model_catalog
from ..storage import cold_storage
from . import patch_fields

NAMED_ICONS = ("braces", "book", "monitor", "bot", "kanban", "coins")
MAX_ICON_BYTES = 16 * 1024
MAX_STATUS_NOTE = 120
MAX_GROUP_NAME = 512
MAX_TARGETS = 100
MAX_ERROR_BYTES = 512
# 9.6 §2.3: a patch result fits in 3,840 bytes (its JSON); what does not fit is left out.
RESULT_BUDGET_BYTES = 3840
BUDGET_WARNING = "Patch failed indexes separately for any omitted error details."
# The archive reason of the row that keeps a reset session's old transcript (9.6 `*.reset.*`).
RESET_REASON = "reset"

# Tool field → how it is read. Strings: empty clears. (`group` is also null-able.)
STRING_FIELDS = ("label", "icon", "color", "statusNote", "model", "thinkingLevel", "sendPolicy")
BOOLEAN_FIELDS = ("pinned", "archived")
PATCH_FIELDS = (*STRING_FIELDS, *BOOLEAN_FIELDS, "group", "attention", "ttlMinutes")

LIFECYCLE_TEXT = "Session lifecycle action requires a durable session identity"
SCHEDULED_TEXT = "Session will be archived after the current agent run finishes."
ARCHIVE_SELF_IN_BATCH = (
    "Archive the current session with a single patch; it is deferred until this run finishes."
)


NOT_OWNER_TEXT = (
    "The sessions tool is owner-only: this turn was not started by the owner "
    "(an operator key, or a message its gateway marked senderIsOwner)."
)
SUBAGENT_TEXT = "The sessions tool is not available to sub-agents."
# A signed-in team member (the browser's /ws/) reads and follows; changing a session is an API
# key's, as the browser's own changes need the admin's change permission (ui/access.py).
READ_ONLY_TEXT = "This account reads sessions; changing them needs an API key"
# The group catalog is the gateway's sidebar, and a rename or delete repoints every session in
# the group, visible to the caller or not: the owner's (an operator key, or the owner's turn).
CATALOG_TEXT = "{action} changes the gateway's group catalog: it needs an operator key"
SEND_POLICY_TEXT = "sendPolicy can be patched with an operator or ingest key only"


def check_owner(requester: Requester) -> None:
    """9.6 §2.3 "owner-gated": a model run may use the tool only on a turn whose input came
    from the owner, never as a sub-agent (Forbidden: the model sees a forbidden result). API
    principals (owner_turn None) are decided by their key: find_managed. A read-only principal
    (a team member's browser connection) changes nothing."""
    if requester.scope == VIEWER:
        raise AccessDenied(READ_ONLY_TEXT)
    if requester.owner_turn is not False:
        return
    depth = Session.objects.filter(key=requester.session_key).values_list("spawn_depth", flat=True)
    raise Forbidden(SUBAGENT_TEXT if depth.first() else NOT_OWNER_TEXT)


def not_visible_text(raw: str) -> str:
    return f"Session not visible from session tools: {raw}"


def find_managed(requester: Requester, raw: str) -> Session:
    """The session `raw` (a key or a sessionId) names, if `requester` may manage it.

    Owner-gated (9.6 §2.3): an operator key is the gateway's owner and manages any session; an
    agent key manages what its visibility lets it see (its own agent's sessions under
    tools.sessions.visibility; a sandboxed key only what it spawned). A miss is a 400 (9.6's
    resolver failures are), a hidden session a 403, checked first so existence is not told."""
    check_owner(requester)
    session, canonical, by_key = find_session(requester, raw)
    if not requester.is_operator and (session is not None or by_key):
        policy = visibility.policy_for(requester)
        spawned_by = session.spawned_by if session else ""
        if forbidden_text(policy, raw, canonical=canonical, spawned_by=spawned_by, action="status"):
            raise AccessDenied(not_visible_text(raw))
    if session is None:
        raise InvalidArgument(not_found_text(raw))
    return session


def has_run_in_flight(session: Session) -> bool:
    return Run.objects.filter(session=session).in_flight().exists()


# --- patch ------------------------------------------------------------------------------------


# sessions.patch and REST PATCH: "null clears" (9.6 §2.4), also for the fields whose tool
# spelling has no empty value: unpinned, no attention, the inherited send policy.
# (`archived: null` stays a 400: archiving and restoring are lifecycle actions, asked by name.)
NULL_CLEARS = {"pinned": False, "attention": "clear", "sendPolicy": "inherit"}


# A client's patch may carry these guards besides expectedSessionId: expectedMarkedUnreadAt
# is checked; expectedLifecycleRevision is accepted and not checked (there are no lifecycle
# revisions here: expectedSessionId is the guard every lifecycle change already needs).
CHECKED_GUARDS = ("expectedMarkedUnreadAt",)
PATCH_GUARDS = frozenset({*CHECKED_GUARDS, "expectedLifecycleRevision"})


def read_client_patch(requester: Requester, raw: dict[str, Any]) -> dict[str, Any]:
    """read_patch for a client rather than a model run (sessions.patch over /ws/, REST PATCH):
    null clears pinned, attention and sendPolicy too (the tool's null is a type error), and the
    privileged fields need an operator key. Every client way in reads its patch here, so none
    can forget the privilege check."""
    check_owner(requester)
    raw = {k: NULL_CLEARS[k] if v is None and k in NULL_CLEARS else v for k, v in raw.items()}
    changes = read_patch(raw)
    patch_fields.check_privileged(requester, changes)
    check_send_policy_override(requester, changes)
    return changes


def check_send_policy_override(requester: Requester, changes: dict[str, Any]) -> None:
    """A session's sendPolicy overrides the operator's send policy (policies_app): set by the
    owner (an operator key, or the owner's turn) or the gateway's bridge (an ingest key, as the
    ingest PATCH), never by an agent key, which could otherwise lift a block on its own sends."""
    if "sendPolicy" not in changes:
        return
    if requester.is_operator or requester.scope == ApiKey.INGEST or requester.owner_turn:
        return
    raise AccessDenied(SEND_POLICY_TEXT)


def guards_of(params: dict[str, Any]) -> dict[str, Any]:
    """The guards of a client's patch that are checked (patch(guards=...))."""
    return {name: params[name] for name in CHECKED_GUARDS if name in params}


def read_patch(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The patch fields present in `raw`, checked; `Patch setting required` when there are none.
    The tool's fields, and sessions.patch's others (patch_fields.py) that a tool call cannot
    carry (its declaration refuses unknown arguments)."""
    changes: dict[str, Any] = {}
    for name in PATCH_FIELDS:
        if name not in raw:
            continue
        value = raw[name]
        if name in BOOLEAN_FIELDS:
            if not isinstance(value, bool):
                raise InvalidArgument(f"{name} must be boolean")
        elif name == "group":
            if value is not None and not isinstance(value, str):
                raise InvalidArgument("group must be a string")
            value = (value or "").strip()
            if len(value) > MAX_GROUP_NAME:
                raise InvalidArgument("group too long")
        elif name == "ttlMinutes":
            if value is None:  # sessions.patch: null clears
                changes[name] = None
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 1 <= value <= 120
            ):
                raise InvalidArgument("ttlMinutes must be an integer from 1 to 120")
            value = int(value)
        else:
            if value is None and name != "attention":
                value = ""
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(f"{name} must be a string")
            value = value.strip() if isinstance(value, str) else value
        changes[name] = value
    changes.update(patch_fields.read(raw))  # sessions.patch's other fields (the RPC, REST)
    if not changes:
        raise InvalidArgument("Patch setting required")
    _check_values(changes)
    return changes


def _check_values(changes: dict[str, Any]) -> None:
    if "icon" in changes and changes["icon"]:
        check_icon(changes["icon"])
    if len(changes.get("statusNote") or "") > MAX_STATUS_NOTE:
        raise InvalidArgument(f"statusNote must be at most {MAX_STATUS_NOTE} characters")
    if len(changes.get("label") or "") > 200:
        raise InvalidArgument("label must be at most 200 characters")
    if len(changes.get("color") or "") > 64:
        raise InvalidArgument("color must be at most 64 characters")
    for name in ("model", "thinkingLevel"):
        value = changes.get(name) or ""
        if any(c.isspace() for c in value) or len(value) > 200:
            raise InvalidArgument(f"{name} must be one word of at most 200 characters")
    attention = changes.get("attention")
    if attention is not None and attention != "clear" and attention not in NAMED_ICONS:
        raise InvalidArgument(f'attention must be "clear" or one of {", ".join(NAMED_ICONS)}')
    if changes.get("sendPolicy") not in (None, "", "allow", "deny", "inherit"):
        raise InvalidArgument('sendPolicy must be "allow", "deny" or "inherit"')


_SVG_DATA_URL = re.compile(r"data:image/svg\+xml(;base64)?,(.*)", re.S | re.I)


def check_icon(icon: str) -> None:
    """One emoji, a named icon, or SVG markup / an SVG data URL of at most 16 KiB decoded."""
    if icon in NAMED_ICONS:
        return
    svg = icon
    match = _SVG_DATA_URL.fullmatch(icon)
    if match:
        try:
            data = match.group(2)
            svg = (
                base64.b64decode(data, validate=True).decode()
                if match.group(1)
                else urllib.parse.unquote(data)
            )
        except ValueError:
            raise InvalidArgument("icon: the SVG data URL does not decode") from None
    if svg.lstrip().lower().startswith("<svg"):
        if len(svg.encode()) > MAX_ICON_BYTES:
            raise InvalidArgument("icon: the SVG must be at most 16 KiB")
        if re.search(r"<script|\bon\w+\s*=|href\s*=\s*[\"']?(?!#)", svg, re.I):
            raise InvalidArgument("icon: the SVG must be self-contained (no scripts or links)")
        return
    if len(icon) > 8 or icon.isascii():
        raise InvalidArgument(
            f"icon must be one emoji, one of {', '.join(NAMED_ICONS)}, or SVG markup"
        )


@dataclass
class Caller:
    """Who patches: the requester's own session is `current` (archiving it is deferred)."""

    current_key: str
    in_run: bool = False


def patch(
    session: Session,
    changes: dict[str, Any],
    *,
    caller: Caller,
    expected_session_id: str | None = None,
    settings: keys.KeySettings | None = None,
    guards: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Apply `changes` (from read_patch) to `session`; the tool's result shape. `guards`:
    sessions.patch's `expectedMarkedUnreadAt`, checked under the row lock."""
    settings = settings or keys.KeySettings()
    display = keys.display_key(session.key, settings)
    lifecycle = "archived" in changes
    is_current = session.key == caller.current_key
    if lifecycle and not is_current and not expected_session_id:
        raise InvalidArgument(LIFECYCLE_TEXT)
    if expected_session_id and expected_session_id != session.session_id:
        raise SessionChanged(display, "patch")
    if changes.get("archived") is True:
        check_archivable(session, settings)
        if is_current and caller.in_run:
            store_extra(session, archiveAfterRun=True)
            return {"status": "scheduled", "sessionKey": display, "message": SCHEDULED_TEXT}
    updated = _apply(session, changes, guards=guards or {}, display=display)
    result: dict[str, Any] = {"status": "updated", "sessionKey": display, "updated": updated}
    ignored = [name for name in patch_fields.IGNORED if name in changes]
    if ignored:
        result["ignored"] = ignored  # accepted for 9.6 clients; no meaning here (patch_fields)
    if {"model", "thinkingLevel"} & set(updated):
        resolved = {
            "modelProvider": session.model_provider,
            "model": session.model,
            "thinkingLevel": session.thinking_level,
        }
        if byte_size({**result, "resolved": resolved}) <= RESULT_BUDGET_BYTES:
            result["resolved"] = resolved
        else:
            result["resolvedOmitted"] = {"reason": "response_budget_exceeded"}
    return result


def _apply(
    session: Session, changes: dict[str, Any], *, guards: dict[str, Any], display: str
) -> list[str]:
    """Write the changes under the row lock; archive/restore after, as their own steps."""
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if "expectedMarkedUnreadAt" in guards:
            patch_fields.check_marked_unread(locked, guards["expectedMarkedUnreadAt"], display)
        columns = _columns(locked, changes)
        if columns:
            store.save_changed(locked, columns)
        if changes.get("sendPolicy") is not None:
            store.set_send_policy(session=locked, policy=changes["sendPolicy"] or None)
        if "group" in changes and changes["group"]:
            ensure_group(changes["group"])
    if changes.get("archived") is True:
        archive(locked)
    elif changes.get("archived") is False:
        locked.restore()
    session.refresh_from_db()
    stored = [name for name in patch_fields.FIELDS if name not in patch_fields.IGNORED]
    return [name for name in (*PATCH_FIELDS, *stored) if name in changes]


def _columns(session: Session, changes: dict[str, Any]) -> dict[str, Any]:
    pinning = changes.get("pinned")
    if pinning is True:
        check_pinnable(session, restoring=changes.get("archived") is False)
    columns: dict[str, Any] = {}
    simple = {"label": "label", "icon": "icon", "color": "color", "group": "category"}
    for name, column in simple.items():
        if name in changes:
            columns[column] = changes[name]
    if "thinkingLevel" in changes:
        columns["thinking_level"] = changes["thinkingLevel"]
    if "model" in changes:
        model = changes["model"]
        if model:  # empty clears the override
            model = model_catalog.check_session_model(session, model)
        columns["model"] = model
        columns["model_provider"] = model.split("/", 1)[0] if "/" in model else ""
    if pinning is not None:
        columns["pinned_at"] = (session.pinned_at or timezone.now()) if pinning else None
    extra = _status_extra(session, changes, columns)
    columns.update(patch_fields.columns(changes))
    extra = patch_fields.apply(extra, changes)
    if extra != (session.extra or {}):
        columns["extra"] = extra
    return columns


def check_pinnable(session: Session, *, restoring: bool) -> None:
    if session.archived and not restoring:
        raise InvalidArgument("cannot pin an archived session; restore it first")
    if session.spawned_by:
        raise InvalidArgument("cannot pin a child session; pin its parent session instead")


def _status_extra(session: Session, changes: dict[str, Any], columns: dict[str, Any]) -> dict:
    """The status note's attention, ttl and time set live in `extra`; sets
    columns["status_note"]."""
    extra = dict(session.extra or {})
    now = now_ms()
    if "statusNote" in changes:
        columns["status_note"] = changes["statusNote"]
        if changes["statusNote"]:
            extra["statusSetAt"] = now
        else:
            extra.pop("attention", None)
            extra.pop("statusSetAt", None)
    if changes.get("ttlMinutes") is not None:
        extra["statusTtlMinutes"] = changes["ttlMinutes"]
    elif "ttlMinutes" in changes:
        extra.pop("statusTtlMinutes", None)
    attention = changes.get("attention")
    if attention == "clear":
        extra.pop("attention", None)
    elif attention is not None:
        note = columns.get("status_note", session.status_note)
        if not patch_fields.status_note_active(note, extra, now):
            raise InvalidArgument("attention needs an active statusNote")
        extra["attention"] = attention
    return extra


def store_extra(session: Session, **values: Any) -> None:
    Session.objects.filter(pk=session.pk).update(extra={**(session.extra or {}), **values})


def patch_targets(
    requester: Requester, targets: Any, changes: dict[str, Any], *, caller: Caller
) -> dict[str, Any]:
    """`patch` over 1–100 `{sessionKey, expectedSessionId?}`; each index succeeds or fails alone."""
    entries = read_targets(targets)
    succeeded: list[int] = []
    errors: list[dict[str, Any]] = []
    for index, (raw, expected) in enumerate(entries):
        try:
            session = find_managed(requester, raw)
            if changes.get("archived") is True and session.key == caller.current_key:
                raise InvalidArgument(ARCHIVE_SELF_IN_BATCH)
            patch(
                session,
                changes,
                caller=caller,
                expected_session_id=expected,
                settings=requester.key_settings,
            )
            succeeded.append(index)
        except (InvalidArgument, AccessDenied) as exc:
            message = exc.message.encode()[:MAX_ERROR_BYTES].decode(errors="ignore")
            errors.append({"index": index, "message": message})
    failed = [e["index"] for e in errors]
    status = "updated" if not failed else ("partial" if succeeded else "error")
    result = {"status": status, "succeeded": succeeded, "failed": failed, "errors": errors}
    return within_budget(result)


def within_budget(result: dict[str, Any]) -> dict[str, Any]:
    """A batch result cut to RESULT_BUDGET_BYTES: error details are dropped from the end (their
    indexes stay in `failed`) and BUDGET_WARNING says so."""
    if byte_size(result) <= RESULT_BUDGET_BYTES:
        return result
    errors = result["errors"]
    cut = {**result, "errors": [], "warning": BUDGET_WARNING}
    room = RESULT_BUDGET_BYTES - byte_size(cut)
    kept = 0
    for error in errors:
        size = byte_size(error) + 1  # its comma
        if size > room:
            break
        room -= size
        kept += 1
    cut["errors"] = errors[:kept]
    return cut


def read_targets(targets: Any) -> list[tuple[str, str | None]]:
    if not isinstance(targets, list) or not 1 <= len(targets) <= MAX_TARGETS:
        raise InvalidArgument(f"targets must be an array of 1 to {MAX_TARGETS} entries")
    entries: list[tuple[str, str | None]] = []
    for i, target in enumerate(targets):
        if not isinstance(target, dict) or set(target) - {"sessionKey", "expectedSessionId"}:
            raise InvalidArgument(f"targets[{i}] must be {{sessionKey, expectedSessionId?}}")
        raw, expected = target.get("sessionKey"), target.get("expectedSessionId")
        if not isinstance(raw, str) or not raw.strip() or len(raw) > keys.MAX_KEY_LENGTH:
            raise InvalidArgument(f"targets[{i}].sessionKey required")
        if expected is not None and not isinstance(expected, str):
            raise InvalidArgument(f"targets[{i}].expectedSessionId must be a string")
        entries.append((raw.strip(), expected))
    if len({raw for raw, _ in entries}) != len(entries):
        raise InvalidArgument("targets must not repeat a session")
    return entries


# --- archive, reset, delete -------------------------------------------------------------------


def check_archivable(session: Session, settings: keys.KeySettings) -> None:
    if session.key == "unknown":
        raise InvalidArgument("Cannot archive the unknown session sentinel.")
    if session.key == keys.main_session_key(session.agent_id, settings):
        raise InvalidArgument("Cannot archive an agent's main session.")


def check_deletable(session: Session, settings: keys.KeySettings) -> None:
    """What delete() refuses whatever the caller (main session, work in flight)."""
    display = keys.display_key(session.key, settings)
    if session.key == keys.main_session_key(session.agent_id, settings):
        raise InvalidArgument(f"Cannot delete the main session ({display}).")
    if has_run_in_flight(session):
        raise InvalidArgument(active_run_text(display, "delete"))


def archive(session: Session, *, reason: str = "manual") -> str:
    """Archive `session`: its work is stopped first (9.6 fences admission and cancels the
    session's work), and the pin is cleared. "archived", or "unchanged" when it already was (a
    successful no-op, as in 9.6). The tool, the REST and WebSocket forms and the command."""
    if has_run_in_flight(session):
        control.stop_session(session, reason=f"session archived ({reason})", clear_queued=True)
    session.refresh_from_db()
    return "archived" if session.archive(reason) else "unchanged"


def archive_scheduled(session_pk: int) -> bool:
    """Archive a session that asked, during its own run, to be archived once the run ended
    (`archiveAfterRun`); called after a run of it finishes. Waits for the last run in flight."""
    session = Session.objects.filter(pk=session_pk).first()
    if session is None or not (session.extra or {}).get("archiveAfterRun"):
        return False
    if has_run_in_flight(session):
        return False  # a follow-up run started: its finish calls this again
    extra = {k: v for k, v in session.extra.items() if k != "archiveAfterRun"}
    Session.objects.filter(pk=session.pk).update(extra=extra)
    archive(session)
    return True


def active_run_text(display: str, action: str) -> str:
    return f"Session {display} has a run in progress. Abort it first, then {action} it."


def reset(
    session: Session,
    *,
    expected_session_id: str | None = None,
    settings: keys.KeySettings | None = None,
) -> dict[str, Any]:
    """Start `session` over under a new sessionId. Its transcript and runs move to an archived
    row keyed `<key>:reset:<old id, 8 chars>` with the old sessionId (archive reason `reset`,
    which `resetArchiveRetention` may delete), so the old transcript stays browsable
    (/api/v1/transcripts/<old id>.jsonl). Refused while a run is in flight: a running turn
    would append its reply to the fresh transcript."""
    settings = settings or keys.KeySettings()
    display = keys.display_key(session.key, settings)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if expected_session_id and expected_session_id != locked.session_id:
            raise SessionChanged(display, "reset")
        if has_run_in_flight(locked):
            raise InvalidArgument(active_run_text(display, "reset"))
        old_id = locked.session_id
        # Free the unique sessionId for the archived row that keeps the old transcript.
        Session.objects.filter(pk=locked.pk).update(session_id=new_session_id())
        previous = Session.objects.create(
            key=f"{locked.key}:reset:{old_id.replace('-', '')[:8]}"[: keys.MAX_KEY_LENGTH],
            session_id=old_id,
            agent_id=locked.agent_id,
            kind=locked.kind,
            row_channel=locked.row_channel,
            label=f"{locked.label or display} (before reset)"[:200],
            last_seq=locked.last_seq,
            updated_at=locked.updated_at,
            created_at=locked.created_at,
            archived_at=timezone.now(),
            archive_reason=RESET_REASON,
            extra={"resetOf": locked.key},
            # A cold transcript's file goes with its rows: reading the fresh session must not
            # restore the old transcript into it (cold_storage.ensure_hot).
            cold_at=locked.cold_at,
            cold_file=locked.cold_file,
        )
        Message.objects.filter(session=locked).update(session=previous)
        Run.objects.filter(session=locked).update(session=previous)
        store.save_changed(
            locked,
            {
                "session_id": new_session_id(),
                "last_seq": 0,
                "cold_at": None,
                "cold_file": "",
                "hot_until": None,
                "run_status": "",
                "input_tokens": None,
                "output_tokens": None,
                "total_tokens": None,
                "context_tokens": None,
                "extra": {**(locked.extra or {}), "previousSessionId": old_id},
            },
        )
    session.refresh_from_db()
    return {
        "ok": True,
        "key": display,
        "sessionId": session.session_id,
        "previousSessionId": old_id,
        "previousKey": keys.display_key(previous.key, settings),
    }


def delete(
    session: Session,
    *,
    expected_session_id: str | None = None,
    archived_only: bool = True,
    settings: keys.KeySettings | None = None,
) -> dict[str, Any]:
    """Delete `session` with its transcript, runs and cold file. Only an archived one
    (`archived_only`, as operator.write callers must send), never a main session, never while a
    run is in flight. The cold file goes after commit, so a rollback keeps it. The tool, the
    REST and WebSocket forms, the command and retention."""
    settings = settings or keys.KeySettings()
    display = keys.display_key(session.key, settings)
    with transaction.atomic():
        locked = Session.objects.select_for_update().filter(pk=session.pk).first()
        if locked is None or (expected_session_id and expected_session_id != locked.session_id):
            raise SessionChanged(display, "deletion")
        check_deletable(locked, settings)
        if archived_only and not locked.archived:
            raise InvalidArgument(
                f"Session {display} is not archived. Archive it first, then delete it."
            )
        cold_file = locked.cold_file
        locked.delete()
        if cold_file:
            transaction.on_commit(lambda: cold_storage.remove_file(cold_file))
    return {"ok": True, "key": display, "deleted": True, "archived": []}


def archive_then_delete(
    session: Session, *, expected_session_id: str, settings: keys.KeySettings
) -> dict[str, Any]:
    """The tool's delete: archive (stopping its work), then delete the archived session."""
    display = keys.display_key(session.key, settings)
    if session.key == keys.main_session_key(session.agent_id, settings):
        raise InvalidArgument(f"Cannot delete the main session ({display}).")
    if expected_session_id != session.session_id:
        raise SessionChanged(display, "deletion")
    check_archivable(session, settings)
    archive(session)
    return delete(session, expected_session_id=expected_session_id, settings=settings)


# --- the group catalog ------------------------------------------------------------------------


def group_name(value: Any, label: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{label} required")
    value = value.strip()
    if len(value) > MAX_GROUP_NAME:
        raise InvalidArgument(f"{label} too long")
    store.check_storable(value, label)  # a path's name (DELETE /groups/<name>/) is no body's
    return value


def group_list() -> dict[str, Any]:
    return {
        "groups": [
            {"name": name, "position": position}
            for name, position in SessionGroup.objects.values_list("name", "position")
        ]
    }


def ensure_group(name: str) -> None:
    if not SessionGroup.objects.filter(name=name).exists():
        last = SessionGroup.objects.aggregate(m=Max("position"))["m"]
        SessionGroup.objects.get_or_create(name=name, defaults={"position": (last or 0) + 1})


def check_catalog_owner(requester: Requester, action: str) -> None:
    """Who may change the group catalog (group_set, group_rename, group_delete): the owner,
    an operator key or a model turn the owner started (check_owner), never a sandboxed one."""
    check_owner(requester)
    if requester.is_operator or (requester.owner_turn and not requester.sandboxed):
        return
    raise AccessDenied(CATALOG_TEXT.format(action=action))


def group_set(requester: Requester, names: Any) -> dict[str, Any]:
    """Replace the ordered catalog: new names are created, omitted empty groups deleted; an
    omitted group that still has members is refused. Sessions never move."""
    check_catalog_owner(requester, "group_set")
    if not isinstance(names, list) or not names:
        raise InvalidArgument("names required")
    wanted = [group_name(n, f"names[{i}]") for i, n in enumerate(names)]
    if len(set(wanted)) != len(wanted):
        raise InvalidArgument("names must not repeat a group")
    with transaction.atomic():
        dropped = SessionGroup.objects.exclude(name__in=wanted)
        busy = sorted(
            set(
                Session.objects.filter(category__in=dropped.values("name")).values_list(
                    "category", flat=True
                )
            )
        )
        if busy:
            raise InvalidArgument(
                f"Cannot drop a group that has sessions: {', '.join(busy)} "
                "(group_rename or group_delete it first)"
            )
        dropped.delete()
        for position, name in enumerate(wanted):
            SessionGroup.objects.update_or_create(name=name, defaults={"position": position})
    return {"ok": True, **group_list()}


def group_rename(requester: Requester, name: Any, to: Any) -> dict[str, Any]:
    """Rename a group and repoint its members (a rename onto an existing group merges)."""
    check_catalog_owner(requester, "group_rename")
    old, new = group_name(name), group_name(to, "to")
    with transaction.atomic():
        group = SessionGroup.objects.select_for_update().filter(name=old).first()
        if group is None:
            raise InvalidArgument(f"Unknown group: {old}")
        members = list(Session.objects.filter(category=old).values_list("pk", flat=True))
        if SessionGroup.objects.filter(name=new).exclude(pk=group.pk).exists():
            group.delete()
        else:
            group.name = new
            group.save(update_fields=["name"])
        if members:
            Session.objects.update_changed(members, "updated", category=new)
    return {"ok": True, **group_list(), "updatedSessions": len(members)}


def group_delete(requester: Requester, name: Any) -> dict[str, Any]:
    """Delete a group; its members become ungrouped."""
    check_catalog_owner(requester, "group_delete")
    old = group_name(name)
    with transaction.atomic():
        deleted, _ = SessionGroup.objects.filter(name=old).delete()
        members = list(Session.objects.filter(category=old).values_list("pk", flat=True))
        if not deleted and not members:
            raise InvalidArgument(f"Unknown group: {old}")
        if members:
            Session.objects.update_changed(members, "updated", category="")
    return {"ok": True, **group_list(), "updatedSessions": len(members)}


def set_owner(session: Session, owner: dict[str, Any]) -> None:
    """assign_owner: display and responsibility only, not access (9.6)."""
    Session.objects.update_changed(
        [session.pk], "updated", extra={**(session.extra or {}), "owner": owner}
    )
    session.refresh_from_db()
