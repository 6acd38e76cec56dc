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


def test_the_readme_orchestration_a_parent_two_children_one_answer(demo_server):
    """README, "A parent, two sub-agents, one answer": the user's message, the parent's yield,
    and its answer with both results, through a real worker."""
    from sessions_app.models import Message
    from tests.live import start_worker, wait_until

    worker = start_worker()
    try:
        ingest = manage("create_api_key", "--scope", "ingest").strip().splitlines()[-1]
        key = (
            manage("create_api_key", "--scope", "agent", "--agent", "main").strip().splitlines()[-1]
        )
        posted = demo_server.request(
            "POST",
            "/api/v1/sessions/main/messages/",
            body={
                "messages": [{"role": "user", "content": "Compare SQLite and PostgreSQL for us"}],
                "run": True,
            },
            token=ingest,
        )
        assert posted.status == 201 and posted.json()["run"]["status"] == "accepted"
        wait_until(
            lambda: Message.objects.filter(
                session__key="agent:main:main",
                role="assistant",
                content__0__text__startswith="Both researchers are back",
            ).exists(),
            timeout=60,
        )
        history = demo_server.request(
            "GET", "/api/v1/sessions/agent%3Amain%3Amain/history/?limit=10", token=key
        )
        (answer,) = [
            m["content"][0]["text"]
            for m in history.json()["items"]
            if m["role"] == "assistant"
            and isinstance(m["content"], list)
            and m["content"][0].get("text", "").startswith("Both researchers are back")
        ]
        sqlite = (
            "SQLite: one file and no server, WAL lets readers run beside the writer; right for "
            "the embedded default."
        )
        postgresql = (
            "PostgreSQL: a server with row locks and MVCC; right for production with several "
            "workers."
        )
        # The two children may finish in either order; both are in the one answer.
        lines = answer.splitlines()
        assert lines[0] == "Both researchers are back:"
        assert sorted(lines[1:]) == sorted([sqlite, postgresql])
        listed = demo_server.request(
            "POST", "/tools/invoke", body={"tool": "subagents", "args": {}}, token=key
        ).json()["result"]["details"]
        assert {t["label"] for t in listed["tasks"]} >= {"sqlite", "postgresql"}
    finally:
        worker.stop()
