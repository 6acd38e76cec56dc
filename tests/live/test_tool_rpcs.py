"""The gateway RPCs that call tools are the tools' declarations: each declared `rpc` is a method
of /ws/, takes the tool's arguments with the tool's own errors, and answers with the details
/tools/invoke answers."""

from __future__ import annotations

import pytest

from sessions_app.live.consumer import METHODS
from sessions_app.tools import TOOLS
from tests.conftest import add_messages, assistant, make_session, user
from tests.live.conftest import connected, db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

DECLARED = {t.declaration.rpc: t.name for t in TOOLS if t.declaration.rpc}


async def test_every_declared_rpc_is_a_method():
    assert DECLARED == {"sessions.list": "sessions_list", "chat.history": "sessions_history"}
    assert set(DECLARED) <= set(METHODS)


@pytest.mark.parametrize("method", sorted(DECLARED))
async def test_an_rpc_checks_arguments_as_its_tool(operator, method):
    """The tool's own errors, and its treatment of a name it does not take (ignored, as by
    every way a tool is called)."""
    await db(make_session)("main")
    args = {"sessionKey": "main"} if method == "chat.history" else {}
    async with connected(operator.token) as client:
        bad = await client.request(method, {**args, "limit": "many"})
        ignored = await client.request(method, {**args, "nope": 1})
        plain = await client.request(method, args)
    assert bad["error"]["code"] == "invalid_request"
    assert bad["error"]["message"].startswith("limit must be")
    invoked = await db(operator.invoke)(DECLARED[method], {**args, "limit": "many"})
    assert invoked.json()["error"]["message"] == bad["error"]["message"]
    assert ignored["ok"] is True
    for answer in (ignored, plain):
        answer["payload"].pop("deltaCursor", None)  # (a cursor names its read)
    assert ignored["payload"] == plain["payload"]


@pytest.mark.parametrize(
    "method,params",
    [
        ("sessions.list", {"messageLimit": 2}),
        ("sessions.list", {"message_limit": 2}),  # 9.6 §0: snake_case spellings too
        ("chat.history", {"sessionKey": "main"}),
        ("chat.history", {"session_key": "main"}),
    ],
)
async def test_an_rpc_answers_what_tools_invoke_answers(operator, method, params):
    session = await db(make_session)("agent:main:main")
    await db(add_messages)(session, user("hi"), assistant("hello"))
    async with connected(operator.token) as client:
        res = await client.request(method, params)
    invoked = await db(operator.invoke)(DECLARED[method], params)
    payload = dict(res["payload"])
    if method == "chat.history":  # 9.6's deltaCursor is the RPC's own (test_chat_history_delta.py)
        assert payload.pop("deltaCursor")
    assert res["ok"] and payload == invoked.json()["result"]["details"]
