"""The openai backend against a fake chat.completions server, and the session tools' schemas."""

from __future__ import annotations

import importlib
import json
import socket
import time

import pytest

from openclaw_common.errors import Forbidden, InvalidArgument
from sessions_app.manage.agents import clean_backend
from sessions_app.runs.backends import BackendError, TurnAborted, TurnInput, get_backend
from sessions_app.runs.backends import openai as openai_backend
from sessions_app.runs.backends.openai import OpenAIBackend
from sessions_app.runs.tool_policy import SESSIONS_GROUP, catalog
from sessions_app.tools import NAMES as ALL_TOOLS
from sessions_app.tools import offer as tool_specs
from sessions_app.tools.offer import tools_for

# --- helpers ---------------------------------------------------------------------------------


def make_turn(fake, *messages, tools=(), system="", **backend) -> TurnInput:
    settings = {"type": "openai", "baseUrl": fake.base_url, "model": "fake-model", **backend}
    return TurnInput(
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        model="session-model",
        backend=settings,
        messages=list(messages) or [{"role": "user", "content": "hi"}],
        extra_system_prompt=system,
        tools=[tool_specs.TOOL_SPECS[name] for name in tools],
    )


class ToolRecorder:
    """call_tool that records its calls and answers from a dict (default {"status": "ok"})."""

    def __init__(self, answers=None):
        self.calls = []
        self.answers = answers or {}

    def __call__(self, name, arguments):
        self.calls.append((name, arguments))
        answer = self.answers.get(name, {"status": "ok"})
        if isinstance(answer, Exception):
            raise answer
        return answer


def no_abort():
    pass


def run(turn, call_tool=None, check_abort=no_abort):
    return OpenAIBackend().run(turn, call_tool=call_tool or ToolRecorder(), check_abort=check_abort)


def tool_results(output):
    return [m for m in output.messages if m["role"] == "toolResult"]


# --- replies and requests --------------------------------------------------------------------


def test_plain_text_reply_is_one_assistant_message(fake_openai):
    fake_openai.reply("Hello there", model="fake-model-2026")
    output = run(make_turn(fake_openai))
    assert output.reply == "Hello there"
    assert output.messages == [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello there"}],
            "api": "openai-completions",
            "provider": "openai",
            "model": "fake-model-2026",
            "usage": {
                "input": 10,
                "output": 5,
                "totalTokens": 15,
                "cacheRead": 0,
                "cacheWrite": 0,
            },
            "stopReason": "stop",
        }
    ]
    assert output.usage == {"input": 10, "output": 5, "totalTokens": 15}


def test_request_posts_model_and_omits_tools_when_none_offered(fake_openai):
    fake_openai.reply("ok")
    run(make_turn(fake_openai))
    (request,) = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "session-model",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_an_explicit_turn_model_wins_over_the_backend_default(fake_openai):
    fake_openai.reply("ok")
    fake_openai.reply("ok")
    run(make_turn(fake_openai))
    turn = make_turn(fake_openai)
    turn.model = ""
    run(turn)
    assert [r.body["model"] for r in fake_openai.requests] == ["session-model", "fake-model"]


def test_base_url_ending_in_chat_completions_is_used_as_is(fake_openai):
    fake_openai.reply("ok")
    run(make_turn(fake_openai, baseUrl=fake_openai.base_url + "/chat/completions/"))
    assert fake_openai.requests[0].path == "/v1/chat/completions"


def test_system_prompt_and_transcript_are_converted_to_openai_shape(fake_openai):
    fake_openai.reply("done")
    transcript = [
        {"role": "user", "content": "list my sessions", "timestamp": 1},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "let me look", "thinkingSignature": "sig"},
                {"type": "text", "text": "Looking."},
                {"type": "toolCall", "id": "call_a", "name": "sessions_list", "arguments": {}},
            ],
            "stopReason": "toolUse",
        },
        {
            "role": "toolResult",
            "toolCallId": "call_a",
            "toolName": "sessions_list",
            "content": [{"type": "text", "text": '{"count": 0}'}],
            "isError": False,
        },
        {"role": "assistant", "content": [{"type": "text", "text": "None yet."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this?"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            ],
        },
    ]
    run(make_turn(fake_openai, *transcript, system="You are main."))
    assert fake_openai.requests[0].body["messages"] == [
        {"role": "system", "content": "You are main."},
        {"role": "user", "content": "list my sessions"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "sessions_list", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"count": 0}'},
        {"role": "assistant", "content": "None yet."},
        {"role": "user", "content": "and this?\n[image omitted]"},
    ]


def test_tool_call_without_text_has_null_content():
    messages = openai_backend.to_openai_messages(
        [{"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "x"}]}]
    )
    assert messages == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        }
    ]


def test_history_keeps_the_last_50_and_never_starts_with_an_orphan_tool_message(fake_openai):
    fake_openai.reply("ok")
    old = [{"role": "user", "content": f"old {i}"} for i in range(60)]
    call = {"type": "toolCall", "id": "call_cut", "name": "sessions_list", "arguments": {}}
    cut = [
        {"role": "assistant", "content": [call]},
        {"role": "toolResult", "toolCallId": "call_cut", "toolName": "sessions_list"},
    ]
    recent = [{"role": "user", "content": f"new {i}"} for i in range(49)]
    run(make_turn(fake_openai, *old, *cut, *recent))
    sent = fake_openai.requests[0].body["messages"]
    assert len(sent) == 49
    assert sent[0] == {"role": "user", "content": "new 0"}


def test_results_without_calls_are_dropped_and_calls_without_results_get_one(fake_openai):
    fake_openai.reply("ok")
    transcript = [
        {"role": "toolResult", "toolCallId": "lost", "toolName": "exec", "content": []},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "exec", "arguments": {}}],
            "stopReason": "aborted",
        },
        {"role": "user", "content": "again"},
    ]
    run(make_turn(fake_openai, *transcript))  # the fake refuses unpaired tool messages
    sent = fake_openai.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "(no result)"}


# --- API key ---------------------------------------------------------------------------------


def test_authorization_header_comes_from_the_named_env_var(fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    fake_openai.reply("ok")
    run(make_turn(fake_openai, apiKeyEnv="OPENAI_API_KEY"))
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-test-123"


def test_missing_api_key_env_var_fails_before_any_request(fake_openai, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.reply("ok")
    with pytest.raises(BackendError, match="environment variable OPENAI_API_KEY is not set"):
        run(make_turn(fake_openai, apiKeyEnv="OPENAI_API_KEY"))
    assert fake_openai.requests == []


def test_no_authorization_header_without_api_key_env(fake_openai):
    fake_openai.reply("ok")
    run(make_turn(fake_openai))
    assert "authorization" not in fake_openai.requests[0].headers


# --- tool calls ------------------------------------------------------------------------------


def test_tool_call_round_trip(fake_openai):
    (call_id,) = fake_openai.tool_calls(("sessions_list", {"limit": 5}), text="Checking.")
    fake_openai.reply("You have no sessions.")
    recorder = ToolRecorder({"sessions_list": {"count": 0, "sessions": []}})
    output = run(make_turn(fake_openai, tools=["sessions_list"]), recorder)

    assert recorder.calls == [("sessions_list", {"limit": 5})]
    assistant, result, final = output.messages
    assert assistant["role"] == "assistant" and assistant["stopReason"] == "toolUse"
    assert assistant["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "toolCall", "id": call_id, "name": "sessions_list", "arguments": {"limit": 5}},
    ]
    assert result == {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "sessions_list",
        "content": [{"type": "text", "text": '{"count": 0, "sessions": []}'}],
        "isError": False,
    }
    assert final["stopReason"] == "stop" and output.reply == "You have no sessions."

    first, second = (r.body for r in fake_openai.requests)
    assert first["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in first["tools"]] == ["sessions_list"]
    assert second["messages"][-2]["tool_calls"][0]["id"] == call_id
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": '{"count": 0, "sessions": []}',
    }


def test_several_tool_calls_in_one_round_run_in_order(fake_openai):
    fake_openai.tool_calls(("agents_list", ""), ("sessions_history", {"sessionKey": "main"}))
    fake_openai.reply("ok")
    recorder = ToolRecorder()
    run(make_turn(fake_openai, tools=["agents_list", "sessions_history"]), recorder)
    assert recorder.calls == [("agents_list", {}), ("sessions_history", {"sessionKey": "main"})]
    assert [m["role"] for m in fake_openai.requests[1].body["messages"][-3:]] == [
        "assistant",
        "tool",
        "tool",
    ]


def test_tool_not_offered_is_refused_without_calling(fake_openai):
    fake_openai.tool_calls(("sessions_spawn", {"task": "x"}))
    fake_openai.reply("ok")
    recorder = ToolRecorder()
    output = run(make_turn(fake_openai, tools=["sessions_list"]), recorder)
    assert recorder.calls == []
    (result,) = tool_results(output)
    assert json.loads(result["content"][0]["text"]) == {
        "status": "error",
        "error": "tool not available: sessions_spawn",
    }
    assert result["isError"] is True


def test_invalid_json_arguments_are_refused_without_calling(fake_openai):
    fake_openai.tool_calls(("sessions_list", "{not json"))
    fake_openai.reply("ok")
    recorder = ToolRecorder()
    output = run(make_turn(fake_openai, tools=["sessions_list"]), recorder)
    assert recorder.calls == []
    assert output.messages[0]["content"][0]["arguments"] == {}
    (result,) = tool_results(output)
    assert result["isError"] is True
    assert "invalid arguments for sessions_list" in result["content"][0]["text"]


def test_tool_refusals_and_bad_arguments_come_back_as_error_results(fake_openai):
    fake_openai.tool_calls(("sessions_history", {"sessionKey": 5}), ("sessions_send", {}))
    fake_openai.reply("ok")
    recorder = ToolRecorder(
        {
            "sessions_history": InvalidArgument("sessionKey must be a string"),
            "sessions_send": {"status": "forbidden", "error": "Session send is denied."},
        }
    )
    output = run(make_turn(fake_openai, tools=["sessions_history", "sessions_send"]), recorder)
    history, send = tool_results(output)
    assert json.loads(history["content"][0]["text"]) == {
        "status": "error",
        "error": "sessionKey must be a string",
    }
    assert history["isError"] is True and send["isError"] is True


def test_a_raised_refusal_keeps_its_status():
    details = openai_backend.run_tool(ToolRecorder({"x": Forbidden("no")}), "x", {})
    assert details == {"status": "forbidden", "error": "no"}


def test_usage_is_summed_over_every_round(fake_openai):
    fake_openai.tool_calls(
        ("sessions_list", {}),
        usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    )
    fake_openai.reply(
        "ok", usage={"prompt_tokens": 150, "completion_tokens": 30, "total_tokens": 180}
    )
    output = run(make_turn(fake_openai, tools=["sessions_list"]))
    assert output.usage == {"input": 250, "output": 50, "totalTokens": 300}
    assert [m["usage"]["totalTokens"] for m in output.messages if m["role"] == "assistant"] == [
        120,
        180,
    ]


def test_missing_usage_counts_as_zero(fake_openai):
    fake_openai.reply("ok", usage={})
    assert run(make_turn(fake_openai)).usage == {"input": 0, "output": 0, "totalTokens": 0}


def test_finish_reason_length_is_stop_reason_length(fake_openai):
    fake_openai.reply("cut off", finish_reason="length")
    assert run(make_turn(fake_openai)).messages[-1]["stopReason"] == "length"


def test_too_many_tool_rounds_is_a_backend_error(fake_openai):
    for _ in range(openai_backend.MAX_ROUNDS):
        fake_openai.tool_calls(("sessions_list", {}))
    recorder = ToolRecorder()
    with pytest.raises(BackendError, match="too many tool rounds"):
        run(make_turn(fake_openai, tools=["sessions_list"]), recorder)
    assert len(fake_openai.requests) == openai_backend.MAX_ROUNDS
    assert len(recorder.calls) == openai_backend.MAX_ROUNDS - 1


# --- errors and aborts -----------------------------------------------------------------------


def test_http_500_is_a_backend_error_with_status_and_what_came_back(fake_openai, caplog):
    # The body stays out of the run error (viewers read it; the URL may not be a model at all)
    # and goes to the log, shortened (test_outbound_security.py).
    fake_openai.error(500, "The server had an error")
    with pytest.raises(BackendError, match=r"^HTTP 500 \(application/json, \d+ bytes\)$"):
        run(make_turn(fake_openai))
    assert "The server had an error" in caplog.text


def test_http_error_with_a_plain_body_is_shortened_in_the_log(fake_openai, caplog):
    fake_openai.respond("x" * 5000, status=502)
    with pytest.raises(BackendError, match=r"^HTTP 502 \(.*, 5000 bytes\)$"):
        run(make_turn(fake_openai))
    assert "x" * 299 + "…" in caplog.text and "x" * 301 not in caplog.text


def test_response_without_choices_is_a_backend_error(fake_openai):
    fake_openai.respond({"id": "x", "choices": []})
    with pytest.raises(BackendError, match="no choices"):
        run(make_turn(fake_openai))


def test_response_that_is_not_json_is_a_backend_error(fake_openai):
    fake_openai.respond("<html>gateway</html>")
    with pytest.raises(BackendError, match="not JSON"):
        run(make_turn(fake_openai))


def test_connection_refused_is_a_backend_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    turn = TurnInput(
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        model="",
        backend={"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1", "model": "m"},
        messages=[{"role": "user", "content": "hi"}],
    )
    with pytest.raises(BackendError, match="cannot reach 127.0.0.1"):
        run(turn)


def test_request_timeout_is_a_backend_error(fake_openai, monkeypatch):
    monkeypatch.setattr(openai_backend, "REQUEST_TIMEOUT_SECONDS", 0.3)
    fake_openai.reply("too late", delay=5)
    with pytest.raises(BackendError, match="no answer from .* within 0.3 s"):
        run(make_turn(fake_openai))


def test_abort_between_rounds_stops_the_tool_loop(fake_openai):
    fake_openai.tool_calls(("sessions_list", {}))
    fake_openai.reply("never asked for")

    def check_abort():
        if fake_openai.requests:
            raise TurnAborted("aborted")

    recorder = ToolRecorder()
    with pytest.raises(TurnAborted):
        run(make_turn(fake_openai, tools=["sessions_list"]), recorder, check_abort)
    assert len(fake_openai.requests) == 1
    assert recorder.calls == []
    assert fake_openai.pending == 1


def test_abort_during_a_slow_request_stops_promptly(fake_openai):
    fake_openai.reply("slow", delay=10)
    deadline = time.monotonic() + 0.5

    def check_abort():
        if time.monotonic() > deadline:
            raise TurnAborted("deadline")

    with pytest.raises(TurnAborted):
        run(make_turn(fake_openai), check_abort=check_abort)
    # Stopped while the 10-second answer was still being waited for, not after it came.
    assert len(fake_openai.requests) == 1 and fake_openai.answered == 0


# --- through the registry --------------------------------------------------------------------


def test_get_backend_runs_an_openai_turn_with_session_tools(fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-registry")
    settings = clean_backend(
        {
            "type": "openai",
            "baseUrl": fake_openai.base_url,
            "model": "fake-model",
            "apiKeyEnv": "OPENAI_API_KEY",
        }
    )
    fake_openai.tool_calls(("agents_list", {}))
    fake_openai.reply("You may spawn main.")
    backend = get_backend(settings)
    assert isinstance(backend, OpenAIBackend)
    turn = TurnInput(
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        model="",
        backend=settings,
        messages=[{"role": "user", "content": "who can I spawn?"}],
        tools=tools_for([], [], is_subagent=False, owner_turn=True),
    )
    recorder = ToolRecorder({"agents_list": {"requester": "main", "agents": [{"id": "main"}]}})
    output = backend.run(turn, call_tool=recorder, check_abort=no_abort)
    assert output.reply == "You may spawn main."
    assert recorder.calls == [("agents_list", {})]
    first = fake_openai.requests[0]
    assert first.headers["authorization"] == "Bearer sk-registry"
    assert [t["function"]["name"] for t in first.body["tools"]] == list(ALL_TOOLS)


# --- tool specs ------------------------------------------------------------------------------


def walk(schema):
    yield schema
    for child in (schema.get("properties") or {}).values():
        yield from walk(child)
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"])


def test_every_tool_spec_is_an_object_schema_with_known_required_fields():
    assert set(tool_specs.TOOL_SPECS) == set(ALL_TOOLS)
    for name, spec in tool_specs.TOOL_SPECS.items():
        assert spec.name == name and spec.description
        params = spec.parameters
        assert params["type"] == "object" and isinstance(params["properties"], dict)
        assert set(params.get("required", [])) <= set(params["properties"])
        json.dumps(params)  # plain JSON
        for node in walk(params):
            assert node["type"] in {"object", "array", "string", "number", "boolean"}


def test_numeric_parameters_are_type_number_not_integer():
    numeric = {
        "sessions_list": {"limit", "activeMinutes", "messageLimit", "offset"},
        "sessions_history": {"limit", "offset", "pendingBefore"},
        "sessions_search": {"limit"},
        "sessions_send": {"timeoutSeconds"},
        "sessions_spawn": {"runTimeoutSeconds"},
        "subagents": {"recentMinutes", "timeoutSeconds"},
        "sessions": {"ttlMinutes"},
        "session_status": {"changesSince"},
    }
    for name, spec in tool_specs.TOOL_SPECS.items():
        props = spec.parameters["properties"]
        assert {p for p, s in props.items() if s["type"] == "number"} == numeric.get(name, set())
        assert "integer" not in json.dumps(spec.parameters)


def test_parameter_names_are_the_ones_the_tools_accept():
    for name in ("sessions_list", "sessions_history"):
        accepted = importlib.import_module(f"sessions_app.tools.{name}").DECLARATION.names
        assert set(tool_specs.TOOL_SPECS[name].parameters["properties"]) == set(accepted)
    assert tool_specs.TOOL_SPECS["agents_list"].parameters["properties"] == {}
    send = tool_specs.TOOL_SPECS["sessions_send"].parameters
    assert set(send["properties"]) == {
        "sessionKey",
        "label",
        "agentId",
        "message",
        "timeoutSeconds",
        "mode",  # 9.6 §4.3
        "watch",
    }
    # Not required in the schema: 9.6 also takes it as SendMessage, content or text (the tool
    # answers "message required" when none is given).
    assert "required" not in send
    spawn = tool_specs.TOOL_SPECS["sessions_spawn"].parameters
    assert set(spawn["properties"]) == {
        "task",
        "label",
        "agentId",
        "model",
        "runTimeoutSeconds",
        "cleanup",
        "completionTarget",
        "expectsCompletionMessage",
        "attachments",
        "attachAs",
        "runtime",  # "subagent" | "acp" (docs/acp.md)
        "cwd",
        "streamTo",
        "resumeSessionId",  # runtime="acp" (docs/acp.md)
        "context",  # 9.6 §4.4
        "taskName",
    }
    assert spawn["required"] == ["task"]
    assert spawn["properties"]["cleanup"]["enum"] == ["delete", "keep"]


@pytest.mark.parametrize("name", ["sessions_send", "sessions_spawn"])
def test_schema_offers_only_arguments_the_tool_accepts(name):
    # The tools refuse unknown argument names; skip until the tool module exists.
    try:
        module = importlib.import_module(f"sessions_app.tools.{name}")
    except ModuleNotFoundError:
        pytest.skip(f"sessions_app.tools.{name} is not written yet")
    assert set(tool_specs.TOOL_SPECS[name].parameters["properties"]) <= set(
        module.DECLARATION.names
    )


def names(specs):
    return [s.name for s in specs]


def test_an_agent_gets_every_tool_by_default():
    assert names(tools_for([], [], is_subagent=False, owner_turn=True)) == list(ALL_TOOLS)
    assert names(tools_for(None, None, is_subagent=False, owner_turn=True)) == list(ALL_TOOLS)
    # The owner-gated `sessions` only on the owner's turns (test_sessions_tool_owner.py).
    assert names(tools_for([], [], is_subagent=False)) == [n for n in ALL_TOOLS if n != "sessions"]


def test_a_subagent_gets_no_session_tools_by_default():
    # A leaf (at maxSpawnDepth, as every sub-agent is with the default depth 1) keeps only
    # sessions_yield, which 9.6 never denies (it pauses with it).
    assert not set(names(tools_for([], [], is_subagent=True))) & set(
        catalog().groups[SESSIONS_GROUP]
    )
    assert names(tools_for([], [], is_subagent=True)) == ["sessions_yield"]


def test_an_orchestrator_subagent_gets_the_orchestrator_tools():
    offered = tools_for([], [], is_subagent=True, orchestrator=True)
    assert names(offered) == [
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
    ]


def test_allow_list_limits_the_tools():
    allowed = tools_for(["sessions_history", " Sessions_List ", "exec"], [], is_subagent=False)
    assert names(allowed) == ["sessions_list", "sessions_history"]


def test_allow_list_can_give_a_subagent_session_tools():
    assert names(tools_for(["sessions_history"], [], is_subagent=True)) == ["sessions_history"]
    # Every tool but the owner-gated `sessions`: a sub-agent's turn is never the owner's.
    assert names(tools_for(["*"], [], is_subagent=True)) == [
        n for n in ALL_TOOLS if n != "sessions"
    ]


def test_deny_list_removes_tools():
    assert names(
        tools_for(
            [],
            ["sessions_send", "agents_list", "session_status"],
            is_subagent=False,
            owner_turn=True,
        )
    ) == [
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
        "sessions",
    ]
    assert names(tools_for(["*"], ["sessions_spawn"], is_subagent=True)) == [
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_send",
        "sessions_yield",
        "subagents",
        "agents_list",
        "session_status",
    ]  # not the owner-gated `sessions`: a sub-agent's turn is never the owner's
    assert tools_for([], ["*"], is_subagent=False) == []


def test_group_sessions_names_the_session_tools():
    # The four of the seeds and `subagents`; sessions_yield is in no group (never denied).
    assert names(tools_for([], ["group:sessions"], is_subagent=False)) == [
        "sessions_yield",
        "agents_list",
    ]


def test_tools_for_returns_copies():
    spec = tools_for([], [], is_subagent=False)[0]
    spec.parameters["properties"].clear()
    assert tool_specs.TOOL_SPECS[spec.name].parameters["properties"]
