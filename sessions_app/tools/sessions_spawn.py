"""sessions_spawn (reference §5, seeds): start a sub-agent in its own session; never blocks.

The child is `agent:<targetAgentId>:subagent:<uuid>`. When its run ends (any outcome) an announce
step runs in the child, and unless it answers ANNOUNCE_SKIP the requester gets a
Status/Result/Notes/Stats report in its transcript and on its channel (runs/flows.py).

Check → plan → do, like sessions_send's start_send():
- `read_request()` checks the arguments (InvalidArgument: a 400 on every way in);
- `plan_spawn()` applies the rules in the reference's order (§5.2) and returns a SpawnPlan, or
  raises SpawnRefused with the result the tool answers ({status: error|forbidden, error});
- `start_spawn()` stages the attachments and, in one transaction, writes the child session and
  its run. Nothing is written before it.

`runtime: "acp"` (exactly) takes its own branch, `acp/spawn.py` (docs/acp.md): an ACP harness
child `agent:<harness>:acp:<uuid>`, with the same shape of result and refusals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..acp.spawn import spawn_acp  # the ACP runtime's own rules (docs/acp.md)
from ..runs.spawn import (
    CONTEXTS,
    DELIVERY_KEYS,
    FORK_ACP,
    LIGHT_CONTEXT_ACP,
    MAX_RUN_TIMEOUT_SECONDS,
    MAX_TASK_CHARS,
    NEEDS_VISIBLE,
    NOT_APPLIED,
    THINKING_LEVELS,
    VISIBLE_UNSUPPORTED,
    SpawnRefused,
    SpawnRequest,
    check_completion_target,
    check_task_name,
    plan_spawn,
    start_spawn,
)
from ..runs.tool_policy import SESSIONS_GROUP, Policy
from .declaration import Boolean, Choice, Declaration, Integer, String, Structured, Tool
from .shapes import INTEGER, STRING, array, obj

# [newer] channel-delivery keys get a pointed error instead of "unknown argument".
ATTACHMENT = obj(
    {
        "name": {"type": "string", "description": "File name (no path)."},
        "content": {"type": "string", "description": "File content."},
        "encoding": {
            "type": "string",
            "description": "How content is encoded (default utf8).",
            "enum": ["utf8", "base64"],
        },
        "mimeType": {"type": "string", "description": "MIME type."},
    },
    ("name", "content"),
)

DECLARATION = Declaration(
    name="sessions_spawn",
    policy=Policy(groups=(SESSIONS_GROUP,), orchestrator=True),
    description=(
        "Start a sub-agent on a task in a new isolated session. Never blocks: returns "
        "{status: accepted, runId, childSessionKey} at once, and the result is announced "
        "back to this session when the sub-agent finishes; do not poll or sleep."
    ),
    # In the order they are checked (the first bad one is named).
    params=(
        String("task", "What the sub-agent should do.", required=True, max_length=MAX_TASK_CHARS),
        String("label", "Short label for logs and the UI.", max_length=200),
        String(
            "runtime",
            '"subagent" (default), or "acp": run the task in an ACP coding-agent harness '
            "(agentId names the harness; see docs/acp.md).",
            max_length=20,
        ),
        String(
            "mode",
            '"run" (default); "session" needs thread=true, which no channel here supports.',
            max_length=20,
            advertised=False,
        ),
        Boolean(
            "thread",
            "Bind the child to a channel thread: refused, no channel plugin offers it.",
            advertised=False,
        ),
        Choice(
            "cleanup",
            'Delete the sub-agent session after the announce ("delete") or keep it '
            '("keep", default).',
            choices={"keep": "keep", "delete": "delete"},
            enum=("delete", "keep"),
            describe='"keep" or "delete"',
            default="keep",
        ),
        Choice(
            "sandbox",
            '"require" refuses to spawn under an agent that is not sandboxed.',
            choices={"inherit": "inherit", "require": "require"},
            enum=("inherit", "require"),
            describe='"inherit" or "require"',
            default="inherit",
            advertised=False,
        ),
        Integer(
            "runTimeoutSeconds",
            "Abort the sub-agent run after N seconds (default 0 = no limit).",
            maximum=MAX_RUN_TIMEOUT_SECONDS,
        ),
        Integer(
            "timeoutSeconds",
            "The older name of runTimeoutSeconds (used when that is absent).",
            advertised=False,
            maximum=MAX_RUN_TIMEOUT_SECONDS,
        ),
        String(
            "agentId",
            "Target agent id, if allowed (see agents_list), or the ACP harness id with "
            'runtime="acp".',
            max_length=64,
        ),
        String(
            "cwd",
            'runtime="acp": the working directory, inside the harness\'s root (relative to it, '
            "or absolute).",
            max_length=4000,
        ),
        Choice(
            "streamTo",
            '"parent" (runtime="acp" only): also stream the child\'s progress into this session.',
            choices={"parent": "parent"},
            enum=("parent",),
            describe='"parent"',
        ),
        String(
            "resumeSessionId",
            'runtime="acp": continue this ACP session of the harness (its session/load) instead '
            "of starting a new one.",
            max_length=200,
        ),
        String(
            "model",
            "Model for the sub-agent (overrides its default); one the target agent serves "
            "(agents_list shows them).",
            max_length=200,
        ),
        String(
            "thinking",
            f"Thinking level: {', '.join(THINKING_LEVELS)}.",
            max_length=20,
            advertised=False,
        ),
        String(
            "completionTarget",
            '"parent": the result comes back as a private turn of yours, never posted to a '
            "channel.",
            max_length=20,
        ),
        Boolean(
            "expectsCompletionMessage",
            "false: a quiet run, no completion turn comes back (default true).",
            default=True,
        ),
        Structured(
            "attachments",
            "Files for the sub-agent's workspace (if enabled).",
            shape={"type": "array", "maxItems": 50, "items": ATTACHMENT},
        ),
        Structured(
            "attachAs",
            "Where you would like the files (a hint only).",
            shape=obj({"mountPath": {"type": "string", "description": "A directory path."}}),
        ),
        Choice(
            "context",
            '"isolated" (default): the sub-agent starts with only the task; "fork": it starts '
            "with a copy of this session's transcript (same agent only, up to ~100K tokens).",
            choices={c: c for c in CONTEXTS},
            enum=CONTEXTS,
            describe='"isolated" or "fork"',
            default="isolated",
        ),
        String(
            "taskName",
            "A short handle for the task (1-64 chars: a-z first, then a-z 0-9 _ -; not all or "
            "last) that subagents accepts as taskId.",
            max_length=1000,
        ),
        Boolean(
            "lightContext",
            "Light bootstrap (subagent only). Sub-agents here always start light.",
            advertised=False,
        ),
        Boolean(
            "visible",
            "A persistent dashboard session instead of a hidden child: not supported here.",
            advertised=False,
        ),
        String(
            "group",
            "Dashboard group (visible spawns; not applied here).",
            max_length=200,
            advertised=False,
        ),
        String(
            "placement", "Cloud placement (not applied here).", max_length=200, advertised=False
        ),
        String("projectId", "Project (needs visible=true).", max_length=200, advertised=False),
        String(
            "projectGitUrl",
            "Project repository (needs visible=true).",
            max_length=4000,
            advertised=False,
        ),
        Boolean("collect", "tools.swarm collection (not applied here).", advertised=False),
        Structured(
            "outputSchema",
            "tools.swarm output schema (not applied here).",
            shape={"type": "object"},
            advertised=False,
        ),
        String(
            "groupId", "tools.swarm group (not applied here).", max_length=200, advertised=False
        ),
        Structured(
            "fastMode",
            'true, false or "auto" (tools.swarm; not applied here).',
            shape={"type": ["boolean", "string"]},
            advertised=False,
        ),
    ),
    result=obj(
        {
            "status": {"type": "string", "enum": ["accepted", "error", "forbidden"]},
            "childSessionKey": STRING,
            "runId": STRING,
            "mode": {"type": "string", "enum": ["run"]},
            "note": STRING,
            "context": {"type": "string", "enum": list(CONTEXTS)},
            "taskName": STRING,
            "modelApplied": STRING,
            "resolvedModel": STRING,
            "resolvedProvider": STRING,
            "expectsCompletionMessage": {"type": "boolean"},
            "completionTarget": {"type": "string", "enum": ["parent"]},
            "attachments": obj(
                {
                    "count": INTEGER,
                    "totalBytes": INTEGER,
                    "files": array(
                        obj(
                            {"name": STRING, "bytes": INTEGER, "sha256": STRING},
                            ("name", "bytes", "sha256"),
                        )
                    ),
                    "relDir": STRING,
                },
                ("count", "totalBytes", "files", "relDir"),
            ),
            "error": STRING,
        },
        ("status",),
    ),
    refused={
        name: 'sessions_spawn does not support "{name}". Use "message" or "sessions_send" '
        "for channel delivery."
        for name in DELIVERY_KEYS
    },
    raw_prefixes=("worktree",),  # split_worktree_options
)


@DECLARATION.arguments
@dataclass(frozen=True)
class SpawnArgs:
    task: str
    label: str | None
    runtime: str | None
    mode: str | None
    thread: bool
    cleanup: str
    sandbox: str
    runTimeoutSeconds: int | None
    timeoutSeconds: int | None
    agentId: str | None
    cwd: str | None
    streamTo: str | None
    resumeSessionId: str | None
    model: str | None
    thinking: str | None
    completionTarget: str | None
    expectsCompletionMessage: bool
    attachments: Any
    attachAs: Any
    context: str
    taskName: str | None
    lightContext: bool
    visible: bool
    group: str | None
    placement: str | None
    projectId: str | None
    projectGitUrl: str | None
    collect: bool
    outputSchema: Any
    groupId: str | None
    fastMode: Any


# --- reading the arguments ---


def read_request(args: Any) -> SpawnRequest:
    args, worktree = split_worktree_options(args)
    a = DECLARATION.read(args, SpawnArgs)
    task_name = check_task_name(a.taskName)
    if not a.visible and (worktree or a.projectId is not None or a.projectGitUrl is not None):
        raise InvalidArgument(NEEDS_VISIBLE)
    if a.fastMode is not None and not (isinstance(a.fastMode, bool) or a.fastMode == "auto"):
        raise InvalidArgument('fastMode must be true, false or "auto"')
    if a.outputSchema is not None and not isinstance(a.outputSchema, dict):
        raise InvalidArgument("outputSchema must be an object")
    if a.collect and a.completionTarget is not None:
        check_completion_target(a.completionTarget, False)
    attach_as = a.attachAs
    if attach_as is not None and not (
        isinstance(attach_as, dict) and set(attach_as) <= {"mountPath"}
    ):
        raise InvalidArgument('attachAs must be an object with only "mountPath"')
    mount_path = (attach_as or {}).get("mountPath")
    if mount_path is not None and not isinstance(mount_path, str):
        raise InvalidArgument("attachAs.mountPath must be a string")
    check_completion_target(a.completionTarget, a.expectsCompletionMessage)
    timeout = a.runTimeoutSeconds if a.runTimeoutSeconds is not None else a.timeoutSeconds
    return SpawnRequest(
        task=a.task,
        label=a.label or "",
        runtime="acp" if a.runtime == "acp" else "subagent",  # exactly "acp" (§5.2 step 1)
        mode=a.mode,
        thread=a.thread,
        cleanup=a.cleanup,
        sandbox=a.sandbox,
        timeout=timeout,
        agent_id=a.agentId,
        model=a.model or "",
        thinking=a.thinking,
        attachments=a.attachments,
        mount_path=mount_path,
        completion_target=a.completionTarget,
        expects_completion=a.expectsCompletionMessage,
        cwd=a.cwd,
        stream_to=a.streamTo,
        resume_session_id=a.resumeSessionId,
        context=a.context,
        task_name=task_name,
        light_context=a.lightContext,
        visible=a.visible,
        not_applied=tuple(name for name in NOT_APPLIED if getattr(a, name) not in (None, False)),
    )


def split_worktree_options(args: Any) -> tuple[Any, bool]:
    """9.6's `worktree*` family (visible spawns only): taken out before the declaration reads
    the rest, and reported as present."""
    if not isinstance(args, dict):
        return args, False
    names = [k for k in args if isinstance(k, str) and k.startswith("worktree")]
    if not names:
        return args, False
    rest = {k: v for k, v in args.items() if k not in names}
    return rest, any(args[k] is not None for k in names)


def sessions_spawn(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """Spawn a sub-agent run. Returns {status: "accepted", childSessionKey, runId, mode, note,
    expectsCompletionMessage, context, completionTarget?, taskName?, modelApplied?,
    resolvedModel?, resolvedProvider?, attachments?} or {status: "error" | "forbidden", error}."""
    request = read_request(args)
    try:
        if request.visible:
            raise SpawnRefused(VISIBLE_UNSUPPORTED)
        if request.runtime == "acp" and request.context == "fork":
            raise SpawnRefused(FORK_ACP)
        if request.runtime == "acp" and request.light_context:
            raise SpawnRefused(LIGHT_CONTEXT_ACP)
        if request.runtime == "acp":
            return spawn_acp(requester, request)
        if request.stream_to is not None:
            raise SpawnRefused(
                f"streamTo is only supported for runtime=acp; got runtime={request.runtime}"
            )
        if request.resume_session_id is not None:
            raise SpawnRefused(
                f"resumeSessionId is only supported for runtime=acp; got runtime={request.runtime}"
            )
        return start_spawn(plan_spawn(requester, request))
    except SpawnRefused as refused:
        return refused.result


TOOL = Tool(DECLARATION, sessions_spawn)
