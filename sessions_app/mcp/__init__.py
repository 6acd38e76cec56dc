"""MCP (Model Context Protocol) adapter: the session tools for any MCP client (docs/mcp.md).

server.py builds the SDK server (tools, resources); http.py serves it at /mcp/; the `mcp`
management command serves it on stdio. Like every adapter it parses, calls the registry's
`invoke`, and renders.
"""
