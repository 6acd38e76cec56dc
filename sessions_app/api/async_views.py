"""Plain async Django views for the endpoints that wait (DRF has no async views): the send, the
run wait, and the small run resources beside them. Same auth, body rules and error envelope as
the rest of the API."""

from __future__ import annotations

import functools

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from ..args import Args
from ..errors import ToolError
from ..identity import requester_for
from ..jsontext import dumps_bytes
from ..runs import engine
from ..runs.lookup import get_run_for, run_as_dict
from ..runs.wait import wait_for_run
from ..tools.sessions_send import sessions_send_async
from .auth import api_key_from_header
from .errors import UNAVAILABLE, error_json, is_unavailable
from .parsers import decode_json_body
from .tools_invoke import idempotency_key_of

MAX_WAIT_SECONDS = 600


def json_response(body, status: int = 200, **headers) -> HttpResponse:
    response = HttpResponse(dumps_bytes(body), status=status, content_type="application/json")
    for name, value in headers.items():
        response[name] = value
    return response


def api_endpoint(*methods: str):
    """Method check, API-key auth (→ request.api_key), ToolError → envelope."""

    def wrap(view):
        @csrf_exempt
        @functools.wraps(view)
        async def handler(request, *args, **kwargs):
            if request.method not in methods:
                return error_json(
                    405, f"Use {' or '.join(methods)}", headers={"Allow": ", ".join(methods)}
                )
            api_key = await sync_to_async(api_key_from_header)(
                request.META.get("HTTP_AUTHORIZATION")
            )
            if api_key is None:
                return error_json(
                    401,
                    "Authentication required: send Authorization: Bearer <api key>",
                    headers={"WWW-Authenticate": 'Bearer realm="openclaw-sessions"'},
                )
            request.api_key = api_key
            try:
                return await view(request, *args, **kwargs)
            except RequestDataTooBig:
                return error_json(413, "request body is larger than the limit")
            except ToolError as exc:
                return error_json(exc.http_status, exc.message, exc.error_type)
            except Exception as exc:
                if is_unavailable(exc):
                    return error_json(503, UNAVAILABLE, "unavailable", headers={"Retry-After": "1"})
                raise

        return handler

    return wrap


def json_body(request) -> dict:
    length = request.META.get("CONTENT_LENGTH")
    if length and length.isdigit() and int(length) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise RequestDataTooBig()
    try:
        body = decode_json_body(request.body)
    except ValueError as exc:
        from ..errors import InvalidArgument

        raise InvalidArgument(str(exc)) from None
    if not isinstance(body, dict):
        from ..errors import InvalidArgument

        raise InvalidArgument("request body must be a JSON object")
    return body


async def requester_of(request):
    return await sync_to_async(requester_for)(
        request.api_key, session_key=request.headers.get("X-OpenClaw-Session-Key")
    )


@api_endpoint("POST")
async def session_send(request, key: str):
    """POST /api/v1/sessions/{key}/send/ — sessions_send to this session."""
    body = json_body(request)
    Args(body, frozenset({"message", "timeoutSeconds", "idempotencyKey"}), tool="send")
    requester = await requester_of(request)
    args = {"sessionKey": key, **{k: v for k, v in body.items() if k != "idempotencyKey"}}
    result = await sessions_send_async(
        requester=requester, args=args, idempotency_key=idempotency_key_of(request, body)
    )
    return json_response(result)


@api_endpoint("GET")
async def run_detail(request, run_id):
    requester = await requester_of(request)
    run = await sync_to_async(get_run_for)(requester, run_id)
    return json_response(run_as_dict(run, settings=requester.key_settings))


@api_endpoint("GET")
async def run_wait(request, run_id):
    """GET /api/v1/runs/{id}/wait/?timeout=N — join a run: 200 when finished, 202 while not."""
    a = Args(dict(request.GET.items()), frozenset({"timeout"}), tool="wait")
    timeout = min(a.integer("timeout", minimum=0, default=30), MAX_WAIT_SECONDS)
    requester = await requester_of(request)
    run = await sync_to_async(get_run_for)(requester, run_id)
    run = await wait_for_run(run.pk, timeout) or run
    body = run_as_dict(run, settings=requester.key_settings)
    if run.finished:
        return json_response(body)
    return json_response(body, status=202, **{"Retry-After": "1"})


@api_endpoint("POST")
async def run_abort(request, run_id):
    requester = await requester_of(request)
    run = await sync_to_async(get_run_for)(requester, run_id)
    aborted = await sync_to_async(engine.abort_run)(run)
    run = await sync_to_async(get_run_for)(requester, run_id)
    return json_response({**run_as_dict(run, settings=requester.key_settings), "aborted": aborted})
