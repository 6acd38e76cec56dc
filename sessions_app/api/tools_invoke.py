"""POST /tools/invoke, wire-compatible with OpenClaw (api.md §2).

200 {"ok": true, "result": {"content": [{"type": "text", "text": <details as JSON>}], "details"}};
a refusal is a result too (details {"status": "error"|"forbidden", "error"}). Malformed calls get
400 (type `tool_error`), a missing or bad key 401, a key that may not act as the session 403, an
unknown tool 404, another method 405, a body over the limit 413, an unreachable database 503.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse

from openclaw_common.dbstep import db_step
from openclaw_common.errors import InvalidArgument, Refusal

from .. import store
from ..lib.args import closed
from ..lib.jsontext import dumps_bytes, dumps_pretty, dumps_pretty_bytes
from ..tools import TOOLS
from . import http

BODY_FIELDS = frozenset(
    {"tool", "args", "sessionKey", "agentId", "idempotencyKey", "action", "dryRun"}
)
MAX_FIELD_LENGTH = 256
IDEMPOTENCY_KEY_PLACE = (
    "idempotencyKey goes at the top level of the body, beside tool and args (or in an "
    "Idempotency-Key header), not inside args"
)


def tool_result(details: dict) -> dict:
    # A tool that writes its own text (session_status's card) is shown as that text, as 9.6.
    status_text = details.get("statusText")
    text = status_text if isinstance(status_text, str) else dumps_pretty(details)
    return {"ok": True, "result": {"content": [{"type": "text", "text": text}], "details": details}}


def tool_result_bytes(details: dict) -> bytes:
    """tool_result() as the response's bytes, the details encoded once (issue 26): the text is
    their two-space indented JSON, and the same bytes are the `details` member (whitespace
    between JSON tokens changes no value), instead of encoding them again compact."""
    pretty = dumps_pretty_bytes(details)
    status_text = details.get("statusText")
    text = status_text if isinstance(status_text, str) else pretty.decode()
    return b"".join(
        (
            b'{"ok":true,"result":{"content":[{"type":"text","text":',
            dumps_bytes(text),
            b'}],"details":',
            pretty,
            b"}}",
        )
    )


@dataclass(frozen=True)
class Invocation:
    tool: str
    args: Any
    session_key: Any
    agent_id: Any
    idempotency_key: str | None


def read_invocation(body: dict, request) -> Invocation:
    """The call a body asks for. Raises InvalidArgument, or UnknownTool (404)."""
    closed(body, BODY_FIELDS)
    name = body.get("tool")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument("tool is required (a tool name string)")
    check_optional_fields(body)
    args = body.get("args")
    if isinstance(args, dict) and "idempotencyKey" in args:
        raise InvalidArgument(IDEMPOTENCY_KEY_PLACE)
    tool = TOOLS.get(name.strip())
    return Invocation(
        tool=tool.name,
        args=body.get("args"),
        session_key=body.get("sessionKey"),
        agent_id=body.get("agentId"),
        idempotency_key=idempotency_key_of(request, body),
    )


def check_optional_fields(body: dict) -> None:
    """The envelope fields no tool reads yet still have a type (OpenClaw: strings, dryRun bool)."""
    for field in ("idempotencyKey", "action"):
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(f"{field} must be a string")
        if isinstance(value, str) and len(value) > MAX_FIELD_LENGTH:
            raise InvalidArgument(f"{field} must be at most {MAX_FIELD_LENGTH} characters")
    if body.get("dryRun") is not None and not isinstance(body["dryRun"], bool):
        raise InvalidArgument("dryRun must be a boolean")


def idempotency_key_of(request, body: dict) -> str | None:
    """The body's idempotencyKey, else the Idempotency-Key header."""
    key = body.get("idempotencyKey") or request.headers.get("Idempotency-Key") or None
    if not isinstance(key, str) or not key.strip():
        return None
    store.check_storable(key, "Idempotency-Key")  # the body's was checked with the body
    return key.strip()[:MAX_FIELD_LENGTH]


@http.endpoint("POST", invalid_type="tool_error")
async def tools_invoke(request):
    """Async, so sessions_send can wait for its reply without holding a thread."""
    call = read_invocation(http.read_json_object(request), request)

    def requester() -> http.Requester:
        return http.requester(
            request.api_key, request, session_key=call.session_key, agent_id=call.agent_id
        )

    try:
        # The requester is resolved in the tool's own thread step (the registry's invoke).
        details = await TOOLS.invoke(
            call.tool,
            requester=requester,
            args=call.args,
            idempotency_key=call.idempotency_key,
            in_thread=db_step,
        )
    except Refusal as exc:
        details = {"status": exc.status, "error": exc.message}
    return HttpResponse(tool_result_bytes(details), content_type="application/json")
