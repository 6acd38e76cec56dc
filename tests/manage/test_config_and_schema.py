"""Gateway settings by OpenClaw name (api.md §3, §5) and the OpenAPI schema."""

from sessions_app.models import GatewayConfig, Session
from tests.conftest import make_session


def test_config_lists_settings_by_openclaw_name(operator):
    body = operator.get("/api/v1/config/").json()
    assert body["tools.sessions.visibility"] == "tree"
    assert body["session.agentToAgent.maxPingPongTurns"] == 5
    assert body["agents.defaults.sandbox.sessionToolsVisibility"] == "spawned"


def test_config_patch_validates_range_and_names(operator):
    ok = operator.patch(
        "/api/v1/config/", {"tools.sessions.visibility": "all", "tools.agentToAgent.allow": ["*"]}
    )
    assert ok.status_code == 200 and ok.json()["tools.sessions.visibility"] == "all"
    bad = operator.patch("/api/v1/config/", {"session.agentToAgent.maxPingPongTurns": 6})
    assert bad.status_code == 400 and "maxPingPongTurns" in bad.json()["error"]["message"]
    unknown = operator.patch(
        "/api/v1/config/", {"tools.bogus": 1, "tools.sessions.visibility": "self"}
    )
    assert unknown.status_code == 400 and "tools.bogus" in unknown.json()["error"]["message"]
    assert GatewayConfig.load().visibility == "all"  # all or nothing


def test_config_needs_operator(agent_main):
    assert agent_main.get("/api/v1/config/").status_code == 403
    assert (
        agent_main.patch("/api/v1/config/", {"tools.sessions.visibility": "all"}).status_code == 403
    )


def test_changing_main_key_reclassifies_sessions(operator, agents):
    make_session("agent:main:home")
    assert Session.objects.get().kind == "other"
    operator.patch("/api/v1/config/", {"session.mainKey": "Home"})
    assert Session.objects.get().kind == "main"


def test_openapi_schema_and_docs_are_served(anonymous):
    schema = anonymous.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/sessions/" in schema.content
    docs = anonymous.get("/api/v1/docs/")
    assert docs.status_code == 200


def test_docs_page_loads_nothing_from_outside(anonymous):
    import re

    page = anonymous.get("/api/v1/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/static/") for a in assets), assets


def test_home_page_is_the_session_list_behind_a_login_that_links_the_api(anonymous):
    response = anonymous.client.get("/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/"
    login = anonymous.client.get(response["Location"])
    assert login.status_code == 200 and b"/api/v1/docs/" in login.content
