"""tools.subagents.tools (issue 20 item 4; 9.6 §1.10): set through the config API and the admin,
it narrows every sub-agent run's offered tools (deny adds denies, allow is a final filter) and
what its tool calls may do. Real runs: the fake OpenAI server records what a child is offered."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import GatewayConfig, Message
from sessions_app.runs.tool_policy import catalog
from sessions_app.tools.offer import tools_for
from tests.conftest import admin_groups, make_agent, make_session, set_config
from tests.runs.helpers import drain

SETTING = "tools.subagents.tools"


def names(specs):
    return [s.name for s in specs]


def test_deny_adds_denies_and_allow_is_a_final_filter():
    orchestrator = {"is_subagent": True, "orchestrator": True}
    assert names(tools_for([], [], **orchestrator, subagent_tools={})) == [
        "sessions_list", "sessions_history", "sessions_search", "sessions_spawn", "sessions_yield",
        "subagents",
    ]  # fmt: skip
    narrowed = tools_for([], [], **orchestrator, subagent_tools={"deny": ["sessions_spawn"]})
    assert "sessions_spawn" not in names(narrowed) and "subagents" in names(narrowed)
    allow = {"allow": ["sessions_history", "sessions_yield", "sessions_send"]}
    # allow only filters: it does not add sessions_send, which an orchestrator is not given.
    assert names(tools_for([], [], **orchestrator, subagent_tools=allow)) == [
        "sessions_history",
        "sessions_yield",
    ]
    both = {"allow": ["group:sessions"], "deny": ["sessions_list"]}
    group = set(catalog().groups["group:sessions"])
    # (and never the owner-gated `sessions`: a sub-agent's turn is not the owner's)
    assert set(names(tools_for(["*"], [], is_subagent=True, subagent_tools=both))) == group - {
        "sessions_list",
        "sessions",
    }
    assert tools_for(["*"], [], is_subagent=True, subagent_tools={"deny": ["*"]}) == []
    # Top-level runs are not sub-agents: untouched.
    assert len(tools_for([], [], is_subagent=False, subagent_tools={"deny": ["*"]})) > 5


def test_config_api_sets_reads_and_resets_it(operator, agent_main):
    assert operator.get("/api/v1/config/").json()[SETTING] == {}
    value = {"allow": ["group:sessions", "Sessions_Yield"], "deny": ["sessions_send"]}
    response = operator.patch("/api/v1/config/", {SETTING: value})
    assert response.status_code == 200, response.content
    stored = {"allow": ["group:sessions", "sessions_yield"], "deny": ["sessions_send"]}
    assert response.json()[SETTING] == stored
    assert GatewayConfig.load().subagent_tools == stored
    assert agent_main.patch("/api/v1/config/", {SETTING: {}}).status_code == 403
    assert operator.patch("/api/v1/config/", {SETTING: None}).json()[SETTING] == {}


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (["sessions_list"], 'must be an object with "allow" and/or "deny"'),
        ({"allow": ["x"], "also": []}, 'must be an object with "allow" and/or "deny"'),
        ({"deny": "sessions_send"}, f"{SETTING}.deny must be an array of tool names"),
        ({"deny": [""]}, f"{SETTING}.deny must be an array of tool names"),
        ({"allow": ["exec"]}, f"{SETTING}.allow: unknown tool 'exec'"),
        ({"allow": ["group:web"]}, "unknown tool 'group:web'"),
    ],
)
def test_config_api_refuses_bad_values(operator, value, words):
    response = operator.patch("/api/v1/config/", {SETTING: value})
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]
    assert GatewayConfig.load().subagent_tools == {}


def test_the_admin_sets_it(db):
    from django.contrib.auth.models import User

    person = User.objects.create_user("otto", is_staff=True)
    person.groups.add(admin_groups()["Operators"])
    client = Client()
    client.force_login(person)
    url = "/admin/sessions_app/gatewayconfig/1/change/"
    GatewayConfig.load()
    page = client.get(url)
    assert page.status_code == 200 and SETTING in page.content.decode()
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    for name, value in list(data.items()):
        if isinstance(value, list | dict):
            data[name] = form.fields[name].prepare_value(value)
    data["subagent_tools"] = '{"deny": ["sessions_yield"]}'
    saved = client.post(url, data)
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert GatewayConfig.load().subagent_tools == {"deny": ["sessions_yield"]}
    data["subagent_tools"] = '{"deny": ["nope"]}'
    refused = client.post(url, data)
    assert refused.status_code == 200 and "unknown tool" in refused.content.decode()


@pytest.fixture
def family(agents, fake_openai):
    set_config(max_spawn_depth=2)  # the child is an orchestrator: it is offered session tools
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        backend={"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model"},
    )
    return make_session("main")


def offered_to_child(agent_main, fake_openai) -> list[str]:
    fake_openai.reply("done")
    fake_openai.reply("ANNOUNCE_SKIP")
    details = agent_main.details("sessions_spawn", {"task": "look around", "agentId": "research"})
    assert details["status"] == "accepted", details
    drain()
    first = fake_openai.requests[0].body
    return [tool["function"]["name"] for tool in first.get("tools", [])]


def test_a_real_subagent_run_is_offered_the_narrowed_tools(agent_main, family, fake_openai):
    set_config(subagent_tools={"allow": ["sessions_history", "sessions_yield", "subagents"],
                               "deny": ["subagents"]})  # fmt: skip
    assert offered_to_child(agent_main, fake_openai) == ["sessions_history", "sessions_yield"]


def test_the_default_is_unchanged(agent_main, family, fake_openai):
    assert offered_to_child(agent_main, fake_openai) == [
        "sessions_list", "sessions_history", "sessions_search", "sessions_spawn", "sessions_yield",
        "subagents",
    ]  # fmt: skip


def test_a_subagent_tool_call_of_a_denied_tool_does_not_run(agent_main, agents):
    set_config(subagent_tools={"deny": ["agents_list"]})
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                # A script calls what it likes, offered or not: the setting still holds.
                {"match": ".*", "toolCalls": [{"name": "agents_list"}], "reply": "ok"},
            ],
        },
    )
    make_session("main")
    details = agent_main.details("sessions_spawn", {"task": "list agents", "agentId": "research"})
    drain()
    result = Message.objects.get(session__key=details["childSessionKey"], role="toolResult")
    text = result.content[0]["text"]
    assert '"status": "forbidden"' in text
    assert "agents_list is not allowed for sub-agents (tools.subagents.tools)" in text
