"""session_status (9.6 §2.1): one session's status card, its state version and what changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openclaw_common import keys
from openclaw_common.errors import Forbidden, InvalidArgument, NotFound

from .. import state_log, store
from ..access import visibility
from ..access.identity import Requester
from ..access.resolve import find_session, forbidden_text
from ..models import Session
from ..reads import status_card
from ..runs import model_catalog
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Declaration, Integer, String, Tool
from .shapes import BOOLEAN, INTEGER, STRING, array, obj

ROUTE = obj(
    {"provider": STRING, "channel": STRING, "to": STRING, "accountId": STRING, "threadId": STRING}
)
EVENT = obj(
    {
        "sequence": INTEGER,
        "kind": {"type": "string", "enum": list(state_log.KINDS)},
        "actorType": {"type": "string", "enum": list(state_log.ACTOR_TYPES)},
        "occurredAt": INTEGER,
        "summary": STRING,
        "actorId": STRING,
        "runId": STRING,
        "payload": obj({"outcome": {"type": "string", "enum": ["error", "timeout", "cancelled"]}}),
    },
    ("sequence", "kind", "actorType", "occurredAt", "summary"),
)
STATE_CHANGES = obj(
    {
        "events": array(EVENT, f"Oldest first, at most {state_log.MAX_EVENTS}."),
        "truncated": BOOLEAN,
        "earliestAvailableSequence": INTEGER,
        "historyGap": BOOLEAN,
    },
    ("events", "truncated", "earliestAvailableSequence", "historyGap"),
)
NULLABLE_STRING = {"type": ["string", "null"]}

DECLARATION = Declaration(
    name="session_status",
    policy=Policy(groups=(SESSIONS_GROUP,)),
    description=(
        "Show a session's status card (model, tokens, time, tasks) and its state version; "
        'changesSince lists what changed after that version. model sets its model ("default" '
        "clears the override)."
    ),
    params=(
        String(
            "sessionKey",
            'Session key or sessionId (default, or "current": your own session).',
            max_length=keys.MAX_KEY_LENGTH,
        ),
        String("model", 'A model for the session; "default" clears the override.', max_length=200),
        Integer("changesSince", "Return the state events after this version."),
    ),
    result=obj(
        {
            "ok": {"type": "boolean", "enum": [True]},
            "sessionKey": STRING,
            "agentId": STRING,
            "changedModel": BOOLEAN,
            "stateVersion": INTEGER,
            "stateChanges": STATE_CHANGES,
            "model": STRING,
            "modelProvider": STRING,
            "modelOverride": NULLABLE_STRING,
            "statusText": STRING,
            "origin": ROUTE,
            "active": ROUTE,
            "deliveryContext": ROUTE,
        },
        ("ok", "sessionKey", "agentId", "changedModel", "stateVersion", "statusText"),
    ),
)


@DECLARATION.arguments
@dataclass(frozen=True)
class StatusArgs:
    sessionKey: str | None
    model: str | None
    changesSince: int | None


def status_session(requester: Requester, raw: str | None) -> Session:
    """The session `raw` names (default the caller's), if the caller may see it: 9.6's
    `Unknown sessionKey` / `Unknown sessionId` texts, visibility with the `Session status`
    prefix (checked first, so a hidden session's existence is not told)."""
    if raw is None or raw.lower() == "current":
        raw = requester.session_key
    policy = visibility.policy_for(requester)
    session, canonical, by_key = find_session(requester, raw)
    spawned_by = session.spawned_by if session else ""
    if session is not None or by_key:
        denied = forbidden_text(
            policy, raw, canonical=canonical, spawned_by=spawned_by, action="status"
        )
        if denied:
            raise Forbidden(denied)
    if session is None:
        raise NotFound(f"Unknown sessionKey: {raw}" if by_key else f"Unknown sessionId: {raw}")
    return session


def session_status(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """The status of `sessionKey` (default the caller's own session).

    Returns {ok, sessionKey, agentId, changedModel, stateVersion, statusText, origin?,
    deliveryContext?}; with `changesSince`, `stateChanges` (events after that version, at most
    200, `historyGap` when older ones are gone); with `model`, the session's model is set
    ("default" clears it) and model, modelProvider and modelOverride are reported.
    """
    a = DECLARATION.read(args, StatusArgs)
    session = status_session(requester, a.sessionKey)
    changed_model = False
    if a.model is not None:
        override = None if a.model.lower() == "default" else a.model
        if override is not None:
            check_model(override)
            override = model_catalog.check_session_model(session, override)
        changed_model = store.set_session_model(session, override)
    changes = None
    if a.changesSince is not None:
        changes = state_log.changes_since(session.pk, a.changesSince)
        version = changes.version
    else:
        version = state_log.version_of(session.pk)
    result: dict[str, Any] = {
        "ok": True,
        "sessionKey": keys.display_key(session.key, requester.key_settings),
        "agentId": session.agent_id,
        "changedModel": changed_model,
        "stateVersion": version,
    }
    if changes is not None:
        result["stateChanges"] = changes.to_json()
    if a.model is not None:
        result["model"] = session.model
        result["modelProvider"] = session.model_provider
        result["modelOverride"] = session.model or None
    # 9.6 reports `active` only for the live run's own session.
    live = session.key == requester.session_key and session.run_status == "running"
    route = status_card.route_of(session, live=live)
    result["statusText"] = status_card.text(
        session, route=route, state=(version, changes.to_json()) if changes else None
    )
    result.update(route)
    return result


def check_model(value: str) -> None:
    if any(c.isspace() for c in value):
        raise InvalidArgument("model must not contain spaces")


TOOL = Tool(DECLARATION, session_status)
