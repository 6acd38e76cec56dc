"""The model catalog (issue 20 item 3): what each agent's backend serves, narrowed by
agents.defaults.models; sessions_spawn refuses a model outside it with the child's key and starts
no run; agents_list and the admin show it; /v1/models refresh goes through the outbound policy."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import Agent, GatewayConfig, Run, Session
from sessions_app.runs import model_catalog
from tests.conftest import admin_groups, make_agent, make_session
from tests.runs.helpers import drain
from tests.servers import manage

SCRIPTED = {"type": "scripted", "rules": [{"match": ".*", "reply": "done"}]}


@pytest.fixture
def home(agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        model="scripted/echo",
        backend={**SCRIPTED, "models": ["scripted/careful", "scripted/fast"]},
    )
    return make_session("main")


def spawn(api, **args):
    return api.details("sessions_spawn", {"task": "look", "agentId": "research", **args})


def test_an_unknown_model_is_an_error_naming_the_allowed_ones_and_starts_nothing(agent_main, home):
    details = spawn(agent_main, model="no-such-provider/no-such-model-xyz")
    assert details["status"] == "error"
    assert details["error"] == (
        "model not allowed: no-such-provider/no-such-model-xyz (agent research serves: "
        "scripted/echo, scripted/careful, scripted/fast)"
    )
    assert details["childSessionKey"].startswith("agent:research:subagent:")
    assert not Run.objects.exists()
    assert not Session.objects.filter(key=details["childSessionKey"]).exists()


def test_a_served_model_is_applied_to_the_child_and_its_run(agent_main, home):
    details = spawn(agent_main, model="scripted/fast")
    assert details["status"] == "accepted" and details["modelApplied"] == "scripted/fast"
    child = Session.objects.get(key=details["childSessionKey"])
    assert child.model == "scripted/fast"
    assert Run.objects.get(pk=details["runId"]).model == "scripted/fast"
    drain()
    assert Run.objects.get(pk=details["runId"]).status == "ok"


def test_a_sessions_model_override_is_held_to_its_agents_catalog(operator, home):
    """session_status `model`, the sessions tool's and sessions.patch's `model`: as a spawn's
    (they took any model id, and the session's next turns ran on it)."""
    research = make_session("agent:research:main")
    refused = (
        "model not allowed: huge-model (agent research serves: scripted/echo, "
        "scripted/careful, scripted/fast)"
    )
    for tool, args in (
        ("session_status", {"model": "huge-model"}),
        ("sessions", {"action": "patch", "model": "huge-model"}),
    ):
        response = operator.invoke(tool, args, sessionKey=research.key)  # acting as it
        assert response.status_code == 400 and response.json()["error"]["message"] == refused
    patched = operator.patch(f"/api/v1/sessions/{research.key}/", {"model": "huge-model",
                                                                  "pinned": False})  # fmt: skip
    assert patched.status_code == 400 and patched.json()["error"]["message"] == refused
    assert Session.objects.get(pk=research.pk).model == ""
    served = operator.details("session_status", {"model": "scripted/fast"}, sessionKey=research.key)
    assert served["changedModel"] is True and served["modelOverride"] == "scripted/fast"
    # main serves no model (no catalog): its backend decides, as before catalogs.
    assert operator.details("session_status", {"model": "anything/goes"})["changedModel"]


def test_no_model_given_is_unchanged(agent_main, home):
    assert spawn(agent_main)["status"] == "accepted"


def test_defaults_models_narrows_and_names_by_alias(agent_main, operator, home):
    response = operator.patch(
        "/api/v1/config/",
        {"agents.defaults.models": {"scripted/fast": {"alias": "fast"}, "other/model": {}}},
    )
    assert response.status_code == 200, response.content
    refused = spawn(agent_main, model="scripted/echo")
    assert (
        refused["error"]
        == "model not allowed: scripted/echo (agent research serves: scripted/fast)"
    )
    by_alias = spawn(agent_main, model="fast")
    assert by_alias["status"] == "accepted" and by_alias["modelApplied"] == "scripted/fast"
    rows = {r["id"]: r for r in agent_main.details("agents_list")["agents"]}
    assert rows["research"]["models"] == ["scripted/fast"]
    assert rows["research"]["model"] == "scripted/echo"
    # null resets the narrowing.
    operator.patch("/api/v1/config/", {"agents.defaults.models": None})
    assert GatewayConfig.load().default_models == {}


def test_an_agent_that_serves_no_model_says_so(agent_main, agents):
    make_agent("main")
    make_session("main")
    details = agent_main.details("sessions_spawn", {"task": "x", "model": "gpt-x"})
    assert details["status"] == "error"
    assert details["error"] == (
        "model not allowed: gpt-x (agent main has no models to choose from: set its model or "
        "backend.models)"
    )


def test_agents_list_shows_each_catalog(agent_main, home):
    rows = {r["id"]: r for r in agent_main.details("agents_list")["agents"]}
    assert rows["research"]["models"] == ["scripted/echo", "scripted/careful", "scripted/fast"]
    assert rows["main"]["models"] == []
    rest = agent_main.get("/api/v1/agents/").json()
    assert rest["agents"] == agent_main.details("agents_list")["agents"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"backend": {**SCRIPTED, "models": "x"}}, "backend.models must be an array"),
        ({"backend": {**SCRIPTED, "models": ["not a model!"]}}, "is not a model id"),
        (
            {"backend": {"type": "openai", "baseUrl": "http://8.8.8.8/v1", "model": "m",
                         "refreshModels": "yes"}},
            "backend.refreshModels must be a boolean",
        ),
    ],
)  # fmt: skip
def test_bad_catalog_input_is_a_400(operator, agents, body, words):
    response = operator.put("/api/v1/agents/research/", body)
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("gpt", "must be an object"),
        ({"a/b": {"alias": 3}}, "alias must be a short name"),
        ({"a/b": {"aliases": "x"}}, 'must be an object with only "alias"'),
        (["bad model"], "is not a model id"),
    ],
)
def test_bad_defaults_models_is_a_400(operator, value, words):
    response = operator.patch("/api/v1/config/", {"agents.defaults.models": value})
    assert response.status_code == 400 and words in response.json()["error"]["message"]


def test_agent_keys_cannot_change_the_catalog(agent_main, agents):
    assert agent_main.patch("/api/v1/config/", {"agents.defaults.models": {}}).status_code == 403
    assert agent_main.put("/api/v1/agents/research/", {"model": "x"}).status_code == 403


# --- /v1/models ------------------------------------------------------------------------------


@pytest.fixture
def openai_agent(agents, fake_openai):
    fake_openai.models = ["fake-model", "fake-large", "bad id with spaces"]
    return make_agent(
        "research",
        backend={
            "type": "openai",
            "baseUrl": fake_openai.base_url,
            "model": "fake-model",
            "refreshModels": True,
        },
    )


def test_refresh_reads_v1_models_into_the_catalog(agent_main, openai_agent, fake_openai, home_main):
    assert model_catalog.refresh_models(openai_agent) == ["fake-model", "fake-large"]
    assert fake_openai.requests[-1].path == "/v1/models"
    agent = Agent.objects.get(pk="research")
    assert agent.models_refreshed_at is not None
    rows = {r["id"]: r for r in agent_main.details("agents_list")["agents"]}
    assert rows["research"]["models"] == ["fake-model", "fake-large"]
    fake_openai.reply("big answer")
    fake_openai.reply("ANNOUNCE_SKIP")
    details = spawn(agent_main, model="fake-large")
    assert details["status"] == "accepted"
    drain()
    assert fake_openai.requests[-2].body["model"] == "fake-large"  # the run asked for it


def test_without_refresh_models_the_list_is_not_used(agent_main, openai_agent, home_main):
    model_catalog.refresh_models(openai_agent)
    make_agent("research", backend={**openai_agent.backend, "refreshModels": False})
    assert spawn(agent_main, model="fake-large")["status"] == "error"


def test_refresh_goes_through_the_outbound_policy(agents, settings, fake_openai):
    settings.OPENCLAW_OUTBOUND_ALLOW = ""
    agent = Agent.objects.get(pk="research")
    agent.backend = {"type": "openai", "baseUrl": fake_openai.base_url, "model": "m"}
    agent.save()
    with pytest.raises(model_catalog.RefreshFailed) as refused:
        model_catalog.refresh_models(agent)
    assert "127.0.0.1" in str(refused.value) and not fake_openai.requests


def test_refresh_of_a_scripted_agent_or_a_bad_answer_fails_clearly(agents, fake_openai):
    with pytest.raises(model_catalog.RefreshFailed, match="only an openai backend"):
        model_catalog.refresh_models(Agent.objects.get(pk="main"))
    agent = make_agent(
        "research",
        backend={"type": "openai", "baseUrl": fake_openai.base_url + "/nope", "model": "m"},
    )
    with pytest.raises(model_catalog.RefreshFailed, match="HTTP 404"):
        model_catalog.refresh_models(agent)


def test_the_command_refreshes_agents_with_refresh_models(transactional_db, fake_openai):
    make_agent("main")
    make_agent(
        "research",
        backend={"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model",
                 "refreshModels": True},
    )  # fmt: skip
    fake_openai.models = ["fake-model", "fake-xl"]
    out = manage("refresh_models")
    assert "research: 2 model(s)" in out
    assert Agent.objects.get(pk="research").discovered_models == ["fake-model", "fake-xl"]


def test_the_admin_shows_the_catalog_and_refreshes_it(openai_agent, fake_openai):
    from django.contrib.auth.models import User

    person = User.objects.create_user("otto", is_staff=True)
    person.groups.add(admin_groups()["Operators"])
    client = Client()
    client.force_login(person)
    page = client.get("/admin/sessions_app/agent/research/change/").content.decode()
    assert "Model catalog" in page and "fake-large" not in page
    response = client.post(
        "/admin/sessions_app/agent/",
        {"action": "refresh_model_catalog", "_selected_action": ["research"]},
        follow=True,
    )
    notes = [str(m) for m in response.context["messages"]]
    assert notes == ["research: 2 model(s) from /v1/models."], notes
    page = client.get("/admin/sessions_app/agent/research/change/").content.decode()
    assert "fake-large" in page


@pytest.fixture
def home_main(agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    return make_session("main")


def test_the_api_refreshes_an_agents_catalog(operator, agent_main, openai_agent, fake_openai):
    url = "/api/v1/agents/research/models/refresh/"
    response = operator.post(url, {})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["discovered"] == ["fake-model", "fake-large"]
    assert body["models"] == ["fake-model", "fake-large"] and body["refreshedAt"] > 0
    assert agent_main.post(url, {}).status_code == 403
    assert operator.post("/api/v1/agents/nobody/models/refresh/", {}).status_code == 404
    scripted = operator.post("/api/v1/agents/main/models/refresh/", {})
    assert (
        scripted.status_code == 400
        and "only an openai backend" in scripted.json()["error"]["message"]
    )


def test_an_unreadable_model_list_is_a_502_and_keeps_the_old_list(operator, openai_agent):
    model_catalog.refresh_models(openai_agent)
    agent = Agent.objects.get(pk="research")
    agent.backend = {**agent.backend, "baseUrl": agent.backend["baseUrl"] + "/gone"}
    agent.save()
    response = operator.post("/api/v1/agents/research/models/refresh/", {})
    assert response.status_code == 502
    assert response.json()["error"] == {
        "type": "bad_gateway",
        "message": response.json()["error"]["message"],
    }
    assert "HTTP 404" in response.json()["error"]["message"]
    assert Agent.objects.get(pk="research").discovered_models == ["fake-model", "fake-large"]
