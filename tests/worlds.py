"""Worlds the tests combine, as pretix's fixtures chain organizer -> event -> client: each
fixture adds one layer over the ones it asks for, and a test (or a module's small fixture) asks
for the layers it needs. Registered for every test folder by tests/conftest.py.

In-process (the `db` fixture, Django's test client):
    agents (tests/conftest.py) -> session_tree or chat_sessions, with the keyed personas of
    tests/conftest.py (operator, agent_main, sandboxed_main, ingest, outsider, anonymous)

Across processes (`transactional_db`: a real server and worker read what the test commits):
    research_rules, main_agent (a module overrides them) -> two_agents -> main_token,
    operator_token, ingest_token
    server_env -> running_server -> running_worker (worker_processes)
    queued_send: a send no worker takes (two_agents, running_server, main_token)
    live_world: two agents, a server, a worker and main's key together

A module with data of its own keeps a small fixture that composes these, with one line saying
why its data is particular.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sessions_app.models import ApiKey, Session
from tests.conftest import add_messages, assistant, make_agent, make_session, set_config, user
from tests.servers import LiveServer, LiveWorker, start_server, start_worker

# --- a session tree, in-process -----------------------------------------------------------------

MAIN = "agent:main:main"
CHILD = "agent:main:subagent:child-1"
GRANDCHILD = "agent:main:subagent:child-1:subagent:g-1"
SIBLING = "agent:main:discord:group:dev"
RESEARCH = "agent:research:main"
RESEARCH_CHILD = "agent:research:subagent:r-1"
OTHER = "agent:other:main"


@pytest.fixture
def session_tree(agents) -> dict[str, str]:
    """main's session with a sub-agent and its grandchild, a sibling session of main (a discord
    group), research's own session and a research sub-agent spawned by main, and another agent's
    (`other`) session. All empty; returns the keys by role."""
    make_session(MAIN)
    make_session(CHILD, spawnedBy=MAIN, spawnDepth=1)
    make_session(GRANDCHILD, spawnedBy=CHILD, spawnDepth=2)
    make_session(SIBLING, channel="discord")
    make_session(RESEARCH)
    make_session(OTHER)
    make_session(RESEARCH_CHILD, spawnedBy=MAIN, spawnDepth=1)
    return {
        "main": MAIN,
        "child": CHILD,
        "grandchild": GRANDCHILD,
        "sibling": SIBLING,
        "research": RESEARCH,
        "research_child": RESEARCH_CHILD,
        "other": OTHER,
    }


@pytest.fixture
def chat_sessions(agents) -> Session:
    """main's session (label "home": a user's "hello", the assistant's "hi"), another agent's
    main session and a discord group: the small world bad-input tests read and write. Returns
    main's session."""
    main = make_session("main", label="home")
    add_messages(main, user("hello"), assistant("hi"))
    make_session("agent:other:main")
    make_session("discord:group:dev")
    return main


# --- across processes -------------------------------------------------------------------------

ANNOUNCE_SKIP = {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"}


@pytest.fixture
def research_rules() -> list[dict] | None:
    """The research agent's scripted rules (None: research keeps its default backend). A module
    overrides this fixture with the rules its scenarios need."""
    return None


@pytest.fixture
def main_agent() -> dict:
    """More fields of agent `main` (e.g. `subagents`); a module overrides this fixture."""
    return {}


@pytest.fixture
def two_agents(transactional_db, research_rules, main_agent) -> None:
    """`main` and `research` (scripted by `research_rules`), their main sessions, visibility
    "all" and agent-to-agent allowed with no ping-pong turns. Committed: another process reads
    it."""
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    make_agent("main", **main_agent)
    if research_rules is None:
        make_agent("research")
    else:
        make_agent("research", backend={"type": "scripted", "rules": research_rules})
    make_session("main")
    make_session("agent:research:main")


@pytest.fixture
def main_token(two_agents) -> str:
    """An agent key of `main`."""
    return ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")[1]


@pytest.fixture
def operator_token(transactional_db) -> str:
    return ApiKey.generate(scope=ApiKey.OPERATOR)[1]


@pytest.fixture
def ingest_token(transactional_db) -> str:
    return ApiKey.generate(scope=ApiKey.INGEST)[1]


@pytest.fixture
def server_env() -> dict[str, str]:
    """More environment for `running_server` (e.g. a pool size); a module may override it."""
    return {}


@pytest.fixture
def running_server(transactional_db, server_env):
    """`manage.py serve` on the test database (no worker in it), stopped after the test. Ask
    for it (and `running_worker`) after the fixtures that write the data, as `live_world` does:
    composed the other way round, tests/runs/test_orchestration_live.py's worker-kill test
    failed 3 of 3 on PostgreSQL + Redis."""
    server = start_server(env=server_env)
    yield server
    server.stop()


@pytest.fixture
def worker_processes() -> int:
    """How many worker processes `running_worker`'s cluster has; a module may override it."""
    return 2


@pytest.fixture
def running_worker(running_server, worker_processes):
    """A django-q2 cluster on the test database. It asks for the server only so that it stops
    first (and both before the database is flushed: a stopped worker writes nothing more)."""
    worker = start_worker(workers=worker_processes)
    yield worker
    worker.stop()


@dataclass
class LiveWorld:
    server: LiveServer
    worker: LiveWorker
    token: str  # main's agent key


@pytest.fixture
def live_world(two_agents, running_server, running_worker, main_token) -> LiveWorld:
    """Two agents, a server, a worker cluster and main's key: where most cross-process tests
    start."""
    return LiveWorld(running_server, running_worker, main_token)


@pytest.fixture
def queued_send(two_agents, running_server, main_token) -> str:
    """main's sessions_send to research through the server, with no worker to take its run:
    the run stays queued and every wait for it runs to its timeout. Returns the runId."""
    return send_to_research(running_server, main_token, "hi")["runId"]


def send_to_research(server: LiveServer, token: str, message: str, *, timeout: int = 0) -> dict:
    """sessions_send to agent:research:main through /tools/invoke: the result's details."""
    response = server.request(
        "POST",
        "/tools/invoke",
        token=token,
        body={
            "tool": "sessions_send",
            "args": {
                "sessionKey": "agent:research:main",
                "message": message,
                "timeoutSeconds": timeout,
            },
        },
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]
