"""sessions_spawn (reference §5, seeds): start a sub-agent in its own session; never blocks.

The child is `agent:<targetAgentId>:subagent:<uuid>`. When its run ends (any outcome) an announce
step runs in the child, and unless it answers ANNOUNCE_SKIP the requester gets a
Status/Result/Notes/Stats report in its transcript and on its channel (runs/flows.py).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.db import transaction

from .. import keys, store
from ..args import Args
from ..errors import Forbidden, InvalidArgument
from ..identity import Requester
from ..models import Agent, Run, Session
from ..runs import prompts
from ..runs.attachments import (
    AttachmentLimits,
    AttachmentRefused,
    remove_staged,
    stage_attachments,
    workspace_for,
)
from ..runs.chain import next_hop
from ..runs.provenance import inter_session

ARGS = frozenset(
    {
        "task", "label", "agentId", "model", "thinking", "runTimeoutSeconds", "timeoutSeconds",
        "cleanup", "sandbox", "attachments", "attachAs", "runtime", "mode", "thread",
    }
)  # fmt: skip
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


def _error(message: str, *, status: str = "error", **extra) -> dict:
    return {"status": status, "error": message, **extra}


def allowed_targets(agent: Agent | None) -> tuple[bool, list[str]]:
    entries = [str(x).strip() for x in (agent.allow_agents if agent else [])]
    return "*" in entries, [keys.normalize_agent_id(x) for x in entries if x and x != "*"]


def sessions_spawn(*, requester: Requester, args: dict[str, Any] | None) -> dict:
    """Spawn a sub-agent run. Returns {status: "accepted", runId, childSessionKey, mode, note,
    modelApplied?, attachments?} or {status: "error" | "forbidden", error}."""
    raw = args if isinstance(args, dict) else {}
    for name in DELIVERY_KEYS:
        if name in raw:
            raise InvalidArgument(
                f'sessions_spawn does not support "{name}". Use "message" or "sessions_send" for channel delivery.'
            )
    a = Args(args, ARGS, tool="sessions_spawn")
    task = a.string("task", required=True, max_length=100_000)
    label = a.string("label", max_length=200) or ""
    runtime = a.string("runtime", max_length=20) or "subagent"
    mode = a.string("mode", max_length=20)
    thread = a.boolean("thread", default=False)
    cleanup = a.choice(
        "cleanup",
        {"keep": "keep", "delete": "delete"},
        default="keep",
        describe='"keep" or "delete"',
    )
    sandbox = a.choice(
        "sandbox",
        {"inherit": "inherit", "require": "require"},
        default="inherit",
        describe='"inherit" or "require"',
    )
    timeout = a.integer("runTimeoutSeconds", minimum=0)
    if timeout is None:
        timeout = a.integer("timeoutSeconds", minimum=0, default=0)
    agent_id = a.string("agentId", max_length=64)
    model = a.string("model", max_length=200) or ""
    thinking = a.string("thinking", max_length=20)
    attachments = raw.get("attachments")
    attach_as = raw.get("attachAs")
    if attach_as is not None and not (
        isinstance(attach_as, dict) and set(attach_as) <= {"mountPath"}
    ):
        raise InvalidArgument('attachAs must be an object with only "mountPath"')
    mount_path = (attach_as or {}).get("mountPath")
    if mount_path is not None and not isinstance(mount_path, str):
        raise InvalidArgument("attachAs.mountPath must be a string")

    if runtime == "acp":
        return _error("runtime=acp is not available in this service; use runtime=subagent")
    if mode not in (None, "run", "session"):
        mode = None
    if (mode or ("session" if thread else "run")) == "session" and not thread:
        return _error(
            'mode="session" requires thread=true so the subagent can stay bound to a thread.'
        )
    if thread:
        return _error(
            "thread=true is unavailable because no channel plugin registered subagent_spawning hooks."
        )

    config = requester.config
    requester_row = Session.objects.filter(key=requester.session_key).first()
    depth = (
        requester_row.spawn_depth
        if requester_row
        else keys.subagent_depth_from_key(requester.session_key)
    )
    if depth >= config.max_spawn_depth:
        return _error(
            f"sessions_spawn is not allowed at this depth (current depth: {depth}, max: {config.max_spawn_depth})",
            status="forbidden",
        )
    active = Run.objects.filter(
        kind="spawn", requester_key=requester.session_key, status__in=[Run.QUEUED, Run.RUNNING]
    ).count()
    if active >= config.max_children_per_agent:
        return _error(
            f"sessions_spawn has reached max active children for this session ({active}/{config.max_children_per_agent})",
            status="forbidden",
        )

    me = Agent.objects.filter(pk=requester.agent_id).first()
    target_id = keys.normalize_agent_id(agent_id) if agent_id else requester.agent_id
    if target_id != requester.agent_id:
        allow_any, allowed = allowed_targets(me)
        if not allow_any and target_id not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            return _error(
                f"agentId is not allowed for sessions_spawn (allowed: {listed})", status="forbidden"
            )
    target = Agent.objects.filter(pk=target_id).first()
    if target is None:
        return _error(f"agent not found: {target_id}")
    if requester.sandboxed and not target.sandboxed:
        return _error(
            f"a sandboxed session cannot spawn an unsandboxed agent ({target_id})",
            status="forbidden",
        )
    if sandbox == "require" and not target.sandboxed:
        return _error(f'sandbox="require" needs a sandboxed agent; {target_id} is not sandboxed')
    if model and not MODEL_SHAPE.match(model):
        return _error(f'Invalid model "{model}": use letters, digits and . _ : / @ + -')
    if thinking is not None and thinking.lower() not in THINKING_LEVELS:
        return _error(
            f'Invalid thinking level "{thinking}". Use one of: {", ".join(THINKING_LEVELS)}.'
        )
    try:
        chain = next_hop(
            tool="sessions_spawn", from_agent=requester.agent_id, to_agent=target_id, config=config
        )
    except Forbidden as exc:
        return _error(exc.message, status="forbidden")

    child_key = f"agent:{target_id}:subagent:{uuid.uuid4()}"
    try:
        staged = stage_attachments(
            attachments=attachments,
            limits=AttachmentLimits.from_config(config),
            workspace=workspace_for(child_key),
        )
    except AttachmentRefused as exc:
        return _error(exc.message, status=exc.status)

    requester_channel = requester_row.row_channel if requester_row else ""
    system_prompt = prompts.subagent_system_prompt(
        task=task,
        label=label,
        requester_key=requester.session_key,
        requester_channel=requester_channel,
        child_key=child_key,
    )
    if staged is not None:
        system_prompt += "\n\n" + staged.prompt_suffix(mount_path)
    from ..runs.engine import start_run

    try:
        with transaction.atomic():
            entry = {"spawnedBy": requester.session_key, "spawnDepth": depth + 1, "label": label}
            if model:
                entry["model"] = model
            if thinking and thinking.lower() != "off":
                entry["thinkingLevel"] = thinking.lower()
            child, _ = store.upsert_session(api_key=None, key=child_key, entry=entry)
            run = start_run(
                session=child,
                kind="spawn",
                message=task,
                provenance=inter_session(
                    requester.session_key, "sessions_spawn", channel=requester_channel
                ),
                extra_system_prompt=system_prompt,
                requester_key=requester.session_key,
                requester_channel=requester_channel,
                chain=chain,
                timeout_seconds=timeout,
                model=model,
                label=label,
                flow={
                    "type": "spawn",
                    "requester": requester.session_key,
                    "requesterChannel": requester_channel,
                    "task": task,
                    "label": label,
                    "cleanup": cleanup,
                    "attachmentsDir": str(staged.abs_dir) if staged else None,
                },
            )
    except Exception:
        if staged is not None:
            remove_staged(staged)
        raise
    result = {
        "status": "accepted",
        "childSessionKey": child_key,
        "runId": str(run.pk),
        "mode": "run",
        "note": RUN_NOTE,
    }
    if model:
        result["modelApplied"] = model
    if staged is not None:
        result["attachments"] = staged.receipt()
    return result
