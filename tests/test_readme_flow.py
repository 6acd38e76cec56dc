"""The README's first steps, for real: seed the demo, make a key in another process, and query
every read tool over HTTP against a running server; then every block of the README and of each
docs page, as pasted (tests/readme_runner.py)."""

import pytest

from tests import readme_runner
from tests.servers import manage


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

    found = demo_server.request(
        "POST",
        "/tools/invoke",
        body={"tool": "sessions_search", "args": {"query": "nightly build", "limit": 5}},
        token=token,
    )
    (hit,) = found.json()["result"]["details"]["results"]
    assert hit["sessionKey"] == "agent:main:discord:group:dev" and "nightly build" in hit["snippet"]
    rest = demo_server.request("GET", "/api/v1/search/?q=nightly+build", token=token)
    assert rest.status == 200 and rest.json()["results"][0]["snippet"] == hit["snippet"]

    agents = demo_server.request("POST", "/tools/invoke", body={"tool": "agents_list"}, token=token)
    assert [a["id"] for a in agents.json()["result"]["details"]["agents"]] == ["main", "research"]

    rest = demo_server.request(
        "GET", "/api/v1/sessions/agent%3Amain%3Amain/history/?limit=2", token=token
    )
    assert rest.status == 200 and len(rest.json()["messages"]) == 2

    assert (
        demo_server.request("POST", "/tools/invoke", body={"tool": "sessions_list"}).status == 401
    )


def test_the_readme_orchestration_a_parent_two_children_one_answer(demo_server):
    """README, "A parent, two sub-agents, one answer": the user's message, the parent's yield,
    and its answer with both results, through a real worker."""
    from sessions_app.models import Message
    from tests.servers import start_worker, wait_until

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
            for m in history.json()["messages"]
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


# What each page's blocks must have printed, beyond every answer being a 2xx that the page shows.
PRINTED = {
    "README.md": [
        '"reply": "SQLite 3.47',  # the send got its reply (details come indented, as the text)
        "agent:research:subagent:",  # the spawn
        "nightly build",  # the search
    ],
    "docs/tools.md": [
        "Both researchers are back",  # the parent's one answer, polled for
        "agent:echo:acp:",  # the ACP spawn
        '"acp.allowedAgents"',  # the codex registration, after the restart the page asks for
    ],
    "docs/mcp.md": ["conversations: 1"],
    # The WebSocket example printed the subscription's answer before it was stopped.
    "docs/live.md": ["'type': 'res'", "'ok': True", "event: history"],
    "docs/retention.md": ["sessions would be archived", "sessions were archived"],
}


def test_every_page_with_blocks_is_run():
    """README.md and each docs page with a runnable block (a page that gains its first block is
    run without being listed anywhere); the pages whose output is checked still have blocks."""
    run = {str(page.relative_to(readme_runner.ROOT)) for page in readme_runner.pages_with_blocks()}
    assert set(PRINTED) <= run
    assert "README.md" in run


@pytest.mark.parametrize(
    "page", readme_runner.pages(), ids=lambda page: str(page.relative_to(readme_runner.ROOT))
)
def test_the_page_pastes_as_is(page):
    """Issue 29.3: every block uses $BASE, makes each key once, polls rather than sleeps, and
    sets what it uses."""
    assert readme_runner.unpasteable(readme_runner.page_blocks(page)) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "page",
    readme_runner.pages_with_blocks(),
    ids=lambda page: str(page.relative_to(readme_runner.ROOT)),
)
def test_the_page_top_to_bottom_as_written(page, tmp_path):
    """Issues 17.5 and 29.3: every `sh` and `python` block of the page, in order, unedited, in a
    new shell, against a fresh demo with its own server and worker on a free port (BASE set to
    it), started with the environment the page says to restart with."""
    from tests.conftest import admin_groups
    from tests.servers import child_env, start_server, start_worker

    blocks = readme_runner.page_blocks(page)
    run = readme_runner.runnable(blocks)
    env = readme_runner.restart_env(blocks)
    manage("seed_demo")
    admin_groups()  # what `migrate` made and a transactional test's flush removed
    server = start_server(env=env)
    worker = start_worker(env=env)
    try:
        outputs = readme_runner.run_page(
            page, base=server.url, env=child_env(**env), workdir=tmp_path
        )
    finally:
        worker.stop()
        server.stop()

    assert set(outputs) == {b.index for b in run}
    by_index = {b.index: b for b in run}
    for index, output in outputs.items():
        bad = [code for code in readme_runner.statuses(output) if code >= 400]
        assert not bad, f"{page.name} block {index} got HTTP {bad}:\n{output}"
        unlike = readme_runner.unlike_the_page(by_index[index], output)
        assert not unlike, f"{page.name} block {index}: {unlike}:\n{output}"
    text = "\n".join(outputs.values())
    for expected in PRINTED.get(str(page.relative_to(readme_runner.ROOT)), []):
        assert expected in text, f"{page.name} printed no {expected!r}:\n{text[-3000:]}"
    if page.name == "tools.md":
        sent = [b for b in run if "ask-research-1" in b.text]
        assert sent, "the idempotencyKey example is gone from docs/tools.md"
        statuses = readme_runner.tool_statuses(outputs[sent[0].index])
        assert statuses and statuses[0] == "accepted"
