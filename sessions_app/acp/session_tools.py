"""The session tools inside a harness (issue 27 item 4; docs/acp.md "The session tools inside a
harness").

A harness with `sessionTools` on gets, with each turn's ACP session, this service's MCP server
over HTTP (OPENCLAW_MCP_URL, normally `/mcp/` on loopback) and a key made for that turn:
- pinned to the child session, of the harness's agent: it acts only as the child, so every tool
  holds it to the child's place: visibility and agent-to-agent from the child, the send policy,
  the spawn depth and leaf rules of a child at that depth, the sandbox clamp when the run was
  started by a sandboxed key (Run.sandboxed) or the harness's agent is sandboxed;
- tied to the run (ApiKey.acp_run), revoked when the turn ends however it ends (runtime.py), and
  by the watchdog and the sweep for a run that ended without its worker saying so
  (ApiKeyQuerySet.revoke_ended_acp_runs): a revocation moves the access version, so every
  process refuses the key on its next request.

Only HTTP, not `manage.py mcp` over stdio: a stdio server would run as the harness's user with
the database's credentials in its environment, which is what the harness's own user is there to
keep from it (sandbox.py). A harness that does not announce `mcpCapabilities.http` gets no MCP
server, and its start message says so (client.py).

The key's plaintext lives only in the turn's memory and the harness process: it is never stored
(the row has its hash), logged (client.py redacts keys from what a harness writes to the log),
or written to the transcript (the start message names the key's id).
"""

from __future__ import annotations

from dataclasses import dataclass

from acp.schema import HttpHeader, HttpMcpServer
from django.conf import settings

from ..lib.outbound import OutboundRefused, check_own_url
from ..models import ApiKey, Run

# The MCP server's name as the harness sees it: Codex offers its tools to the model as
# `mcp__openclaw__sessions_history` and so on.
SERVER_NAME = "openclaw"
URL_SETTING = "OPENCLAW_MCP_URL"


@dataclass(frozen=True)
class Grant:
    """The MCP server handed to one turn: the key's row id and the server entry (with the
    plaintext in its header: keep it out of anything stored)."""

    key_id: int
    url: str
    server: HttpMcpServer

    def __repr__(self) -> str:  # a traceback or a log line must not show the header
        return f"Grant(key_id={self.key_id}, url={self.url!r})"


class NotGranted(Exception):
    """The session tools cannot be handed out (the message says why; it holds no secret)."""


def mcp_url() -> str:
    """OPENCLAW_MCP_URL, checked (lib/outbound.check_own_url). Raises NotGranted."""
    url = str(getattr(settings, "OPENCLAW_MCP_URL", "") or "")
    if not url:
        raise NotGranted(f"{URL_SETTING} is not set")
    try:
        return check_own_url(url, setting=URL_SETTING)
    except OutboundRefused as exc:
        raise NotGranted(str(exc)) from None


def grant(run: Run) -> Grant:
    """A key for this turn of the ACP child `run.session`, and the MCP server entry that carries
    it. Raises NotGranted (then no key was made)."""
    url = mcp_url()
    session = run.session
    row, plaintext = ApiKey.generate(
        name=f"ACP session tools: {session.key} (run {run.pk})"[:200],
        scope=ApiKey.AGENT,
        agent_id=session.agent_id,
        session_key=session.key,
        sandboxed=bool(run.sandboxed),
        acp_run=run,
    )
    server = HttpMcpServer(
        type="http",
        name=SERVER_NAME,
        url=url,
        headers=[HttpHeader(name="Authorization", value=f"Bearer {plaintext}")],
    )
    return Grant(key_id=row.pk, url=url, server=server)


def revoke(run: Run) -> int:
    """Revoke the keys made for `run`'s turns (none: nothing is written)."""
    keys = ApiKey.objects.filter(acp_run_id=run.pk, revoked_at__isnull=True)
    return keys.revoke() if keys.exists() else 0
