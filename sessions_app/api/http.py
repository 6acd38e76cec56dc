"""The API's one edge. Every way in over HTTP (`/tools/invoke`, the async views that wait, the DRF
resources) authenticates, reads its body, resolves the requester and reports errors here, so they
answer alike: `{"ok": false, "error": {"type", "message"}}` with the right status.

- `endpoint(*methods)`: the decorator of the plain async views (method, key, errors).
- `read_json_object()` / `decode_json_object()`: the body, under the size limit, as a strict JSON
  object (what every JSON body on the API is; `null`, a list, a string or a number is a 400).
- `requester()`: the session the key acts as (`X-OpenClaw-Session-Key`, default its main session).
- `error_response()`: a domain error, an oversized body or an unreachable database as a response;
  the DRF exception handler (api/drf.py) calls it too.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from openclaw_common.dbstep import db_step
from openclaw_common.errors import InvalidArgument, ToolError, Unauthenticated

from ..access.identity import Requester, requester_for
from ..access.source_limit import source_of_request
from ..lib.jsontext import dumps_bytes
from ..models import ApiKey
from ..runs.wait import WaitUnavailable
from ..store import check_storable
from . import gate, ratelimit

SESSION_HEADER = "HTTP_X_OPENCLAW_SESSION_KEY"
WWW_AUTHENTICATE = 'Bearer realm="openclaw-sessions"'
UNAVAILABLE = "the database is busy or unreachable; retry shortly"
TOO_LARGE = "request body is larger than the limit"
ERROR_TYPES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    502: "bad_gateway",
    503: "unavailable",
}


# --- responses ------------------------------------------------------------------------------


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None):
    return HttpResponse(
        dumps_bytes(body), status=status, content_type="application/json", headers=headers
    )


def envelope(error_type: str, message: str, details: dict | None = None) -> dict:
    """The error body; `details` when the error carries machine-readable ones (a failed
    `expectedSessionId` guard: `{"reason": "session-changed"}`, as 9.6's frames say)."""
    error: dict = {"type": error_type, "message": message}
    if details:
        error["details"] = details
    return {"ok": False, "error": error}


# A 503 always tells the client when to come back (issue 16 item 13): the database or the pool
# is back within seconds, or the answer says otherwise (a lost cold archive: a minute).
RETRY_AFTER_UNAVAILABLE = "1"


def error_json(
    status: int,
    message: str,
    error_type: str | None = None,
    headers: dict | None = None,
    details: dict | None = None,
):
    if status == 503:
        headers = {"Retry-After": RETRY_AFTER_UNAVAILABLE, **(headers or {})}
    body = envelope(error_type or ERROR_TYPES.get(status, "error"), message, details)
    return json_response(body, status, headers)


def error_response(exc: BaseException, *, invalid_type: str | None = None) -> HttpResponse | None:
    """The response for an error the API expects, or None for a bug (it stays a 500).

    `invalid_type`: the error type of a 400 (`/tools/invoke` says `tool_error`, as OpenClaw)."""
    if isinstance(exc, Unauthenticated):
        return error_json(401, exc.message, headers={"WWW-Authenticate": WWW_AUTHENTICATE})
    if isinstance(exc, ToolError):
        error_type = invalid_type if invalid_type and exc.http_status == 400 else exc.error_type
        retry_after = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry_after)} if retry_after else None
        return error_json(exc.http_status, exc.message, error_type, headers, exc.details)
    if isinstance(exc, RequestDataTooBig):
        return error_json(413, TOO_LARGE)
    if isinstance(exc, WaitUnavailable):
        # During a wait: the run exists and goes on; the client rejoins it by this id.
        body = {**envelope("unavailable", UNAVAILABLE), "runId": exc.run_id}
        return json_response(body, 503, {"Retry-After": RETRY_AFTER_UNAVAILABLE})
    if is_unavailable(exc):
        return error_json(503, UNAVAILABLE)
    return None


def is_unavailable(exc: BaseException) -> bool:
    """A connection that could not be had (pool timeout, server down, SQLite locked too long)."""
    if isinstance(exc, OperationalError):
        return True
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # pragma: no cover - the pool is installed with psycopg[pool]
        return False
    return isinstance(exc, PoolTimeout) or isinstance(exc.__cause__, PoolTimeout)


# --- bodies ---------------------------------------------------------------------------------


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str):
    raise _NotJson(f"{name} is not JSON")


def decode_json(raw: bytes) -> Any:
    """Strict UTF-8 + JSON (no NaN/Infinity, no strings a column cannot hold). Raises
    InvalidArgument with a message for the client."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument("request body is not valid UTF-8") from None
    if not text.strip():
        raise InvalidArgument("request body is empty; send a JSON object")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        # ValueError also covers integers past int()'s 4300-digit limit.
        raise InvalidArgument(f"request body is not valid JSON: {exc}") from None
    check_storable(data)
    return data


NOT_AN_OBJECT = "request body must be a JSON object"


def decode_json_object(raw: bytes) -> dict:
    """decode_json, and the top level must be an object: every JSON body on the API is one, so
    the readers (this edge's and DRF's parser, api/drf.py) refuse anything else before a view
    can call `.get` on `null`."""
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise InvalidArgument(NOT_AN_OBJECT)
    return body


def check_size(declared_length: str | None) -> None:
    """Refuse a body whose declared length is over the limit before reading it."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if (
        limit is not None
        and declared_length
        and declared_length.isdigit()
        and int(declared_length) > limit
    ):
        raise RequestDataTooBig(TOO_LARGE)


def read_json_object(request) -> dict:
    """The request's body: a JSON object under the size limit. Raises InvalidArgument or
    RequestDataTooBig (Django's own check, for a body without a declared length)."""
    check_size(request.META.get("CONTENT_LENGTH"))
    return decode_json_object(request.body)


# --- who is calling -------------------------------------------------------------------------


FROM_HEADER: Any = object()


def requester(
    api_key: ApiKey, request, *, session_key: Any = FROM_HEADER, agent_id: Any = None
) -> Requester:
    """The session `api_key` acts as: `session_key` (the REST resources: the
    X-OpenClaw-Session-Key header; /tools/invoke: its body's `sessionKey`), else the key's
    default. Raises AccessDenied or InvalidArgument."""
    if session_key is FROM_HEADER:
        session_key = request.META.get(SESSION_HEADER)
    return requester_for(api_key, session_key=session_key, agent_id=agent_id)


# --- plain async views ----------------------------------------------------------------------


def endpoint(*methods: str, invalid_type: str | None = None):
    """An async API view: method check (405), API key (401, as `request.api_key`), and every
    expected error as the envelope. The key is checked before the body is read."""

    def wrap(view):
        @csrf_exempt
        @functools.wraps(view)
        async def handler(request, *args, **kwargs):
            if request.method not in methods:
                return error_json(
                    405, f"Use {' or '.join(methods)}", headers={"Allow": ", ".join(methods)}
                )
            authorization = request.META.get("HTTP_AUTHORIZATION")
            scope = getattr(request, "scope", None)
            held = bool((scope or {}).get(ratelimit.DOOR_PLACE))
            try:
                async with ratelimit.before_auth(authorization, held=held) as busy:  # 429
                    if busy is not None:
                        return busy
                    # 401, 429; from the process's cache on the event loop when it can be
                    source = source_of_request(request)
                    api_key = gate.admit_cached(authorization, scope, source=source)
                    request.api_key = api_key or await db_step(gate.admit)(
                        authorization, scope, source=source
                    )
                    async with ratelimit.in_flight(request.api_key) as refused:  # 429
                        if refused is not None:
                            return refused
                        return await view(request, *args, **kwargs)
            except Exception as exc:
                response = error_response(exc, invalid_type=invalid_type)
                if response is None:
                    raise
                return response

        # (the API schema test reads it). mypy cannot type an attribute set on a function.
        handler.allowed_methods = methods  # type: ignore[attr-defined]
        return handler

    return wrap
