"""The session-management RPCs of /ws/ (9.6 §2.4): sessions.patch, sessions.patchMany,
sessions.reset, sessions.delete, sessions.groups.list|put|rename|delete, sessions.assignOwner.

Each is a plain function `(requester, params) -> payload` calling session_admin (the consumer
runs it off the event loop); params are closed objects, so an unknown key is an
`invalid_request` error frame, as are 9.6's retired and lineage fields.
"""

from __future__ import annotations

from typing import Any

from openclaw_common import keys
from openclaw_common.errors import AccessDenied, InvalidArgument

from ..access.identity import Requester
from ..lib import args
from ..manage import patch_fields, session_admin
from ..models import Session
from ..tools.sessions import TOOL as SESSIONS_TOOL

# Nobody is "current" over the gateway: archiving always names the expected sessionId.
RPC_CALLER = session_admin.Caller(current_key="")
ADDRESS = frozenset({"key", "agentId", "expectedSessionId"})
GUARDS = session_admin.PATCH_GUARDS
# sessions.patch spells the sessions tool's `group` as `category` (9.6 §2.4).
RPC_SPELLING = {"group": "category"}
PATCH_NAMES = frozenset(
    (*(RPC_SPELLING.get(name, name) for name in session_admin.PATCH_FIELDS), *patch_fields.FIELDS)
)


def closed(params: dict, allowed: frozenset[str]) -> None:
    patch_fields.refuse_retired(params)
    args.closed(params, allowed)


def target(requester: Requester, params: dict, name: str = "key") -> Session:
    """The session `params[name]` names (agentId, if given, must be its agent)."""
    raw = params.get(name)
    if not isinstance(raw, str) or not raw.strip() or len(raw) > keys.MAX_KEY_LENGTH:
        raise InvalidArgument(f"{name} must be a non-empty string")
    session = session_admin.find_managed(requester, raw)
    agent_id = params.get("agentId")
    if agent_id is not None and agent_id != session.agent_id:
        raise InvalidArgument("session key agent does not match agentId")
    return session


def expected(params: dict) -> str | None:
    value = params.get("expectedSessionId")
    if value is not None and not isinstance(value, str):
        raise InvalidArgument("expectedSessionId must be a string")
    return value


def entry(session: Session, requester: Requester) -> dict:
    """The session's row, with the sessions.patch preferences it keeps (patch_fields)."""
    return patch_fields.entry_of(session, requester.key_settings)


def patch_changes(requester: Requester, fields: dict) -> dict[str, Any]:
    tool_name = {rpc: tool for tool, rpc in RPC_SPELLING.items()}
    return session_admin.read_client_patch(
        requester, {tool_name.get(k, k): v for k, v in fields.items()}
    )


def sessions_patch(requester: Requester, params: dict) -> dict:
    closed(params, ADDRESS | GUARDS | PATCH_NAMES)
    session = target(requester, params)
    changes = patch_changes(
        requester, {k: v for k, v in params.items() if k not in ADDRESS | GUARDS}
    )
    result = session_admin.patch(
        session,
        changes,
        caller=RPC_CALLER,
        expected_session_id=expected(params),
        settings=requester.key_settings,
        guards=session_admin.guards_of(params),
    )
    session.refresh_from_db()
    return {
        "ok": True,
        "key": result["sessionKey"],
        "entry": entry(session, requester),
        "updated": result["updated"],
        **({"ignored": result["ignored"]} if "ignored" in result else {}),
        "resolved": {
            "modelProvider": session.model_provider or None,
            "model": session.model or None,
            "thinkingLevel": session.thinking_level or None,
        },
    }


def sessions_patch_many(requester: Requester, params: dict) -> dict:
    closed(params, frozenset({"targets", "patch"}))
    fields = params.get("patch")
    if not isinstance(fields, dict) or not fields:
        raise InvalidArgument("patch must be an object with at least one field")
    closed(fields, PATCH_NAMES)
    changes = patch_changes(requester, fields)
    targets = params.get("targets")
    if not isinstance(targets, list) or not 1 <= len(targets) <= session_admin.MAX_TARGETS:
        raise InvalidArgument("targets must be an array of 1 to 100 entries")
    outcomes = []
    for i, item in enumerate(targets):
        if not isinstance(item, dict):
            raise InvalidArgument(f"targets[{i}] must be an object")
        closed(item, ADDRESS | GUARDS)
        key = item.get("key")
        try:
            session = target(requester, item)
            session_admin.patch(
                session,
                changes,
                caller=RPC_CALLER,
                expected_session_id=expected(item),
                settings=requester.key_settings,
                guards=session_admin.guards_of(item),
            )
            outcomes.append(
                {"ok": True, "key": keys.display_key(session.key, requester.key_settings)}
            )
        except (InvalidArgument, AccessDenied) as exc:
            outcomes.append({"ok": False, "key": key, "error": exc.message})
    return {"outcomes": outcomes}


def sessions_reset(requester: Requester, params: dict) -> dict:
    closed(params, ADDRESS | {"reason"})
    if params.get("reason") not in (None, "new", "reset"):
        raise InvalidArgument('reason must be "new" or "reset"')
    session = target(requester, params)
    result = session_admin.reset(
        session, expected_session_id=expected(params), settings=requester.key_settings
    )
    return {**result, "entry": entry(session, requester)}


def sessions_delete(requester: Requester, params: dict) -> dict:
    allowed = ADDRESS | {
        "deleteTranscript",
        "expectedLifecycleRevision",
        "expectedSessionUpdatedAt",
        "emitLifecycleHooks",
        "archivedOnly",
    }
    closed(params, allowed)
    for flag in ("deleteTranscript", "emitLifecycleHooks", "archivedOnly"):
        if flag in params and not isinstance(params[flag], bool):
            raise InvalidArgument(f"{flag} must be boolean")
    session = target(requester, params)
    # An operator key is the gateway's owner (operator.admin): it may delete a live session;
    # everyone else must archive it first (`archivedOnly:true`, as operator.write callers).
    archived_only = params.get("archivedOnly", not requester.is_operator)
    if not archived_only and not requester.is_operator:
        raise InvalidArgument("archivedOnly must be true for this key")
    return session_admin.delete(
        session,
        expected_session_id=expected(params),
        archived_only=archived_only,
        settings=requester.key_settings,
    )


def sessions_assign_owner(requester: Requester, params: dict) -> dict:
    closed(params, frozenset({"key", "agentId", "owner"}))
    owner = params.get("owner")
    if not isinstance(owner, dict) or set(owner) != {"type", "id"}:
        raise InvalidArgument("assign_owner requires ownerType and ownerId")

    return SESSIONS_TOOL.run(
        requester=requester,
        args={
            "action": "assign_owner",
            "sessionKey": params.get("key"),
            "ownerType": owner["type"],
            "ownerId": owner["id"],
        },
    )


def groups_list(requester: Requester, params: dict) -> dict:
    closed(params, frozenset())
    return session_admin.group_list()


def groups_put(requester: Requester, params: dict) -> dict:
    closed(params, frozenset({"names", "sectionOrder"}))
    return session_admin.group_set(requester, params.get("names"))


def groups_rename(requester: Requester, params: dict) -> dict:
    closed(params, frozenset({"name", "to"}))
    return session_admin.group_rename(requester, params.get("name"), params.get("to"))


def groups_delete(requester: Requester, params: dict) -> dict:
    closed(params, frozenset({"name"}))
    return session_admin.group_delete(requester, params.get("name"))


RPCS = {
    "sessions.patch": sessions_patch,
    "sessions.patchMany": sessions_patch_many,
    "sessions.reset": sessions_reset,
    "sessions.delete": sessions_delete,
    "sessions.assignOwner": sessions_assign_owner,
    "sessions.groups.list": groups_list,
    "sessions.groups.put": groups_put,
    "sessions.groups.rename": groups_rename,
    "sessions.groups.delete": groups_delete,
}
