"""sessions_yield (OpenClaw 9.6 §1.7): end this turn until the children it spawned have settled,
then get one new turn here with all their results; or, as a sub-agent, pause until the requester
sends a continuation (a plain sessions_send). docs/orchestration.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ..access.identity import Requester
from ..models import Run, Session
from ..runs import completions, subagent_tasks
from ..runs.chain import current_run
from ..runs.engine import start_follow_up
from ..runs.subagent_tasks import Task
from ..runs.tool_policy import Policy
from .declaration import Declaration, String, Tool
from .shapes import BOOLEAN, STRING, array, obj

DEFAULT_MESSAGE = "Turn yielded."
NO_CONTEXT = "Yield not supported in this context"
BAD_WAIT_FOR = 'waitFor must be "message" when provided.'
NOTHING_PENDING = (
    "No pending child completion is owned by this turn. If the assigned work is complete, "
    "return its result normally. An unfinished subagent waiting for an incoming continuation "
    'must explicitly set waitFor: "message".'
)

DECLARATION = Declaration(
    name="sessions_yield",
    policy=Policy(orchestrator=True, never_denied=True),
    description=(
        "End this turn and wait for the sub-agents this turn spawned: when all have finished, "
        "one new turn starts here with every result. Never poll. A sub-agent can instead pause "
        'with waitFor "message" until its requester sends it a continuation.'
    ),
    params=(
        String(
            "message",
            f'Private context for the resumed turn (default "{DEFAULT_MESSAGE}").',
            max_length=4096,
        ),
        String(
            "acknowledgment",
            "A short waiting reply to end this turn with (e.g. what you are waiting for).",
            max_length=1024,
        ),
        String("waitFor", '"message": pause until a continuation arrives.', max_length=20),
    ),
    result=obj(
        {
            "status": {
                "type": "string",
                "enum": ["yielded", "already_pending", "error", "forbidden"],
            },
            "acknowledgment": STRING,
            "message": STRING,
            "error": STRING,
            "pendingChildren": array(
                obj(
                    {
                        "childSessionKey": STRING,
                        "label": STRING,
                        "startedAt": STRING,
                        "state": {"type": "string", "enum": ["running", "completing", "paused"]},
                        "wakeArmed": BOOLEAN,
                    },
                    ("childSessionKey", "state", "wakeArmed"),
                )
            ),
        },
        ("status",),
    ),
)


@DECLARATION.arguments
@dataclass(frozen=True)
class YieldArgs:
    message: str | None
    acknowledgment: str | None
    waitFor: str | None


def sessions_yield(*, requester: Requester, args: Any) -> dict:
    """Checks in 9.6's order: waitFor, a turn to yield, this turn's children, earlier turns'
    children, a pause; then the turn ends ({status: "yielded"})."""
    a = DECLARATION.read(args, YieldArgs)
    if a.waitFor is not None and a.waitFor != "message":
        return {"status": "error", "error": BAD_WAIT_FOR}
    turn = current_run.get()
    if turn is None or turn.session.key != requester.session_key:
        return {"status": "error", "error": NO_CONTEXT}
    if subagent_tasks.owed_by_turn(turn):
        return _yield(turn, Run.YIELDED_FOR_CHILDREN, a.message, a.acknowledgment)
    earlier = subagent_tasks.owed_by_earlier_turns(requester.session_key, turn)
    if earlier:
        return already_pending(earlier)
    if a.waitFor == "message":
        return _yield(turn, Run.YIELDED_FOR_MESSAGE, a.message, a.acknowledgment)
    return {"status": "error", "error": NOTHING_PENDING}


def _yield(turn: Run, kind: str, message: str | None, acknowledgment: str | None) -> dict:
    with transaction.atomic():
        # The row lock a finishing child takes on its requester (engine.lock_sessions): a child
        # that ends while this turn yields either commits first (and is absorbed below) or
        # waits, then sees the yield. Without it, on PostgreSQL, both could miss the other and
        # the child's result would go to a turn of its own instead of the batch.
        Session.objects.select_for_update().filter(pk=turn.session_id).first()
        turn.mark_yielded(kind, note=message or DEFAULT_MESSAGE)
        if kind == Run.YIELDED_FOR_CHILDREN:
            # Children that ended before the yield join the batch, and if none is left going
            # the successor turn is started now (it waits for this turn to end).
            for follow_up in completions.absorb_into_batch(turn):
                start_follow_up(follow_up)
    result: dict[str, Any] = {"status": "yielded"}
    if acknowledgment:
        result["acknowledgment"] = acknowledgment
    return result


def already_pending(tasks: list[Task]) -> dict:
    yielded = any(t.run.parent_run is not None and t.run.parent_run.yielded for t in tasks)
    keys = ", ".join(t.session.key for t in tasks)
    verb = "already yielded for" if yielded else "already spawned"
    return {
        "status": "already_pending",
        "message": (
            f"An earlier turn of this session {verb} {len(tasks)} child session(s) whose "
            f"completion is still pending: {keys}. This turn owns no new claim, so no yield is "
            "needed: end this turn normally."
        ),
        "pendingChildren": [pending_row(t) for t in tasks],
    }


def pending_row(task: Task) -> dict:
    row: dict[str, Any] = {"childSessionKey": task.session.key}
    if task.run.label:
        row["label"] = task.run.label
    if task.run.started_at:
        row["startedAt"] = task.run.started_at.isoformat().replace("+00:00", "Z")
    row["state"] = "paused" if task.paused else "completing" if task.ended else "running"
    parent = task.run.parent_run
    row["wakeArmed"] = bool(parent is not None and parent.yielded == Run.YIELDED_FOR_CHILDREN)
    return row


TOOL = Tool(DECLARATION, sessions_yield)
