"""The public surface: one module per tool, each exporting `TOOL` (its declaration and its
function). Every adapter (REST, /tools/invoke, WebSocket, a run's own tool calls, commands) goes
through these, never the models directly.

A tool function is `tool(*, requester, args) -> details dict`; it raises InvalidArgument for
malformed arguments and a Refusal (Forbidden / NotFound) for a refusal. Adding a tool is one new
module here, its name in NAMES, and its Policy on its declaration (docs/architecture.md,
"Adding a tool").
"""

from importlib import import_module

from ..runs.tool_policy import Policy
from .registry import ToolRegistry, UnknownTool

# One module per tool name, in the order the tools are offered to a model.
NAMES = (
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "sessions_send",
    "sessions_spawn",
    "sessions_yield",
    "subagents",
    "agents_list",
    "session_status",
    "sessions",
)
TOOLS = ToolRegistry(import_module(f"{__name__}.{name}").TOOL for name in NAMES)


def policies() -> dict[str, Policy]:
    """Each tool's declared offer policy, in offer order (runs/tool_policy.install)."""
    return {tool.name: tool.declaration.policy for tool in TOOLS}


__all__ = ["NAMES", "TOOLS", "ToolRegistry", "UnknownTool", "policies"]
