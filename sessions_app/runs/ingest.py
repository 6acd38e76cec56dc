"""Ingesting a gateway's messages (`POST /api/v1/sessions/{key}/messages/`): append them and,
with `"run": true`, start the reply run as OpenClaw's chat.send does. Above the store because it
starts runs; the store only writes.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from openclaw_common.errors import InvalidArgument
from policies_app.send_policy import check_send, send_blocked_error

from .. import store
from ..lib.args import closed
from ..models import ApiKey, GatewayConfig, Message
from .chain import Chain
from .engine import start_run


def append_messages(*, api_key: ApiKey, key: str, body: Any) -> dict:
    """`POST /sessions/{key}/messages/`: {"messages": [...], "run"?: false} → {appended, firstSeq, lastSeq}."""
    store.require_scope(api_key, ApiKey.OPERATOR, ApiKey.INGEST)
    if not isinstance(body, dict):
        raise InvalidArgument("body must be a JSON object")
    closed(body, {"messages", "run"})
    run = body.get("run", False)
    if not isinstance(run, bool):
        raise InvalidArgument("run must be a boolean")
    messages = store.read_messages(body.get("messages"))
    session = store.get_session(key, settings=GatewayConfig.load().key_settings)
    command = store.send_command_of(messages)
    if command is not None:
        return store.apply_send_command(session, messages, command)
    if not run:
        with transaction.atomic():
            first, last = store.append_to_session(session, messages)
            store.record_human_message(session, messages)
        return {"appended": len(messages), "firstSeq": first, "lastSeq": last}
    # OpenClaw chat.send: the inbound message is kept whatever happens; the reply run is subject
    # to the send policy.
    with transaction.atomic():
        first, last = store.append_to_session(session, messages)
        store.record_human_message(session, messages)
        result: dict[str, Any] = {"appended": len(messages), "firstSeq": first, "lastSeq": last}
        session.refresh_from_db(fields=["last_seq"])
        if not check_send(session).allowed:
            result["run"] = {"status": "error", "error": send_blocked_error()}
            return result
        started = start_run(
            session=session,
            kind="ingest",
            message=None,
            chain=Chain(uuid.uuid4(), (session.agent_id,)),
            sender_is_owner=sent_by_owner(api_key, messages),
        )
    result["run"] = {"status": "accepted", "runId": str(started.pk)}
    return result


def sent_by_owner(api_key: ApiKey, messages: list[Message]) -> bool:
    """Whether the turn an ingested batch starts is the owner's (9.6's senderIsOwner, which
    gates the `sessions` tool): its last person's message is marked `senderIsOwner: true` by
    the gateway that forwarded it, or, unmarked, was sent with an operator key (whose holder
    is the owner). `senderIsOwner: false` is never the owner, whatever the key."""
    human = [
        m
        for m in messages
        if m.role == "user" and (m.provenance or {}).get("kind") != "inter_session"
    ]
    if not human:
        return False
    marked = human[-1].extra.get("senderIsOwner")
    if marked is not None:
        return marked is True
    return api_key.scope == ApiKey.OPERATOR
