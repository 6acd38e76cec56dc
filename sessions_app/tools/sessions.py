"""sessions (9.6 §2.3): owner-gated self-service — patch, reset, delete, owners, the group catalog.

The work is session_admin's; this module reads the arguments and picks the action. Who may
manage what is session_admin.find_managed's rule (operators: any session; agent keys: what
their visibility shows them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..manage import session_admin
from ..models import Agent
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Boolean, Declaration, String, Structured, Tool
from .shapes import BOOLEAN, INTEGER, STRING, array, obj

ACTIONS = (
    "cloud_profiles",
    "patch",
    "reset",
    "delete",
    "assign_owner",
    "group_list",
    "group_set",
    "group_rename",
    "group_delete",
)
TARGETS_TEXT = (
    "targets is only valid for patch and cannot be combined with sessionKey or expectedSessionId"
)
SELF_RESET_TEXT = "Cannot reset the session running this tool"
SELF_DELETE_TEXT = "Cannot delete the session running this tool"
OWNER_TEXT = "assign_owner requires ownerType and ownerId"


def _field(name: str, shape: dict, description: str) -> Structured:
    # Structured: the tool reads the value itself, for 9.6's texts (`<field> must be boolean`).
    return Structured(name, description, shape=shape)


DECLARATION = Declaration(
    name="sessions",
    policy=Policy(groups=(SESSIONS_GROUP,), owner_only=True),
    description=(
        "Manage sessions: patch (label, icon, color, group, statusNote, pinned, archived, model, "
        "thinkingLevel, sendPolicy) one session or a batch of targets, reset (a fresh "
        "transcript; the old one is kept, archived), delete (archive, then delete), "
        "assign_owner, and the group catalog (group_list, group_set, group_rename, "
        "group_delete). Archiving or deleting another session needs its expectedSessionId "
        "(the sessionId from sessions_list)."
    ),
    params=(
        String("action", "One of: " + ", ".join(ACTIONS) + ".", required=True, enum=ACTIONS),
        String(
            "sessionKey",
            "The session (default: your own, for patch).",
            max_length=keys.MAX_KEY_LENGTH,
        ),
        String(
            "expectedSessionId", "The sessionId you expect the session to have.", max_length=128
        ),
        _field(
            "targets",
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"sessionKey": STRING, "expectedSessionId": STRING},
                    "required": ["sessionKey"],
                },
            },
            "patch only: 1-100 sessions to patch alike.",
        ),
        _field("label", STRING, "Label (empty clears)."),
        _field(
            "icon", STRING, "One emoji, a named icon (braces|book|monitor|bot|kanban|coins) or SVG."
        ),
        _field("color", STRING, "Color (empty clears)."),
        _field("group", STRING, "Group name; null or empty ungroups; a new name creates it."),
        _field("statusNote", STRING, "A status note of at most 120 characters (empty clears)."),
        _field("attention", STRING, '"clear" or an icon id; needs an active statusNote.'),
        _field("ttlMinutes", {"type": "number"}, "How long the status note lasts, 1-120 (30)."),
        _field("pinned", BOOLEAN, "Pin or unpin."),
        _field("archived", BOOLEAN, "Archive or restore (needs expectedSessionId for others)."),
        _field("model", STRING, "Model override (empty clears)."),
        _field("thinkingLevel", STRING, "Thinking level (empty clears)."),
        _field("sendPolicy", STRING, '"allow", "deny" or "inherit".'),
        String("ownerType", "assign_owner: human or agent.", max_length=16),
        String("ownerId", "assign_owner: who (a configured agent for agent).", max_length=200),
        _field("names", {"type": "array", "items": STRING}, "group_set: the ordered group names."),
        String("name", "group_rename/group_delete: the group.", max_length=600),
        String("to", "group_rename: the new name.", max_length=600),
        Boolean(
            "deleteTranscript",
            "delete: accepted for 9.6; the transcript goes with the session.",
            default=True,
        ),
    ),
    result=obj(
        {
            "status": {"type": "string", "enum": ["updated", "scheduled", "partial", "error"]},
            "ok": BOOLEAN,
            "sessionKey": STRING,
            "key": STRING,
            "updated": array(STRING),
            "resolved": obj({}),
            "message": STRING,
            "succeeded": array(INTEGER),
            "failed": array(INTEGER),
            "errors": array(obj({"index": INTEGER, "message": STRING})),
            "warning": STRING,
            "resolvedOmitted": obj({"reason": STRING}),
            "sessionId": STRING,
            "previousSessionId": STRING,
            "previousKey": STRING,
            "deleted": BOOLEAN,
            "archived": array(STRING),
            "owner": obj({"type": STRING, "id": STRING, "label": STRING}),
            "groups": array(obj({"name": STRING, "position": INTEGER}, ("name", "position"))),
            "updatedSessions": INTEGER,
        }
    ),
)


@DECLARATION.arguments
@dataclass(frozen=True)
class SessionsArgs:
    action: str
    sessionKey: str | None
    expectedSessionId: str | None
    targets: Any
    label: Any
    icon: Any
    color: Any
    group: Any
    statusNote: Any
    attention: Any
    ttlMinutes: Any
    pinned: Any
    archived: Any
    model: Any
    thinkingLevel: Any
    sendPolicy: Any
    ownerType: str | None
    ownerId: str | None
    names: Any
    name: str | None
    to: str | None
    deleteTranscript: bool
    raw: Mapping[str, Any]  # the arguments as sent (after camel())


def sessions(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """Do `action` (§2.3). Bad input is InvalidArgument (400); a session the caller may not
    manage is Forbidden (`Session not visible from session tools: <key>`), and so is any call
    from a model turn the owner did not start, or from a sub-agent (session_admin.check_owner)."""
    session_admin.check_owner(requester)
    a = DECLARATION.read(args, SessionsArgs)
    if a.action not in ACTIONS:
        raise InvalidArgument(f"Unknown action: {a.action}")
    if a.targets is not None and (
        a.action != "patch" or a.sessionKey is not None or a.expectedSessionId is not None
    ):
        raise InvalidArgument(TARGETS_TEXT)
    return HANDLERS[a.action](requester, a)


def _caller(requester: Requester) -> session_admin.Caller:
    current = session_admin.Session.objects.filter(key=requester.session_key).first()
    return session_admin.Caller(
        current_key=requester.session_key,
        in_run=current is not None and session_admin.has_run_in_flight(current),
    )


def _patch(requester: Requester, a: SessionsArgs) -> dict:
    changes = session_admin.read_patch(a.raw)
    session_admin.check_send_policy_override(requester, changes)
    caller = _caller(requester)
    if a.targets is not None:
        return session_admin.patch_targets(requester, a.targets, changes, caller=caller)
    session = session_admin.find_managed(requester, a.sessionKey or requester.session_key)
    return session_admin.patch(
        session,
        changes,
        caller=caller,
        expected_session_id=a.expectedSessionId,
        settings=requester.key_settings,
    )


def _other_session(
    requester: Requester, a: SessionsArgs, *, own_text: str, expected: bool = False
) -> session_admin.Session:
    """The session `sessionKey` names (required; `expectedSessionId` too when `expected`),
    which may not be the caller's own (`own_text`)."""
    if a.sessionKey is None:
        raise InvalidArgument("sessionKey required")
    if expected and a.expectedSessionId is None:
        raise InvalidArgument("expectedSessionId required")
    session = session_admin.find_managed(requester, a.sessionKey)
    if session.key == requester.session_key:
        raise InvalidArgument(own_text)
    return session


def _reset(requester: Requester, a: SessionsArgs) -> dict:
    session = _other_session(requester, a, own_text=SELF_RESET_TEXT)
    return session_admin.reset(
        session, expected_session_id=a.expectedSessionId, settings=requester.key_settings
    )


def _delete(requester: Requester, a: SessionsArgs) -> dict:
    session = _other_session(requester, a, own_text=SELF_DELETE_TEXT, expected=True)
    assert a.expectedSessionId is not None  # _other_session(expected=True) refused its absence
    return session_admin.archive_then_delete(
        session, expected_session_id=a.expectedSessionId, settings=requester.key_settings
    )


def _assign_owner(requester: Requester, a: SessionsArgs) -> dict:
    if a.ownerType not in ("human", "agent") or a.ownerId is None:
        raise InvalidArgument(OWNER_TEXT)
    session = session_admin.find_managed(requester, a.sessionKey or requester.session_key)
    owner = {"type": a.ownerType, "id": a.ownerId}
    if a.ownerType == "agent":
        agent = Agent.objects.filter(pk=keys.normalize_agent_id(a.ownerId)).first()
        if agent is None:
            raise InvalidArgument(f"Unknown agent: {a.ownerId}")
        owner = {"type": "agent", "id": agent.pk, **({"label": agent.name} if agent.name else {})}
    session_admin.set_owner(session, owner)
    return {
        "status": "updated",
        "sessionKey": keys.display_key(session.key, requester.key_settings),
        "owner": owner,
    }


def _cloud_profiles(requester: Requester, a: SessionsArgs) -> dict:
    raise InvalidArgument("cloud_profiles is available on cloud workers only")


# Typed so mypy checks the lambdas' use of the arguments too.
HANDLERS: dict[str, Callable[[Requester, SessionsArgs], dict]] = {
    "cloud_profiles": _cloud_profiles,
    "patch": _patch,
    "reset": _reset,
    "delete": _delete,
    "assign_owner": _assign_owner,
    "group_list": lambda requester, a: session_admin.group_list(),
    "group_set": lambda requester, a: session_admin.group_set(requester, a.names),
    "group_rename": lambda requester, a: session_admin.group_rename(requester, a.name, a.to),
    "group_delete": lambda requester, a: session_admin.group_delete(requester, a.name),
}


TOOL = Tool(DECLARATION, sessions)
