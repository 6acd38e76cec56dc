"""subagents (OpenClaw 9.6 §1.8): list, wait for and cancel the sub-agent tasks this session
spawned, read from the runs we store (runs/subagent_tasks.py). A child sees only its own
children. Cancelling stops the child and everything below it (runs/control.py)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from openclaw_common.dbstep import db_step
from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..models import Session
from ..runs import control, prompts, subagent_tasks
from ..runs.subagent_limits import is_leaf
from ..runs.subagent_tasks import Task
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Declaration, Integer, String, Structured, Tool
from .shapes import BOOLEAN, INTEGER, STRING, array, obj

ACTIONS = ("list", "wait", "cancel")
DEFAULT_RECENT_MINUTES, MAX_RECENT_MINUTES = 30, 1440
DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS = 30, 60
MAX_WAIT_TASKS = 32
POLL_SECONDS = 0.2
OUTSIDE_TREE = "Task outside session tree."
LEAF_CANNOT_CANCEL = "Leaf subagents cannot cancel other sessions."
CANCEL_REASON = "cancelled by its requester (subagents cancel)"

EXECUTION = obj(
    {
        "state": {"type": "string", "enum": ["queued", "running", "waiting", "finished"]},
        "wait": obj({"kind": STRING, "pendingCount": INTEGER}),
    },
    ("state",),
)
TASK_ROW = obj(
    {
        "taskId": STRING,
        "runtime": {"type": "string", "enum": ["subagent", "acp"]},
        "deliveryStatus": STRING,
        "execution": EXECUTION,
        "status": {
            "type": "string",
            "enum": ["queued", "running", "completed", "failed", "timed_out", "cancelled"],
        },
        "label": STRING,
        "sessionKey": STRING,
        "error": STRING,
    },
    ("taskId", "runtime", "deliveryStatus", "execution", "status"),
)

DECLARATION = Declaration(
    name="subagents",
    policy=Policy(groups=(SESSIONS_GROUP,), orchestrator=True),
    description=(
        "List, wait for or cancel the sub-agents this session spawned. list: tasks in flight "
        "and those that ended in the last recentMinutes. wait: until one of taskIds finishes "
        "(or timeoutSeconds). cancel: stop taskId and everything it spawned."
    ),
    params=(
        String("action", 'One of "list" (default), "wait", "cancel".', max_length=20),
        Integer(
            "recentMinutes",
            f"list: also tasks that ended within this many minutes (default "
            f"{DEFAULT_RECENT_MINUTES}, at most {MAX_RECENT_MINUTES}).",
            minimum=1,
            default=DEFAULT_RECENT_MINUTES,
        ),
        String(
            "taskId",
            "cancel: the task (its runId, its childSessionKey, or its taskName or an "
            "unambiguous prefix of it).",
            max_length=512,
        ),
        Structured(
            "taskIds",
            f"wait: the tasks to wait for (1-{MAX_WAIT_TASKS}; ids, keys or taskNames).",
            shape={"type": "array", "items": {"type": "string"}, "maxItems": MAX_WAIT_TASKS},
        ),
        Integer(
            "timeoutSeconds",
            f"wait: at most this long (default {DEFAULT_WAIT_SECONDS}, at most "
            f"{MAX_WAIT_SECONDS}; 0 = a snapshot).",
            default=DEFAULT_WAIT_SECONDS,
        ),
    ),
    result=obj(
        {
            "status": STRING,
            "action": STRING,
            "requesterSessionKey": STRING,
            "callerSessionKey": STRING,
            "callerIsSubagent": BOOLEAN,
            "total": INTEGER,
            "taskTotal": INTEGER,
            "tasks": array(TASK_ROW),
            "active": array({"type": "object"}),
            "recent": array({"type": "object"}),
            "text": STRING,
            # wait: completed | attention | unavailable | timeout; cancel (status error): why
            # nothing was cancelled, in words.
            "reason": STRING,
            "completed": array(TASK_ROW),
            "attention": array(TASK_ROW),
            "unavailable": array(STRING),
            "taskId": STRING,
            "found": BOOLEAN,
            "cancelled": BOOLEAN,
            "error": STRING,
        },
        ("status",),
    ),
)


@DECLARATION.arguments
@dataclass(frozen=True)
class SubagentsArgs:
    action: str | None
    recentMinutes: int
    taskId: str | None
    taskIds: Any
    timeoutSeconds: int


# --- rows ---------------------------------------------------------------------------------------


def task_row(task: Task) -> dict[str, Any]:
    execution: dict[str, Any] = {"state": task.state}
    if task.waiting:
        owed = len(subagent_tasks.owed_by_turn(task.latest))
        execution["wait"] = {"kind": "children", "pendingCount": owed}
    elif task.paused:
        execution["wait"] = {"kind": "agent_messages"}
    row: dict[str, Any] = {
        "taskId": task.task_id,
        "runtime": "acp" if (task.run.flow or {}).get("runtime") == "acp" else "subagent",
        "deliveryStatus": task.delivery_status,
        "execution": execution,
        "status": task.status,
        "sessionKey": task.session.key,
    }
    if task.run.label:
        row["label"] = task.run.label
    error = task.completion.outcome.get("error", "") if task.completion is not None else ""
    if error:
        row["error"] = error[:120]
    return row


def native_row(index: int, task: Task) -> dict[str, Any]:
    usage = task.session.total_tokens
    runtime_ms = _runtime_ms(task)
    row: dict[str, Any] = {
        "index": index,
        "runId": task.task_id,
        "sessionKey": task.session.key,
        **({"taskName": task.task_name} if task.task_name else {}),
        "label": (task.run.label or "")[:48],
        "task": " ".join(task.run.message.split())[:72],
        "status": task.status,
        "execution": task_row(task)["execution"],
        "deliveryStatus": task.delivery_status,
        "pendingDescendants": len(subagent_tasks.owed_by_earlier_turns(task.session.key, task.run)),
        "runtime": prompts.format_duration(runtime_ms),
        "runtimeMs": runtime_ms,
        "model": task.run.model or task.session.model or "default",
        "totalTokens": usage or 0,
        "startedAt": _iso(task.run.started_at or task.run.created_at),
    }
    if task.ended:
        row["endedAt"] = _iso(task.updated_at)
    return row


def _runtime_ms(task: Task) -> int:
    start = task.run.started_at or task.run.created_at
    end = task.updated_at if task.ended else None
    return max(0, int(((end or timezone.now()) - start).total_seconds() * 1000))


def _iso(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z")


def text_lines(rows: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{r['index']}. {r.get('taskName') or 'task'}: {r['label'] or 'task'} "
        f"({r['model']}, {r['runtime']}) "
        f"{r['status']} - {r['task']}"
        for r in rows
    )


# --- actions ------------------------------------------------------------------------------------


def list_tasks(requester: Requester, recent_minutes: int) -> dict[str, Any]:
    minutes = min(recent_minutes, MAX_RECENT_MINUTES)
    tasks = subagent_tasks.tasks_of(
        requester.session_key, since=subagent_tasks.recent_since(minutes)
    )
    active = [t for t in tasks if not t.ended]
    recent = [t for t in tasks if t.ended]
    rows = [native_row(i + 1, t) for i, t in enumerate([*active, *recent])]
    caller = Session.objects.filter(key=requester.session_key).only("spawn_depth").first()
    return {
        "status": "ok",
        "action": "list",
        "requesterSessionKey": requester.session_key,
        "callerSessionKey": requester.session_key,
        "callerIsSubagent": bool(caller and caller.spawn_depth > 0),
        "total": len(tasks),
        "taskTotal": len(tasks),
        "tasks": [task_row(t) for t in tasks],
        "active": rows[: len(active)],
        "recent": rows[len(active) :],
        "text": text_lines(rows),
    }


def read_task_ids(raw: Any) -> list[str]:
    if raw is None:
        raise InvalidArgument("taskIds required")
    if not isinstance(raw, list) or not all(isinstance(v, str) and v.strip() for v in raw):
        raise InvalidArgument("taskIds must be an array of task ids")
    if not raw:
        raise InvalidArgument("taskIds required")
    if len(raw) > MAX_WAIT_TASKS:
        raise InvalidArgument(f"subagents wait supports at most {MAX_WAIT_TASKS} taskIds.")
    return [v.strip() for v in raw]


def wait_snapshot(session_key: str, task_ids: list[str]) -> dict[str, Any] | None:
    """The wait's answer if one of the tasks has left queued/running (or needs attention, or
    is unknown); None while all are still going."""
    found = {i: subagent_tasks.task_by_id(session_key, i) for i in task_ids}
    tasks = [t for t in found.values() if t is not None]
    unavailable = [i for i, t in found.items() if t is None]
    completed = [t for t in tasks if t.ended]
    attention = [t for t in tasks if t.paused]
    reason = (
        "completed"
        if completed
        else "attention"
        if attention
        else "unavailable"
        if unavailable
        else ""
    )
    if not reason:
        return None
    return wait_result(reason, tasks, completed, attention, unavailable)


def wait_result(
    reason: str,
    tasks: list[Task],
    completed: list[Task],
    attention: list[Task],
    unavailable: list[str],
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": "ok",
        "action": "wait",
        "reason": reason,
        "tasks": [task_row(t) for t in tasks],
        "completed": [task_row(t) for t in completed],
        "attention": [task_row(t) for t in attention],
    }
    if unavailable:
        result["unavailable"] = unavailable
    return result


def timed_out(session_key: str, task_ids: list[str]) -> dict[str, Any]:
    tasks = [t for i in task_ids if (t := subagent_tasks.task_by_id(session_key, i)) is not None]
    return wait_result("timeout", tasks, [], [], [])


def cancel_task(requester: Requester, task_id: str | None) -> dict[str, Any]:
    if not task_id:
        raise InvalidArgument("taskId required")
    caller = Session.objects.filter(key=requester.session_key).select_related("agent").first()
    if caller is not None and is_leaf(caller):
        return {"status": "forbidden", "error": LEAF_CANNOT_CANCEL}
    task = subagent_tasks.task_by_id(requester.session_key, task_id)
    if task is None:
        named = subagent_tasks.tasks_named(requester.session_key, task_id)
        if len(named) > 1:  # a taskName prefix of several children: say which, stop none
            return {
                "status": "error",
                "taskId": task_id,
                "found": False,
                "cancelled": False,
                "reason": f'taskName prefix "{task_id}" is ambiguous: '
                + ", ".join(t.task_name for t in named),
            }
        return {"status": "forbidden", "error": OUTSIDE_TREE}
    if task.ended and not control.tree_busy(task.session):
        return {
            "status": "error",
            "taskId": task.task_id,
            "found": True,
            "cancelled": False,
            "reason": f"the task already ended ({task.status})",
        }
    control.stop_session(
        task.session, reason=CANCEL_REASON, clear_queued=True, cascade=True, dismiss_own=True
    )
    return {"status": "cancelled", "taskId": task.task_id, "found": True, "cancelled": True}


# --- the tool -----------------------------------------------------------------------------------


def _action(a: Any) -> str | None:
    action = a.action or "list"
    return action if action in ACTIONS else None


UNSUPPORTED = {"status": "error", "error": "Unsupported action."}


def subagents(*, requester: Requester, args: Any) -> dict[str, Any]:
    """Synchronous form (an agent's own call during its run): `wait` holds this worker for at
    most timeoutSeconds (≤ 60), polling the database."""
    a = DECLARATION.read(args, SubagentsArgs)
    action = _action(a)
    if action is None:
        return UNSUPPORTED
    if action == "list":
        return list_tasks(requester, a.recentMinutes)
    if action == "cancel":
        return cancel_task(requester, a.taskId)
    task_ids = read_task_ids(a.taskIds)
    deadline = time.monotonic() + min(a.timeoutSeconds, MAX_WAIT_SECONDS)
    while True:
        found = wait_snapshot(requester.session_key, task_ids)
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            return timed_out(requester.session_key, task_ids)
        time.sleep(POLL_SECONDS)


async def subagents_async(
    *, requester: Requester, args: Any, idempotency_key: str | None = None
) -> dict[str, Any]:
    """For async adapters (/tools/invoke, /ws/, MCP): `wait` holds no thread while it waits."""
    a = DECLARATION.read(args, SubagentsArgs)
    action = _action(a)
    if action != "wait":
        return await sync_to_async(subagents)(requester=requester, args=args)
    task_ids = read_task_ids(a.taskIds)
    deadline = time.monotonic() + min(a.timeoutSeconds, MAX_WAIT_SECONDS)
    snapshot = db_step(wait_snapshot)
    while True:
        found = await snapshot(requester.session_key, task_ids)
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            return await sync_to_async(timed_out)(requester.session_key, task_ids)
        await asyncio.sleep(POLL_SECONDS)


TOOL = Tool(DECLARATION, subagents, run_async=subagents_async)
