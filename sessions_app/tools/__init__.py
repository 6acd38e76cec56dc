"""The public surface: one function per tool. Every adapter (REST, /tools/invoke, WebSocket,
admin, tasks, commands) calls these, never the models directly.

Each tool is `tool(*, requester, args) -> details dict`; it raises InvalidArgument for malformed
arguments and Refusal (Forbidden / NotFound) for a refusal.
"""

from .agents_list import agents_list
from .sessions_history import sessions_history
from .sessions_list import sessions_list

TOOLS = {
    "sessions_list": sessions_list,
    "sessions_history": sessions_history,
    "agents_list": agents_list,
}

__all__ = ["TOOLS", "agents_list", "sessions_history", "sessions_list"]
