"""What every agent backend gets and returns. A backend produces one agent turn; the engine
stores it, so backends never touch the ORM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

REPLY_SKIP = "REPLY_SKIP"
ANNOUNCE_SKIP = "ANNOUNCE_SKIP"


class BackendError(Exception):
    """The turn failed (bad configuration, HTTP error, model error); the run ends as `error`."""


class TurnAborted(Exception):
    """Raised by `check_abort` when the run was aborted or ran past its deadline."""


def ends_turn(details: dict[str, Any]) -> bool:
    """A tool result that ends the turn once the model's current response is handled: the
    agent yielded (sessions_yield); the backend returns what the turn has so far."""
    return details.get("status") == "yielded"


@dataclass
class ToolSpec:
    """A tool the agent may call: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class TurnInput:
    session_key: str
    agent_id: str
    kind: str  # run kind: send, step, announce, spawn, ingest
    model: str
    backend: dict[str, Any]  # the Agent's backend settings
    # The session's recent transcript (raw OpenClaw messages, oldest first); the new input
    # message is the last one.
    messages: list[dict[str, Any]]
    extra_system_prompt: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    # The turn's output so far: the backend appends its messages here as it goes (and returns
    # them in TurnOutput), so a tool call can see what its own turn did before it.
    progress: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TurnOutput:
    # Messages to append after the input, as raw transcript payloads: assistant messages (with
    # text and toolCall blocks) and toolResult messages, in order.
    messages: list[dict[str, Any]]
    usage: dict[str, int] = field(default_factory=dict)  # {"input", "output", "totalTokens"}

    @property
    def reply(self) -> str:
        """The final assistant text (reference §4.7): text blocks of the last assistant message."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                return assistant_text(message)
        return ""


def assistant_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


# call_tool(name, arguments) -> details dict (refusals come back as {"status", "error"}).
CallTool = Callable[[str, dict[str, Any]], dict[str, Any]]
# check_abort() raises TurnAborted when the run must stop; call it between slow steps.
CheckAbort = Callable[[], None]


class Backend(Protocol):
    def run(
        self, turn: TurnInput, *, call_tool: CallTool, check_abort: CheckAbort
    ) -> TurnOutput: ...
