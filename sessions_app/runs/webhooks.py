"""Completion webhooks (beyond OpenClaw; docs/orchestration.md): when a send's run or a spawned
task that an agent's session asked for finishes, an event goes to that agent's webhook through
the delivery outbox (signed, retried, with a visible final state).

Which agents have a webhook is read at most every CACHE_SECONDS per process, so a finishing run
costs no query for it: a webhook set in the admin applies within that time.
"""

from __future__ import annotations

import time

from ..delivery import enqueue_webhook_event
from ..models import Agent, Run, Session

CACHE_SECONDS = 5.0


class _Cache:
    read_at = -CACHE_SECONDS
    agents: frozenset[str] = frozenset()


def agents_with_webhooks() -> frozenset[str]:
    now = time.monotonic()
    if now - _Cache.read_at >= CACHE_SECONDS:
        ids = Agent.objects.exclude(webhook_url="").values_list("id", flat=True)
        _Cache.agents, _Cache.read_at = frozenset(ids), now
    return _Cache.agents


def forget() -> None:
    """Read again on the next finish (after an agent's webhook changed in this process)."""
    _Cache.read_at = -CACHE_SECONDS


def finished(
    run: Run, *, kind: str, requester: Session | None, task_run: Run | None = None
) -> None:
    """In the finishing transaction: the event for the requester's agent, if it has a webhook."""
    if requester is None or requester.agent_id not in agents_with_webhooks():
        return
    event = {
        "event": "run.finished",
        "kind": kind,
        "runId": str(run.pk),
        "sessionKey": run.session.key,
        "requesterSessionKey": requester.key,
        "agentId": requester.agent_id,
        "status": run.status,
        "runtimeMs": run.runtime_ms,
        "usage": run.usage or {},
        "finishedAt": run.finished_at.isoformat().replace("+00:00", "Z")
        if run.finished_at
        else None,
    }
    if task_run is not None:
        event["taskRunId"] = str(task_run.pk)
    if run.reply:
        event["reply"] = run.reply
    if run.error:
        event["error"] = run.error
    enqueue_webhook_event(session=requester, agent_id=requester.agent_id, event=event, run=run)
