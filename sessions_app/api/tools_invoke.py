"""POST /tools/invoke, wire-compatible with OpenClaw (api.md §2).

200 {"ok": true, "result": {"content": [{"type": "text", "text": <details as JSON>}], "details"}};
a refusal is a result too (details {"status": "error"|"forbidden", "error"}). Malformed calls get
400, a missing or bad key 401, a key that may not act as the session 403, an unknown tool 404,
another method 405, a body over the limit 413.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from ..errors import Refusal, ToolError
from ..identity import requester_for
from ..jsontext import dumps_bytes, dumps_pretty
from ..tools import ASYNC_TOOLS, TOOLS
from .auth import api_key_from_header
from .errors import UNAVAILABLE, error_json, is_unavailable
from .parsers import decode_json_body

BODY_FIELDS = frozenset(
    {"tool", "args", "sessionKey", "agentId", "idempotencyKey", "action", "dryRun"}
)
MAX_FIELD_LENGTH = 256


def tool_result(details: dict) -> dict:
    text = dumps_pretty(details)
    return {"ok": True, "result": {"content": [{"type": "text", "text": text}], "details": details}}


def json_response(body: dict, status: int = 200) -> HttpResponse:
    return HttpResponse(dumps_bytes(body), status=status, content_type="application/json")


def check_optional_fields(body: dict) -> str | None:
    """The envelope fields no tool reads yet still have a type (OpenClaw: strings, dryRun bool)."""
    for field in ("idempotencyKey", "action"):
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            return f"{field} must be a string"
        if isinstance(value, str) and len(value) > MAX_FIELD_LENGTH:
            return f"{field} must be at most {MAX_FIELD_LENGTH} characters"
    if body.get("dryRun") is not None and not isinstance(body["dryRun"], bool):
        return "dryRun must be a boolean"
    return None


def read_body(request):
    length = request.META.get("CONTENT_LENGTH")
    if length and length.isdigit() and int(length) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise RequestDataTooBig()
    return decode_json_body(request.body)


def idempotency_key_of(request, body: dict) -> str | None:
    """The body's idempotencyKey, else the Idempotency-Key header."""
    key = body.get("idempotencyKey") or request.headers.get("Idempotency-Key") or None
    return key.strip()[:MAX_FIELD_LENGTH] if isinstance(key, str) and key.strip() else None


@csrf_exempt
async def tools_invoke(request):
    """Async, so sessions_send can wait for its reply without holding a thread."""
    if request.method != "POST":
        return error_json(405, "Use POST", headers={"Allow": "POST"})
    api_key = await sync_to_async(api_key_from_header)(request.META.get("HTTP_AUTHORIZATION"))
    if api_key is None:
        return error_json(
            401,
            "Authentication required: send Authorization: Bearer <api key>",
            headers={"WWW-Authenticate": 'Bearer realm="openclaw-sessions"'},
        )
    try:
        body = read_body(request)
    except RequestDataTooBig:
        return error_json(413, "request body is larger than the limit")
    except ValueError as exc:
        return error_json(400, str(exc), "tool_error")
    if not isinstance(body, dict):
        return error_json(400, "request body must be a JSON object", "tool_error")
    unknown = sorted(k for k in body if k not in BODY_FIELDS)
    if unknown:
        return error_json(400, f"Unknown field: {', '.join(unknown)}", "tool_error")
    name = body.get("tool")
    if not isinstance(name, str) or not name.strip():
        return error_json(400, "tool is required (a tool name string)", "tool_error")
    problem = check_optional_fields(body)
    if problem:
        return error_json(400, problem, "tool_error")
    tool = TOOLS.get(name.strip())
    if tool is None:
        return error_json(404, f"Tool not available: {name}", "not_found")
    try:
        requester = await sync_to_async(requester_for)(
            api_key, session_key=body.get("sessionKey"), agent_id=body.get("agentId")
        )
        if name.strip() in ASYNC_TOOLS:
            details = await ASYNC_TOOLS[name.strip()](
                requester=requester,
                args=body.get("args"),
                idempotency_key=idempotency_key_of(request, body),
            )
        else:
            details = await sync_to_async(tool)(requester=requester, args=body.get("args"))
    except Refusal as exc:
        details = {"status": exc.status, "error": exc.message}
    except ToolError as exc:
        error_type = "tool_error" if exc.http_status == 400 else exc.error_type
        return error_json(exc.http_status, exc.message, error_type)
    except Exception as exc:
        if is_unavailable(exc):
            return error_json(503, UNAVAILABLE, "unavailable", headers={"Retry-After": "1"})
        raise
    return json_response(tool_result(details))
