"""Spawning a sub-agent (sessions_spawn, 9.6 §4.4), the operation below the tool: the checks
of a request, the plan, and starting the child and its run. tools/sessions_spawn.py reads the
arguments and calls this; acp/spawn.py (the `runtime: "acp"` branch) shares the checks and the
start.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import transaction

from openclaw_common import keys
from openclaw_common.errors import Forbidden, InvalidArgument

from .. import send_modes, store
from ..access.identity import Requester
from ..models import Agent, GatewayConfig, Run, Session
from . import fork, model_catalog, prompts
from .attachments import (
    AttachmentLimits,
    AttachmentRefused,
    Staged,
    remove_staged,
    stage_attachments,
    workspace_for,
)
from .chain import Chain, current_run, next_hop
from .engine import start_run
from .flow_state import Flow
from .provenance import inter_session
from .subagent_limits import SubagentLimits, limits_for

# [newer] channel-delivery keys get a pointed error instead of "unknown argument".
DELIVERY_KEYS = (
    "target",
    "transport",
    "channel",
    "to",
    "threadId",
    "thread_id",
    "replyTo",
    "reply_to",
)
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
MODEL_SHAPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
RUN_NOTE = "auto-announces on completion, do not poll/sleep. The response will be sent back as an user message."
PRIVATE_NOTE = (
    "The result returns privately to the requester. No result is automatically sent to a "
    "channel; the requester may review, continue work, or remain silent. Continue independent "
    "work; completion will trigger a private requester turn. Never busy-poll."
)
QUIET_NOTE = "Quiet run: no completion notification is sent. Do not wait for an announcement."
MAX_TASK_CHARS = 100_000
# What Run.timeout_seconds holds (a 32-bit column; 68 years): past it 9.6's generic validator
# text, where the timeout reached the database as an out-of-range integer (a 500).
MAX_RUN_TIMEOUT_SECONDS = 2**31 - 1
CONTEXTS = ("isolated", "fork")
TASK_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
# `subagents` targets these by name; a task may not be called so (9.6 §4.4).
RESERVED_TASK_NAMES = ("all", "last")
FORK_CROSS_AGENT = (
    'context="fork" currently requires the same target agent as the requester; use '
    'context="isolated" for cross-agent spawns.'
)
FORK_ACP = 'context="fork" is only supported for runtime="subagent".'
LIGHT_CONTEXT_ACP = 'lightContext is only supported for runtime="subagent".'
NEEDS_VISIBLE = "Parameters require visible=true"
VISIBLE_UNSUPPORTED = (
    "visible=true is not supported by this gateway: it has no dashboard sessions "
    "(sessions.create). Omit visible to spawn a hidden sub-agent."
)
# Accepted as 9.6 does without its cloud placement or tools.swarm, and not applied here: the
# accepted result's note names each one that was sent (never a silent pretence).
NOT_APPLIED = ("group", "placement", "collect", "outputSchema", "groupId", "fastMode")

# --- check ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpawnRequest:
    """The arguments, checked."""

    task: str
    label: str
    runtime: str
    mode: str | None
    thread: bool
    cleanup: str
    sandbox: str
    timeout: int | None  # None: the configured default
    agent_id: str | None
    model: str
    thinking: str | None
    attachments: Any
    mount_path: str | None
    completion_target: str | None
    expects_completion: bool
    cwd: str | None = None
    stream_to: str | None = None
    resume_session_id: str | None = None  # acp: the harness's ACP session to continue
    context: str = "isolated"
    task_name: str | None = None
    light_context: bool = False
    visible: bool = False
    # 9.6 parameters accepted and not applied here (NOT_APPLIED), by name, as sent.
    not_applied: tuple[str, ...] = ()


def check_task_name(name: str | None) -> str | None:
    """9.6 §4.4: ^[a-z][a-z0-9_-]{0,63}$ and not a reserved `subagents` target."""
    if name is None:
        return None
    if not TASK_NAME.fullmatch(name):
        raise InvalidArgument(
            f'Invalid taskName "{name}". Use 1-64 chars matching [a-z][a-z0-9_-]*.'
        )
    if name in RESERVED_TASK_NAMES:
        raise InvalidArgument(
            f'Invalid taskName "{name}". Reserved subagent targets cannot be used as taskName '
            "values."
        )
    return name


def check_completion_target(target: str | None, expects: bool) -> None:
    """9.6 §4.4: "parent" or nothing, and only for a run that reports back."""
    if target is None:
        return
    if target != "parent":
        raise InvalidArgument('sessions_spawn completionTarget must be "parent" or omitted.')
    if not expects:
        raise InvalidArgument(
            'sessions_spawn completionTarget="parent" requires mode="run", thread=false, '
            "collect=false, and completion notifications enabled."
        )


# --- plan -------------------------------------------------------------------------------------


class SpawnRefused(Exception):
    """A rule said no: the tool answers {status, error} (a result, not a protocol error)."""

    def __init__(self, message: str, *, status: str = "error", child_key: str = ""):
        super().__init__(message)
        self.result = {"status": status, "error": message}
        if child_key:  # a refusal after the child's key was chosen (§5.2 step 12)
            self.result["childSessionKey"] = child_key


@dataclass(frozen=True)
class SpawnPlan:
    """Everything decided before anything is written."""

    requester: Requester
    request: SpawnRequest
    timeout: int
    target_id: str
    child_key: str
    depth: int  # the child's
    chain: Chain
    requester_channel: str
    # What the child actually starts with: "fork" copies `fork` into its transcript first.
    context: str = "isolated"
    fork: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()  # said in the accepted result's note, after the usual one
    provider: str = ""  # the target agent's backend type (resolvedProvider of a bare model id)


class Spawner(NamedTuple):
    """Who spawns: the requester's session row (if stored), its agent row and its depth."""

    row: Session | None
    agent: Agent | None
    depth: int


def check_requester_limits(requester: Requester, config: GatewayConfig) -> Spawner:
    """The requester's spawn depth and children limits, for native and ACP spawns alike."""
    row = Session.objects.filter(key=requester.session_key).first()
    depth = row.spawn_depth if row else keys.subagent_depth_from_key(requester.session_key)
    me = Agent.objects.filter(pk=requester.agent_id).first()
    check_depth_and_children(requester, depth, limits_for(me, config))
    return Spawner(row, me, depth)


def plan_spawn(requester: Requester, request: SpawnRequest) -> SpawnPlan:
    """The rules of reference §5.2, in its order. Raises SpawnRefused."""
    check_runtime_and_mode(request)
    requester_row, me, depth = check_requester_limits(requester, requester.config)
    target_id, target = check_target(requester, request, me)
    if request.context == "fork" and target_id != requester.agent_id:
        raise SpawnRefused(FORK_CROSS_AGENT)
    check_model_and_thinking(request)
    child_key = f"agent:{target_id}:subagent:{uuid.uuid4()}"
    request = check_model_catalog(request, target_id, target, requester, child_key)
    try:
        chain = next_hop(
            tool="sessions_spawn",
            from_agent=requester.agent_id,
            to_agent=target_id,
            config=requester.config,
            spawn=True,
        )
    except Forbidden as exc:
        raise SpawnRefused(exc.message, status="forbidden") from None
    timeout = request.timeout
    if timeout is None:  # the target agent's default, else the gateway's (9.6 §1.9)
        timeout = limits_for(target, requester.config).subagent_run_timeout_seconds
    context, forked, notes = plan_context(requester, request)
    return SpawnPlan(
        requester=requester,
        request=request,
        timeout=timeout,
        target_id=target_id,
        child_key=child_key,
        depth=depth + 1,
        chain=chain,
        requester_channel=requester_row.row_channel if requester_row else "",
        context=context,
        fork=tuple(forked),
        notes=(*notes, *not_applied_notes(request)),
        provider=str((target.backend or {}).get("type") or "scripted"),
    )


def plan_context(
    requester: Requester, request: SpawnRequest
) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The context the child starts with: a fork over the cap starts isolated, and says so."""
    if request.context != "fork":
        return "isolated", [], []
    messages = fork.fork_messages(requester.session_key)
    tokens = fork.estimate_tokens(messages)
    if tokens > fork.FORK_MAX_TOKENS:
        return "isolated", [], [fork.too_large_note(tokens)]
    return "fork", messages, []


def not_applied_notes(request: SpawnRequest) -> list[str]:
    names = list(request.not_applied)
    if request.runtime != "acp" and request.cwd is not None:
        names.append("cwd")  # a native sub-agent has no working directory of its own here
    if not names:
        return []
    return [f"Not applied by this gateway (accepted for compatibility): {', '.join(names)}."]


def check_runtime_and_mode(request: SpawnRequest) -> None:
    mode = request.mode if request.mode in ("run", "session") else None
    if (mode or ("session" if request.thread else "run")) == "session" and not request.thread:
        raise SpawnRefused(
            'mode="session" requires thread=true so the subagent can stay bound to a thread.'
        )
    if request.thread:
        raise SpawnRefused(
            "thread=true is unavailable because no channel plugin registered subagent_spawning hooks."
        )


def check_depth_and_children(requester: Requester, depth: int, limits: SubagentLimits) -> None:
    if depth >= limits.max_spawn_depth:
        raise SpawnRefused(
            f"sessions_spawn is not allowed at this depth (current depth: {depth}, max: {limits.max_spawn_depth})",
            status="forbidden",
        )
    active = (
        Run.objects.in_flight().filter(kind="spawn", requester_key=requester.session_key).count()
    )
    if active >= limits.max_children_per_agent:
        raise SpawnRefused(
            f"sessions_spawn has reached max active children for this session ({active}/{limits.max_children_per_agent})",
            status="forbidden",
        )


def allowed_targets(agent: Agent | None) -> tuple[bool, list[str]]:
    entries = [str(x).strip() for x in (agent.allow_agents if agent else [])]
    return "*" in entries, [keys.normalize_agent_id(x) for x in entries if x and x != "*"]


def check_target(
    requester: Requester, request: SpawnRequest, me: Agent | None
) -> tuple[str, Agent]:
    """The agent the child runs under: allowed, existing, and sandboxed where it must be."""
    target_id = (
        keys.normalize_agent_id(request.agent_id) if request.agent_id else requester.agent_id
    )
    if target_id != requester.agent_id:
        allow_any, allowed = allowed_targets(me)
        if not allow_any and target_id not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            raise SpawnRefused(
                f"agentId is not allowed for sessions_spawn (allowed: {listed})",
                status="forbidden",
            )
    target = Agent.objects.filter(pk=target_id).first()
    if target is None:
        raise SpawnRefused(f"agent not found: {target_id}")
    if requester.sandboxed and not target.sandboxed:
        raise SpawnRefused(
            f"a sandboxed session cannot spawn an unsandboxed agent ({target_id})",
            status="forbidden",
        )
    if request.sandbox == "require" and not target.sandboxed:
        raise SpawnRefused(
            f'sandbox="require" needs a sandboxed agent; {target_id} is not sandboxed'
        )
    return target_id, target


def check_model_and_thinking(request: SpawnRequest) -> None:
    if request.model and not MODEL_SHAPE.match(request.model):
        raise SpawnRefused(
            f'Invalid model "{request.model}": use letters, digits and . _ : / @ + -'
        )
    if request.thinking is not None and request.thinking.lower() not in THINKING_LEVELS:
        raise SpawnRefused(
            f'Invalid thinking level "{request.thinking}". Use one of: {", ".join(THINKING_LEVELS)}.'
        )


def check_model_catalog(
    request: SpawnRequest, target_id: str, target: Agent | None, requester: Requester, key: str
) -> SpawnRequest:
    """An explicit model must be one the target agent serves (model_catalog.py): else an error
    with the child's key and no run (reference §5.2 step 12). An alias becomes its model id."""
    if not request.model:
        return request
    try:
        model = model_catalog.resolve(target, target_id, request.model, requester.config)
    except model_catalog.ModelNotAllowed as exc:
        raise SpawnRefused(str(exc), child_key=key) from None
    return dataclasses.replace(request, model=model)


# --- do ---------------------------------------------------------------------------------------


def start_spawn(plan: SpawnPlan) -> dict:
    """Stage the attachments, then create the child session and its run in one transaction.
    Staged files are removed if that transaction fails."""
    requester, request = plan.requester, plan.request
    try:
        staged = stage_attachments(
            attachments=request.attachments,
            limits=AttachmentLimits.from_config(requester.config),
            workspace=workspace_for(plan.child_key),
        )
    except AttachmentRefused as exc:
        raise SpawnRefused(exc.message, status=exc.status) from None
    try:
        with transaction.atomic():
            run = _create_child(plan, staged)
    except Exception:
        if staged is not None:
            remove_staged(staged)
        raise
    result = accepted_result(plan, run)
    if request.model:
        result["modelApplied"] = request.model
        # The applied ref, and its provider: the ref's prefix, else the backend serving it.
        result["resolvedModel"] = request.model
        prefix, _, rest = request.model.partition("/")
        result["resolvedProvider"] = prefix if rest else plan.provider
    if staged is not None:
        result["attachments"] = staged.receipt()
    return result


def note_for(request: SpawnRequest, extra: tuple[str, ...] = ()) -> str:
    if not request.expects_completion:
        note = QUIET_NOTE
    else:
        note = PRIVATE_NOTE if request.completion_target == "parent" else RUN_NOTE
    return " ".join((note, *extra))


def accepted_result(plan: SpawnPlan, run: Run) -> dict[str, Any]:
    """The answer to an accepted spawn, native or ACP."""
    request = plan.request
    result: dict[str, Any] = {
        "status": "accepted",
        "childSessionKey": plan.child_key,
        "runId": str(run.pk),
        "mode": "run",
        "note": note_for(request, plan.notes),
        "expectsCompletionMessage": request.expects_completion,
        "context": plan.context,
    }
    if request.completion_target:
        result["completionTarget"] = request.completion_target
    if request.task_name:
        result["taskName"] = request.task_name
    return result


def _create_child(plan: SpawnPlan, staged: Staged | None) -> Run:
    request = plan.request
    entry: dict[str, Any] = {}
    if request.model:
        entry["model"] = request.model
    if request.thinking and request.thinking.lower() != "off":
        entry["thinkingLevel"] = request.thinking.lower()
    system_prompt = prompts.subagent_system_prompt(
        task=request.task,
        label=request.label,
        requester_key=plan.requester.session_key,
        requester_channel=plan.requester_channel,
        child_key=plan.child_key,
    )
    if staged is not None:
        system_prompt += "\n\n" + staged.prompt_suffix(request.mount_path)
    return start_child(
        plan,
        entry=entry,
        system_prompt=system_prompt,
        model=request.model or "",
        attachments_dir=str(staged.abs_dir) if staged else None,
    )


def start_child(
    plan: SpawnPlan,
    *,
    entry: dict[str, Any] | None = None,
    system_prompt: str = "",
    model: str = "",
    attachments_dir: str | None = None,
    **flow_fields: Any,
) -> Run:
    """Create the child session and queue its first run, for every spawn (native and ACP,
    whose flow adds `runtime`, `cwd`, `stream_to`). Call inside the spawn's transaction."""
    requester, request = plan.requester, plan.request
    child, _ = store.upsert_session(
        api_key=None,
        key=plan.child_key,
        entry={
            "spawnedBy": requester.session_key,
            "spawnDepth": plan.depth,
            "label": request.label,
            **(entry or {}),
        },
    )
    # The fork goes in before the task message, which start_run appends.
    fork.append_fork(child, list(plan.fork), requester.session_key)
    # 9.6 §2.2: a spawn parent watches its child, from the child's version at spawn.
    send_modes.watch(child, requester.session_key)
    flow = Flow.spawn(
        requester=requester.session_key,
        requester_channel=plan.requester_channel,
        task=request.task,
        label=request.label,
        cleanup=request.cleanup,
        attachments_dir=attachments_dir,
        completion_target=request.completion_target,
        expects_completion=request.expects_completion,
    )
    flow = dataclasses.replace(flow, task_name=request.task_name, context=plan.context)
    return start_run(
        session=child,
        kind="spawn",
        message=request.task,
        provenance=inter_session(
            requester.session_key, "sessions_spawn", channel=plan.requester_channel
        ),
        extra_system_prompt=system_prompt,
        requester_key=requester.session_key,
        requester_channel=plan.requester_channel,
        chain=plan.chain,
        timeout_seconds=plan.timeout,
        # The turn that spawned it: a sessions_yield of that turn waits for this child.
        parent_run=current_run.get(),
        sandboxed=requester.sandboxed,
        model=model,
        label=request.label,
        flow=dataclasses.replace(flow, **flow_fields),
    )
