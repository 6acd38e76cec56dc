"""The state a run's follow-up steps need (`Run.flow`), typed, and the follow-up runs that
flows.py asks the engine to start.

`Run.flow` stays a JSON column with the keys it always had (camelCase, as below): `Flow` reads
any stored row (a missing key is None) and writes only the keys that have a value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import Run, Session
    from .chain import Chain

# Flow field → its key in the JSON column.
_JSON_KEYS = {
    "type": "type",
    "requester": "requester",
    "requester_channel": "requesterChannel",
    "target": "target",
    "target_channel": "targetChannel",
    "original": "original",
    "max_turns": "maxTurns",
    "round1": "round1",
    "latest": "latest",
    "turn": "turn",
    "task": "task",
    "label": "label",
    "cleanup": "cleanup",
    "attachments_dir": "attachmentsDir",
    "outcome": "outcome",
    "completion_target": "completionTarget",
    "expects_completion": "expectsCompletionMessage",
    "yield_note": "yieldNote",
    "runtime": "runtime",
    "cwd": "cwd",
    "stream_to": "streamTo",
    "resume_session_id": "resumeSessionId",
    "task_name": "taskName",
    "context": "context",
}

A2A, SPAWN, SUBAGENT_ANNOUNCE = "a2a", "spawn", "subagent_announce"
# A requester's turn that carries sub-agent results (runs/completions.py).
COMPLETION = "completion"


@dataclass(frozen=True, slots=True)
class Flow:
    """What a finished run's follow-ups need. Every field may be None (not set)."""

    # a2a: a sessions_send and its reply loop and announce; spawn: a sub-agent's run;
    # subagent_announce: its announce step. None: no follow-up (an ingest run delivers its reply).
    type: str | None = None
    requester: str | None = None  # the requester's session key
    requester_channel: str | None = None
    target: str | None = None  # a2a: the target's session key
    target_channel: str | None = None
    original: str | None = None  # a2a: the message sent
    max_turns: int | None = None  # a2a: reply-loop turns allowed
    round1: str | None = None  # a2a: the target's first reply
    latest: str | None = None  # a2a: the latest reply of the loop
    turn: int | None = None  # a2a: the loop's turn so far
    task: str | None = None  # spawn: the sub-agent's task
    label: str | None = None  # spawn
    cleanup: str | None = None  # spawn: "keep" | "delete"
    attachments_dir: str | None = None  # spawn: staged attachments, removed on cleanup
    outcome: dict[str, Any] | None = None  # subagent_announce: how the child's run ended
    completion_target: str | None = None  # spawn: "parent" = a private completion turn
    expects_completion: bool | None = None  # spawn: False = a quiet run, no completion turn
    yield_note: str | None = None  # a yielded turn's message for the turn that resumes it
    runtime: str | None = None  # spawn: "acp" for an ACP harness child (None: a sub-agent)
    cwd: str | None = None  # spawn, acp: the session's working directory (resolved)
    stream_to: str | None = None  # spawn, acp: "parent" also streams progress to the requester
    resume_session_id: str | None = None  # spawn, acp: the ACP session to continue (session/load)
    task_name: str | None = None  # spawn: the taskName handle `subagents` targets (9.6 §4.4)
    context: str | None = None  # spawn: the context it actually started with, isolated | fork

    @classmethod
    def a2a(
        cls,
        *,
        requester: str,
        requester_channel: str,
        target: str,
        target_channel: str,
        original: str,
        max_turns: int,
    ) -> Flow:
        """A sessions_send's flow, as its run starts."""
        return cls(
            type=A2A,
            requester=requester,
            requester_channel=requester_channel,
            target=target,
            target_channel=target_channel,
            original=original,
            max_turns=max_turns,
        )

    @classmethod
    def spawn(
        cls,
        *,
        requester: str,
        requester_channel: str,
        task: str,
        label: str,
        cleanup: str,
        attachments_dir: str | None,
        completion_target: str | None = None,
        expects_completion: bool = True,
    ) -> Flow:
        """A sessions_spawn child's flow, as its run starts."""
        return cls(
            type=SPAWN,
            requester=requester,
            requester_channel=requester_channel,
            task=task,
            label=label,
            cleanup=cleanup,
            attachments_dir=attachments_dir,
            completion_target=completion_target,
            # Stored only when off: a stored flow without the key expects one (the default).
            expects_completion=None if expects_completion else False,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Flow:
        """A stored `Run.flow`; keys it does not know are ignored."""
        if not data:
            return cls()
        return cls(**{name: data.get(key) for name, key in _JSON_KEYS.items()})

    def to_json(self) -> dict[str, Any]:
        return {
            key: value
            for name, key in _JSON_KEYS.items()
            if (value := getattr(self, name)) is not None
        }


@dataclass(frozen=True)
class FollowUp:
    """A run to start in the finishing transaction: exactly `engine.start_run`'s arguments."""

    session: Session
    kind: str
    message: str | None
    chain: Chain
    provenance: dict[str, Any] | None = None
    requester_key: str = ""
    requester_channel: str = ""
    extra_system_prompt: str = ""
    parent_run: Run | None = None
    flow: Flow | None = None
    timeout_seconds: int = 0
    model: str = ""
    label: str = ""
    idempotency_key: str = ""
    deliver: bool = False
    serial: bool = False
    task_run: Run | None = None
    # A follow-up (reply step, announce, completion turn) is never the owner's turn: the
    # `sessions` tool is not offered to it (its Policy is owner_only).
    sender_is_owner: bool = False
    # Left False: start_run makes a run sandboxed when its parent_run (the run this follows)
    # was, and every follow-up names one.
    sandboxed: bool = False

    def start_run_arguments(self) -> dict[str, Any]:
        # Shallow on purpose (not dataclasses.asdict): the session and runs are passed as they are.
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
