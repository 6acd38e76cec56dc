"""One error shape everywhere: {"ok": false, "error": {"type", "message"}} with the right status."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..errors import ToolError

_TYPES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def envelope(error_type: str, message: str) -> dict:
    return {"ok": False, "error": {"type": error_type, "message": message}}


UNAVAILABLE = "the database is busy or unreachable; retry shortly"


def error_json(
    status_code: int, message: str, error_type: str | None = None, **kwargs
) -> JsonResponse:
    return JsonResponse(
        envelope(error_type or _TYPES.get(status_code, "error"), message),
        status=status_code,
        **kwargs,
    )


def _message(detail) -> str:
    if isinstance(detail, list):
        return "; ".join(_message(d) for d in detail)
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_message(v)}" for k, v in detail.items())
    return str(detail)


def exception_handler(exc, context):
    # Django's own exceptions, as DRF's default handler maps them (e.g. `?format=xml` raises
    # Http404 during content negotiation), so they get the envelope rather than an HTML page.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, ToolError):
        return Response(envelope(exc.error_type, exc.message), status=exc.http_status)
    if isinstance(exc, DatabaseError) and is_unavailable(exc):
        return Response(
            envelope("unavailable", UNAVAILABLE), status=503, headers={"Retry-After": "1"}
        )
    if isinstance(exc, RequestDataTooBig):
        return Response(
            envelope("payload_too_large", "request body is larger than the limit"),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, exceptions.APIException):
        code = exc.status_code
        headers = {}
        if isinstance(exc, exceptions.MethodNotAllowed):
            view = context.get("view")
            if view is not None:
                headers["Allow"] = ", ".join(view.allowed_methods)
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if isinstance(exc, exceptions.NotAuthenticated):
            message = "Authentication required: send Authorization: Bearer <api key>"
        else:
            message = _message(exc.detail)
        return Response(envelope(_TYPES.get(code, "error"), message), status=code, headers=headers)
    return None


def is_unavailable(exc: Exception) -> bool:
    """A connection that could not be had (pool timeout, server down, SQLite locked too long)."""
    if isinstance(exc, OperationalError):
        return True
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # pragma: no cover - the pool is installed with psycopg[pool]
        return False
    return isinstance(exc, PoolTimeout) or isinstance(exc.__cause__, PoolTimeout)
