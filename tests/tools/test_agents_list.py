"""agents_list (reference §5.6): which agent ids sessions_spawn may target from this session."""

from tests.conftest import make_agent, set_config


def test_requester_first_then_allow_list_sorted(agent_main, agents):
    make_agent(
        "main",
        name="Main",
        description="The main agent",
        subagents={"allowAgents": ["zeta", "Research", "alpha"]},
    )
    details = agent_main.details("agents_list")
    assert details["requester"] == "main" and details["allowAny"] is False
    assert details["agents"] == [
        {
            "id": "main",
            "name": "Main",
            "description": "The main agent",
            "configured": True,
            "model": "scripted/scripted",
            "agentRuntime": {"id": "scripted", "source": "implicit"},
            "models": [],
        },
        {"id": "alpha", "configured": False},
        {
            "id": "research",
            "name": "Research",
            "configured": True,
            "model": "scripted/scripted",
            "agentRuntime": {"id": "scripted", "source": "implicit"},
            "models": [],
        },
        {"id": "zeta", "configured": False},
    ]


def test_star_allows_every_configured_agent(agent_main, agents):
    make_agent("main", subagents={"allowAgents": [" * "]})
    details = agent_main.details("agents_list")
    assert details["allowAny"] is True
    assert [a["id"] for a in details["agents"]] == ["main", "other", "research"]


def test_without_an_allow_list_only_the_requester(outsider):
    details = outsider.details("agents_list")
    assert details == {
        "requester": "other",
        "allowAny": False,
        "agents": [
            {
                "id": "other",
                "name": "Other",
                "configured": True,
                "model": "scripted/scripted",
                "agentRuntime": {"id": "scripted", "source": "implicit"},
                "models": [],
            }
        ],
    }


def test_operator_acting_as_another_agent(operator, agents):
    details = operator.details("agents_list", agentId="research")
    assert details["requester"] == "research"


def test_rest_agents_list(agent_main):
    response = agent_main.get("/api/v1/agents/")
    assert response.status_code == 200 and response.json()["requester"] == "main"


def test_put_agent_creates_then_updates(operator, agents):
    body = {
        "name": "Writer",
        "model": "gpt-x",
        "backend": {
            "type": "openai",
            "baseUrl": "http://127.0.0.1:9/v1",
            "model": "gpt-x",
            "apiKeyEnv": "OPENAI_API_KEY",
        },
        "subagents": {"allowAgents": ["*"]},
        "sandboxed": True,
    }
    created = operator.put("/api/v1/agents/writer/", body)
    assert created.status_code == 201 and created.json()["subagents"] == {"allowAgents": ["*"]}
    updated = operator.put("/api/v1/agents/writer/", {**body, "name": "Writer 2"})
    assert updated.status_code == 200 and updated.json()["name"] == "Writer 2"


def test_put_agent_needs_operator_scope(agent_main):
    assert agent_main.put("/api/v1/agents/writer/", {"name": "x"}).status_code == 403


def test_model_and_runtime_say_where_they_come_from(agent_main, agents):
    make_agent("main", subagents={"allowAgents": ["*"]})
    make_agent(
        "writer",
        backend={
            "type": "openai",
            "baseUrl": "http://127.0.0.1:9/v1",
            "model": "gpt-x",
            "apiKeyEnv": "OPENAI_API_KEY",
        },
    )
    make_agent("research", model="anthropic/claude-x", backend={"type": "scripted", "rules": []})
    make_agent("codex")
    set_config(acp_agents={"codex": {"command": "codex-acp"}})
    rows = {row["id"]: row for row in agent_main.details("agents_list")["agents"]}
    assert rows["writer"]["model"] == "openai/gpt-x"
    assert rows["writer"]["agentRuntime"] == {"id": "openai", "source": "agent"}
    assert rows["research"]["model"] == "anthropic/claude-x"
    assert rows["research"]["agentRuntime"] == {"id": "scripted", "source": "agent"}
    assert rows["main"]["agentRuntime"] == {"id": "scripted", "source": "implicit"}
    assert rows["codex"]["agentRuntime"] == {"id": "acp", "source": "agent"}
