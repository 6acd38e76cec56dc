"""A JSON body that is not an object (`null`, a list, a string, a number) is a 400 in the API's
envelope on every route that takes a body, found by walking the URL resolver so a new route is
covered without editing this file; `/mcp/` (routed before Django) answers a JSON-RPC Invalid
Request. Never a 500, never an HTML page (issue 28 item 3: `null` on reset was an HTML 500)."""

from __future__ import annotations

import asyncio
import re

import pytest

from policies_app.models import SendPolicy, SendPolicyRule
from sessions_app.models import ApiKey
from tests.api.test_api_schema import OPENCLAW_PATHS, PUBLIC_PREFIXES, methods_of, routes
from tests.mcp.asgi import ACCEPT
from tests.mcp.asgi import post as asgi_post

NOT_OBJECTS = [b"null", b"[]", b'"x"', b"1"]
WRITE_METHODS = ("post", "put", "patch")
# Values for the routes' path parameters, of rows that exist, so the body is what is refused.
PATH_VALUES = {
    "key": "agent:main:main",
    "sessionKey": "agent:main:main",
    "agent_id": "main",
    "name": "Work",
    "rule_id": "1",
    "run_id": "no-such-run",
    "session_id": "no-such-session",
}
# Routes that read no body: they answer as they would without one (a 4xx about the path here).
BODYLESS = {
    "/api/v1/runs/{run_id}/abort/": "aborts the run the path names",
    "/api/v1/agents/{agent_id}/models/refresh/": "refreshes the agent the path names",
}


def write_routes() -> list[tuple[str, str]]:
    found = []
    for path, callback in routes():
        if not (path.startswith(PUBLIC_PREFIXES) or path in OPENCLAW_PATHS):
            continue  # pages and the admin take forms, not JSON
        found.extend((path, m) for m in sorted(methods_of(callback)) if m in WRITE_METHODS)
    return found


@pytest.fixture
def world(operator, main_session):
    # Particular: the rows PATH_VALUES names (a group "Work", send policy rule 1) exist.
    assert operator.put("/api/v1/groups/", {"names": ["Work"]}).status_code == 200
    SendPolicyRule.objects.create(
        policy=SendPolicy.load(), position=1, action="deny", channel="telegram"
    )


def test_every_route_that_takes_a_body_refuses_one_that_is_not_an_object(operator, world):
    found = write_routes()
    assert len(found) >= 15  # the walk found the API (a broken walk would pass vacuously)
    wrong = []
    for route, method in found:
        path = re.sub(r"{(\w+)}", lambda m: PATH_VALUES.get(m[1], "x"), route)
        for body in NOT_OBJECTS:
            response = getattr(operator, method)(path, body, HTTP_ACCEPT="application/json")
            seen = (route, method, body, response.status_code, response.content[:120])
            if response.headers.get("Content-Type") != "application/json":
                wrong.append(seen)
                continue
            answer = response.json()
            if answer.get("ok") is not False or set(answer.get("error", {})) < {"type", "message"}:
                wrong.append(seen)
            elif route in BODYLESS:
                if not 400 <= response.status_code < 500:
                    wrong.append(seen)
            elif response.status_code != 400 or "JSON object" not in answer["error"]["message"]:
                wrong.append(seen)
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.django_db(transaction=True)
def test_mcp_answers_a_json_rpc_invalid_request(agents):
    token = ApiKey.generate(scope=ApiKey.OPERATOR)[1]
    headers = {
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": ACCEPT,
    }

    async def scenario():
        return [await asgi_post("/mcp/", body, headers) for body in NOT_OBJECTS]

    for answer in asyncio.run(scenario()):
        assert answer.status == 400
        assert answer.headers["content-type"] == "application/json"
        error = answer.json()
        assert error["jsonrpc"] == "2.0" and error["id"] is None
        assert error["error"]["code"] == -32600  # Invalid Request
        assert "JSON object" in error["error"]["message"]
