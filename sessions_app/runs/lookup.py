"""Reading and aborting runs on behalf of a requester (the /api/v1/runs/ resources)."""

from __future__ import annotations

import uuid
from datetime import datetime

from openclaw_common import keys
from openclaw_common.errors import Forbidden, InvalidArgument, NotFound

from ..access import visibility
from ..access.identity import Requester
from ..models import Run


def get_run_for(requester: Requester, run_id: object) -> Run:
    """The run, if the requester started it or may read its session's history."""
    try:
        run_uuid = uuid.UUID(str(run_id))
    except ValueError:
        raise InvalidArgument("runId must be a UUID") from None
    run = Run.objects.select_related("session").filter(pk=run_uuid).first()
    if run is None:
        raise NotFound(f"Run not found: {run_id}")
    if requester.is_operator or run.requester_key == requester.session_key:
        return run
    policy = visibility.policy_for(requester)
    denied = visibility.check(
        policy,
        target_key=run.session.key,
        target_spawned_by=run.session.spawned_by,
        action="history",
    )
    if denied:
        raise Forbidden(denied)
    return run


def run_as_dict(run: Run, *, settings: keys.KeySettings | None = None) -> dict:
    settings = settings or keys.KeySettings()

    def iso(value: datetime | None) -> str | None:
        return value.isoformat().replace("+00:00", "Z") if value else None

    data = {
        "runId": str(run.pk),
        "status": run.status,
        "kind": run.kind,
        "sessionKey": keys.display_key(run.session.key, settings),
        "requesterKey": run.requester_key or None,
        "chainId": str(run.chain_id),
        "chainAgents": run.chain_agents,
        "parentRunId": str(run.parent_run_id) if run.parent_run_id else None,
        "createdAt": iso(run.created_at),
        "startedAt": iso(run.started_at),
        "finishedAt": iso(run.finished_at),
        "runtimeMs": run.runtime_ms,
        "attempts": run.attempts,
    }
    if run.reply:
        data["reply"] = run.reply
    if run.error:
        data["error"] = run.error
    if run.usage:
        data["usage"] = run.usage
    return data
