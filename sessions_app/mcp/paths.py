"""Which requests are MCP's (`/mcp/`), without importing the MCP SDK: the site's ASGI entry
asks this on every request and imports the server (sessions_app/mcp/http.py, most of a second
of a process's start) only when the first MCP request comes."""

from __future__ import annotations

PATHS = ("/mcp", "/mcp/")


def is_mcp_path(scope: dict) -> bool:
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path in PATHS or path.startswith("/mcp/")
