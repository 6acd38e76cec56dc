"""OpenClaw's `GET /sessions/{sessionKey}/history` (issue 20 item 2): the API's history for an API
client, the transcript page for a browser, by key or by sessionId. SSE across a real server is
in tests/live/test_openclaw_history_live.py."""

from __future__ import annotations

import pytest

from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user
from tests.ui.conftest import client_for, make_user

API = "/api/v1/sessions/agent:main:main/history/"
OPENCLAW = "/sessions/agent:main:main/history"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.fixture
def main_session(agents):
    session = make_session("agent:main:main")
    add_messages(session, user("a"), tool_result("b"), assistant("c"), user("d"), assistant("e"))
    return session


@pytest.mark.parametrize(
    "params",
    [{}, {"limit": "2"}, {"limit": "2", "cursor": "4"}, {"includeTools": "1"}, {"cursor": "seq:3"}],
)
def test_an_api_key_gets_exactly_the_api_answer(agent_main, main_session, params):
    ours = agent_main.get(OPENCLAW, params)
    api = agent_main.get(API, params)
    assert ours.status_code == api.status_code == 200
    assert ours["Content-Type"] == api["Content-Type"] == "application/json"
    assert ours.json() == api.json()
    assert ours.json()["sessionKey"] == "agent:main:main"


def test_the_session_id_form_answers_the_same(agent_main, main_session):
    by_id = agent_main.get(f"/sessions/{main_session.session_id}/history", {"limit": "2"})
    assert by_id.status_code == 200
    assert by_id.json() == agent_main.get(API, {"limit": "2"}).json()


def test_url_encoded_keys_work(agent_main, main_session):
    response = agent_main.get("/sessions/agent%3Amain%3Amain/history")
    assert response.status_code == 200 and len(response.json()["messages"]) == 4


def test_accept_json_without_a_key_is_the_api_401(anonymous, main_session):
    response = anonymous.get(OPENCLAW, HTTP_ACCEPT="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "unauthorized"
    assert "Bearer" in response.json()["error"]["message"]
    sse = anonymous.get(OPENCLAW, HTTP_ACCEPT="text/event-stream")
    assert sse.status_code == 401


@pytest.mark.parametrize(
    ("params", "status", "words"),
    [
        ({"limit": "x"}, 400, "limit must be a positive integer"),
        ({"cursor": "-1"}, 400, "cursor must be a positive integer"),
        ({"bogus": "1"}, 400, "bogus"),
    ],
)
def test_bad_input_is_the_api_4xx(agent_main, main_session, params, status, words):
    response = agent_main.get(OPENCLAW, params)
    assert response.status_code == status
    assert words in response.json()["error"]["message"]


def test_missing_hidden_and_wrong_method(agent_main, outsider, main_session):
    set_config(visibility="agent")
    missing = agent_main.get("/sessions/agent:main:nope/history")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
    assert outsider.get(OPENCLAW).status_code == 403
    post = agent_main.post(OPENCLAW, {})
    assert post.status_code == 405 and post["Allow"] == "GET, HEAD, OPTIONS"


def test_a_browser_still_gets_the_transcript_page(main_session):
    viewer = client_for(make_user("vera", group="Viewers"))
    page = viewer.get(OPENCLAW, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert "agent:main:main" in page.content.decode()
    # By sessionId: to the page of its key.
    by_id = viewer.get(f"/sessions/{main_session.session_id}/history", HTTP_ACCEPT=BROWSER_ACCEPT)
    assert by_id.status_code == 302 and by_id["Location"] == "/sessions/agent:main:main/"


def test_an_anonymous_browser_is_sent_to_log_in_and_learns_no_key(anonymous, main_session):
    for path in (OPENCLAW, f"/sessions/{main_session.session_id}/history"):
        response = anonymous.client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    # The sessionId's login redirect names only what was asked for, not the session's key.
    assert "agent%3Amain%3Amain" not in response["Location"]
    assert "agent:main:main" not in response["Location"]
