"""Plain async Django views for the endpoints that wait (DRF has no async views): the send, the
run wait, and the small run resources beside them. Same edge as the rest of the API
(api/http.py): key, body rules and error envelope."""

from __future__ import annotations

from openclaw_common.dbstep import db_step

from ..lib.args import Args
from ..runs import engine
from ..runs.lookup import get_run_for, run_as_dict
from ..runs.wait import wait_for_run
from ..tools.sessions_send import DECLARATION as SEND_DECLARATION
from ..tools.sessions_send import TOOL as SEND_TOOL
from . import http, send_body
from .tools_invoke import idempotency_key_of

MAX_WAIT_SECONDS = 600


async def requester_of(request):
    return await db_step(http.requester)(request.api_key, request)


@http.endpoint("POST")
async def session_send(request, key: str):
    """POST /api/v1/sessions/{key}/send/ — sessions_send to this session."""
    body = http.read_json_object(request)
    Args(body, send_body.NAMES, tool="send")  # (closed: a REST body)
    body = SEND_DECLARATION.camel(body)
    requester = await requester_of(request)
    args = {"sessionKey": key, **{k: v for k, v in body.items() if k != "idempotencyKey"}}
    assert SEND_TOOL.run_async is not None  # sessions_send waits holding no thread
    result = await SEND_TOOL.run_async(
        requester=requester, args=args, idempotency_key=idempotency_key_of(request, body)
    )
    return http.json_response(result)


@http.endpoint("GET")
async def run_detail(request, run_id):
    requester = await requester_of(request)
    run = await db_step(get_run_for)(requester, run_id)
    return http.json_response(run_as_dict(run, settings=requester.key_settings))


@http.endpoint("GET")
async def run_wait(request, run_id):
    """GET /api/v1/runs/{id}/wait/?timeout=N — join a run: 200 when finished, 202 while not."""
    a = Args(dict(request.GET.items()), frozenset({"timeout"}), tool="wait")
    timeout = min(a.integer("timeout", minimum=0, default=30), MAX_WAIT_SECONDS)
    requester = await requester_of(request)
    run = await db_step(get_run_for)(requester, run_id)
    run = await wait_for_run(run.pk, timeout) or run
    body = run_as_dict(run, settings=requester.key_settings)
    if run.finished:
        return http.json_response(body)
    return http.json_response(body, status=202, headers={"Retry-After": "1"})


@http.endpoint("POST")
async def run_abort(request, run_id):
    requester = await requester_of(request)
    run = await db_step(get_run_for)(requester, run_id)
    aborted = await db_step(engine.abort_run)(run)
    run = await db_step(get_run_for)(requester, run_id)
    return http.json_response(
        {**run_as_dict(run, settings=requester.key_settings), "aborted": aborted}
    )
