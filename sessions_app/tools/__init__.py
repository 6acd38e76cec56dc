"""The public surface: one module per tool, each exporting `TOOL` (its declaration and its
function). Every adapter (REST, /tools/invoke, WebSocket, a run's own tool calls, commands) goes
through these, never the models directly.

A tool function is `tool(*, requester, args) -> details dict`; it raises InvalidArgument for
malformed arguments and a Refusal (Forbidden / NotFound) for a refusal. Adding a tool is one new
module here plus its name in runs/tool_policy.ALL_TOOLS (docs/architecture.md, "Adding a tool").
"""

from importlib import import_module

from ..runs.tool_policy import ALL_TOOLS
from .registry import ToolRegistry, UnknownTool

# One module per tool name, in the order the tools are offered to a model in.
TOOLS = ToolRegistry(import_module(f"{__name__}.{name}").TOOL for name in ALL_TOOLS)

__all__ = ["TOOLS", "ToolRegistry", "UnknownTool"]
