"""The public surface: one function per tool. Every adapter (REST, /tools/invoke, WebSocket,
admin, tasks, commands) calls these, never the models directly.

Each tool is `tool(*, requester, args) -> details dict`; it raises InvalidArgument for malformed
arguments and Refusal (Forbidden / NotFound) for a refusal.
"""

from .agents_list import agents_list
from .sessions_history import sessions_history
from .sessions_list import sessions_list
from .sessions_send import sessions_send, sessions_send_async
from .sessions_spawn import sessions_spawn

TOOLS = {
    "sessions_list": sessions_list,
    "sessions_history": sessions_history,
    "sessions_send": sessions_send,
    "sessions_spawn": sessions_spawn,
    "agents_list": agents_list,
}
# Tools that wait: async adapters call these instead, so the wait holds no thread.
ASYNC_TOOLS = {"sessions_send": sessions_send_async}

__all__ = [
    "ASYNC_TOOLS",
    "TOOLS",
    "agents_list",
    "sessions_history",
    "sessions_list",
    "sessions_send",
]
