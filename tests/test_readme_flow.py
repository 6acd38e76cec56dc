"""The README's first steps, for real: seed the demo, make a key in another process, and query
every read tool over HTTP against a running server."""

from tests.live import manage


def test_agent_key_gets_the_demo_sessions_over_http(demo_server):
    token = manage("create_api_key", "--scope", "agent", "--agent", "main").strip().splitlines()[-1]
    listed = demo_server.request(
        "POST", "/tools/invoke", body={"tool": "sessions_list", "args": {}}, token=token
    )
    assert listed.status == 200
    keys = {row["key"] for row in listed.json()["result"]["details"]["sessions"]}
    assert {
        "agent:main:main",
        "agent:main:discord:group:dev",
        "agent:main:cron:daily-briefing",
    } <= keys

    history = demo_server.request(
        "POST",
        "/tools/invoke",
        body={"tool": "sessions_history", "args": {"sessionKey": "main"}},
        token=token,
    )
    assert history.status == 200 and history.json()["result"]["details"]["messages"]

    agents = demo_server.request("POST", "/tools/invoke", body={"tool": "agents_list"}, token=token)
    assert [a["id"] for a in agents.json()["result"]["details"]["agents"]] == ["main", "research"]

    rest = demo_server.request(
        "GET", "/api/v1/sessions/agent%3Amain%3Amain/history/?limit=2", token=token
    )
    assert rest.status == 200 and len(rest.json()["items"]) == 2

    assert (
        demo_server.request("POST", "/tools/invoke", body={"tool": "sessions_list"}).status == 401
    )
