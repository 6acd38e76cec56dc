"""The authorization matrix (issue 16): every principal, acting as every session, reading every
session under every visibility config, over REST and `/tools/invoke`; and every endpoint that
acts as a session refusing the sessions a principal may not act as. The live ways in (SSE,
WebSocket) run the same oracle in tests/live/test_access_matrix_live.py.

The oracle below is written from the rules (README "Make an API key", docs/reliability.md
"Access"), not from the code, so a change in either shows here.
"""

from __future__ import annotations

import itertools
from urllib.parse import quote, urlencode

import pytest
from django.test import Client

from sessions_app.models import ApiKey
from tests.conftest import Api, add_messages, make_session, set_config, user

MAIN = "agent:main:main"
CHILD = "agent:main:subagent:c1"
GRAND = "agent:main:subagent:c1:subagent:g1"
CRON = "agent:main:cron:x"
RESEARCH = "agent:research:main"
GLOBAL = "global"
SESSIONS = (MAIN, CHILD, GRAND, CRON, RESEARCH, GLOBAL)
SPAWNED_BY = {CHILD: MAIN, GRAND: CHILD}
LISTABLE = (MAIN, CHILD, GRAND, CRON, RESEARCH)  # reserved keys are never listed

PRINCIPALS = ("agent", "sandboxed", "pinned", "ingest", "operator", "research")
ACTING = (None, *SESSIONS)  # None: no header / no sessionKey, the key's default
CONFIGS = ("self", "tree", "agent", "all")


# --- the oracle -------------------------------------------------------------------------------


def owner(key: str) -> str:
    return "research" if key.startswith("agent:research:") else "main"  # global is main's


def acts_as(principal: str, acting: str | None) -> str | None:
    """The session `principal` acts as when it names `acting`, or None when refused (403)."""
    if principal == "ingest":
        return None
    default = {"pinned": CRON, "research": RESEARCH}.get(principal, MAIN)
    act = acting or default
    if principal == "operator":
        return act
    if owner(act) != ("research" if principal == "research" else "main"):
        return None
    if principal == "pinned" and act != CRON:
        return None
    if principal == "sandboxed" and act not in (MAIN, CHILD, GRAND):
        return None  # the clamp: its main session or what was spawned under it
    return act


def sandbox(principal: str, act: str, config: str) -> tuple[str, bool]:
    """(effective visibility, restricted to spawned) under sandboxVisibility=spawned."""
    if principal != "sandboxed":
        return config, False
    return "tree", ":subagent:" not in act


def may_read(principal: str, act: str, target: str, config: str) -> bool:
    visibility, restricted = sandbox(principal, act, config)
    if restricted and target != act and SPAWNED_BY.get(target) != act:
        return False
    if owner(target) != owner(act):
        return visibility == "all"  # the "all" config also enables agent-to-agent
    if visibility == "self":
        return target == act
    if visibility == "tree":
        return target == act or SPAWNED_BY.get(target) == act
    return True


def listed(principal: str, act: str, config: str) -> set[str]:
    visibility, restricted = sandbox(principal, act, config)
    own = {k for k in LISTABLE if owner(k) == owner(act)}
    if restricted:
        return {k for k in own if SPAWNED_BY.get(k) == act}
    if visibility == "self":
        return {act} & set(LISTABLE)
    if visibility == "tree":
        return {k for k in own if k == act or SPAWNED_BY.get(k) == act}
    if visibility == "agent":
        return own
    return set(LISTABLE)


# --- the world --------------------------------------------------------------------------------


def configure(config: str) -> None:
    set_config(visibility=config, a2a_enabled=config == "all", a2a_allow=[])


@pytest.fixture
def world(agents):
    # Particular: the oracle's sessions (SESSIONS, SPAWNED_BY), each with a message to read.
    for key in SESSIONS:
        entry = {"spawnedBy": SPAWNED_BY[key], "spawnDepth": 1} if key in SPAWNED_BY else {}
        add_messages(make_session(key, **entry), user(f"hello {key}"))


@pytest.fixture
def principals(agents) -> dict[str, Api]:
    made = {
        "agent": {"scope": ApiKey.AGENT, "agent": agents["main"]},
        "sandboxed": {"scope": ApiKey.AGENT, "agent": agents["main"], "sandboxed": True},
        "pinned": {"scope": ApiKey.AGENT, "agent": agents["main"], "session_key": CRON},
        "ingest": {"scope": ApiKey.INGEST},
        "operator": {"scope": ApiKey.OPERATOR},
        "research": {"scope": ApiKey.AGENT, "agent": agents["research"]},
    }
    return {name: Api(Client(), ApiKey.generate(**fields)[1]) for name, fields in made.items()}


def header(acting: str | None) -> dict:
    return {"HTTP_X_OPENCLAW_SESSION_KEY": acting} if acting else {}


def url(key: str, tail: str = "") -> str:
    return f"/api/v1/sessions/{quote(key, safe='')}/{tail}"


def outcome(status: int) -> str:
    return {200: "ok", 403: "forbidden"}.get(status, str(status))


def tool_outcome(response) -> str:
    if response.status_code != 200:
        return outcome(response.status_code)
    details = response.json()["result"]["details"]
    return "forbidden" if details.get("status") == "forbidden" else "ok"


def read_outcomes(
    api: Api, acting: str | None, target: str, sid: str, *, every_way: bool
) -> dict[str, str]:
    """What each read way answers: "ok" or "forbidden" (a refusal, or may not act as).
    `every_way`: also the ways that read one session like history does (status, search, the
    transcript by sessionId, OpenClaw's path); a principal refused its acting session gets 403
    on those before they read anything (test_every_endpoint_and_tool_refuses_…)."""
    out = {}
    as_header, in_body = header(acting), ({"sessionKey": acting} if acting else {})
    reads = [
        ("detail", url(target)),
        ("history", url(target, "history/")),
        ("transcript", url(target).rstrip("/") + "/transcript.jsonl"),
    ]
    if every_way:
        reads += [
            ("status", url(target, "status/")),
            ("transcript by sessionId", f"/api/v1/transcripts/{sid}.jsonl"),
            ("openclaw history", f"/sessions/{quote(target, safe='')}/history"),
            ("search", "/api/v1/search/?" + urlencode({"q": "hello", "sessionKey": target})),
        ]
    for name, path in reads:
        out[name] = outcome(api.get(path, **as_header).status_code)
    tools = [("sessions_history", {"sessionKey": target})]
    if every_way:
        tools += [
            ("session_status", {"sessionKey": target}),
            ("sessions_search", {"query": "hello", "sessionKey": target}),
        ]
    for tool, args in tools:
        out[tool] = tool_outcome(api.invoke(tool, args, **in_body))
    return out


def cases():
    return list(itertools.product(PRINCIPALS, ACTING))


@pytest.mark.parametrize("config", CONFIGS)
def test_reads_follow_the_matrix(principals, world, config):
    from sessions_app.models import Session

    configure(config)
    sids = {key: str(sid) for key, sid in Session.objects.values_list("key", "session_id")}
    failures, count = [], 0
    for principal, acting in cases():
        api = principals[principal]
        act = acts_as(principal, acting)
        for target in SESSIONS:
            expected = "ok" if act and may_read(principal, act, target, config) else "forbidden"
            got = read_outcomes(api, acting, target, sids[target], every_way=act is not None)
            count += len(got)
            failures += [
                (principal, acting, target, way, outcome)
                for way, outcome in got.items()
                if outcome != expected
            ]
        # sessions_list, REST and tool
        rest = api.get("/api/v1/sessions/", **header(acting))
        tool = api.invoke("sessions_list", {}, **({"sessionKey": acting} if acting else {}))
        count += 2
        for way, response in (("rest", rest), ("tool", tool)):
            if act is None:
                if response.status_code != 403:
                    failures.append((principal, acting, "list", way, response.status_code))
                continue
            body = response.json()
            rows = body["sessions"] if way == "rest" else body["result"]["details"]["sessions"]
            got_keys = {row["key"] for row in rows}
            if got_keys != listed(principal, act, config):
                failures.append((principal, acting, "list", way, sorted(got_keys)))
    assert not failures, failures
    allowed = sum(1 for p, a in cases() if acts_as(p, a) is not None)
    assert count == len(cases()) * (len(SESSIONS) * 4 + 2) + allowed * len(SESSIONS) * 6


# Every endpoint and every tool: a principal naming a session it may not act as is refused (403)
# before anything is read or written. The routes are found in the URL conf, as the API schema
# test finds them, so a route added without a line here fails the test. Each line is the
# calls made on that route (path with MAIN, or {sid}: MAIN's sessionId; body or None).
RUN = "/api/v1/runs/00000000-0000-0000-0000-000000000000/"
ROUTE_CALLS: dict[tuple[str, str], list[tuple[str, object]]] = {
    ("get", "/api/v1/sessions/"): [("/api/v1/sessions/", None)],
    ("post", "/api/v1/sessions/"): [("/api/v1/sessions/", {"key": "agent:main:new"})],
    ("get", "/api/v1/sessions/{key}/"): [(url(MAIN), None)],
    ("patch", "/api/v1/sessions/{key}/"): [
        (url(MAIN), {"pinned": True}),  # the sessions tool's fields: acts as a session
        (url(MAIN), {"label": "x"}),  # sessions.patch's: ingest or operator keys
    ],
    ("delete", "/api/v1/sessions/{key}/"): [(url(MAIN) + "?expectedSessionId={sid}", None)],
    ("get", "/api/v1/sessions/{key}/history/"): [
        (url(MAIN, "history/"), None),
        (url(MAIN, "history/") + "?follow=1", None),  # SSE
    ],
    ("post", "/api/v1/sessions/{key}/messages/"): [
        (url(MAIN, "messages/"), {"messages": [user("x")]})
    ],
    ("get", "/api/v1/sessions/{key}/transcript.jsonl"): [
        (url(MAIN).rstrip("/") + "/transcript.jsonl", None)
    ],
    ("get", "/api/v1/transcripts/{session_id}.jsonl"): [("/api/v1/transcripts/{sid}.jsonl", None)],
    ("post", "/api/v1/sessions/{key}/send/"): [
        (url(MAIN, "send/"), {"message": "hi", "timeoutSeconds": 0})
    ],
    ("get", "/api/v1/sessions/{key}/status/"): [(url(MAIN, "status/"), None)],
    ("post", "/api/v1/sessions/{key}/reset/"): [(url(MAIN, "reset/"), {})],
    ("get", "/api/v1/groups/"): [("/api/v1/groups/", None)],
    ("put", "/api/v1/groups/"): [("/api/v1/groups/", {"names": ["g"]})],
    ("post", "/api/v1/groups/rename/"): [("/api/v1/groups/rename/", {"name": "g", "to": "h"})],
    ("delete", "/api/v1/groups/{name}/"): [("/api/v1/groups/g/", None)],
    ("post", "/api/v1/sessions/{key}/abort/"): [(url(MAIN, "abort/"), {})],
    ("get", "/api/v1/runs/{run_id}/"): [(RUN, None)],
    ("get", "/api/v1/runs/{run_id}/wait/"): [(RUN + "wait/?timeout=0", None)],
    ("post", "/api/v1/runs/{run_id}/abort/"): [(RUN + "abort/", {})],
    ("get", "/api/v1/search/"): [("/api/v1/search/?q=hello", None)],
    ("post", "/api/v1/spawn/"): [("/api/v1/spawn/", {"task": "x"})],
    ("get", "/api/v1/agents/"): [("/api/v1/agents/", None)],
    # Operator scope only: refused to every key the matrix refuses anything (none is one).
    ("put", "/api/v1/agents/{agent_id}/"): [("/api/v1/agents/main/", {"name": "x"})],
    ("post", "/api/v1/agents/{agent_id}/models/refresh/"): [
        ("/api/v1/agents/main/models/refresh/", {})
    ],
    ("get", "/api/v1/config/"): [("/api/v1/config/", None)],
    ("patch", "/api/v1/config/"): [("/api/v1/config/", {"session.mainKey": "main"})],
    ("get", "/api/v1/policies/"): [("/api/v1/policies/", None)],
    ("post", "/api/v1/policies/"): [("/api/v1/policies/", {"action": "deny"})],
    ("patch", "/api/v1/policies/"): [("/api/v1/policies/", {"enabled": False})],
    ("post", "/api/v1/policies/dry-run/"): [("/api/v1/policies/dry-run/", {"rules": []})],
    ("get", "/api/v1/policies/{rule_id}/"): [("/api/v1/policies/1/", None)],
    ("patch", "/api/v1/policies/{rule_id}/"): [("/api/v1/policies/1/", {"action": "allow"})],
    ("delete", "/api/v1/policies/{rule_id}/"): [("/api/v1/policies/1/", None)],
    # OpenClaw's path, API-key form: the API's history view.
    ("get", "/sessions/{sessionKey}/history"): [
        (f"/sessions/{quote(MAIN, safe='')}/history", None)
    ],
    # /tools/invoke: every tool of the registry, below.
    ("post", "/tools/invoke"): [],
}
# Routes that act as nobody, and why.
NOT_ACTING = {
    ("get", "/api/v1/schema/"): "the API's own description, public",
    ("get", "/api/v1/docs/"): "the schema rendered for people, public",
}
TOOL_ARGS = {
    "sessions_history": {"sessionKey": MAIN},
    "sessions_search": {"query": "hello"},
    "sessions_send": {"sessionKey": MAIN, "message": "hi", "timeoutSeconds": 0},
    "sessions_spawn": {"task": "x"},
    "subagents": {"action": "list"},
    "session_status": {"sessionKey": MAIN},
    "sessions": {"action": "patch", "sessionKey": MAIN, "pinned": True},
}


def api_routes() -> set[tuple[str, str]]:
    """(method, path) of every API operation the URL conf routes (test_api_schema's walk)."""
    from tests.api.test_api_schema import OPENCLAW_PATHS, PUBLIC_PREFIXES, methods_of
    from tests.api.test_api_schema import routes as walk

    found = set()
    for path, callback in walk():
        if path.startswith(PUBLIC_PREFIXES) or path in OPENCLAW_PATHS:
            found |= {(method, path) for method in methods_of(callback)}
    return found


def test_every_route_of_the_api_is_in_the_matrix():
    routed = api_routes()
    assert len(routed) > 30  # the walk found the API
    missing = routed - set(ROUTE_CALLS) - set(NOT_ACTING)
    assert not missing, f"add these routes to ROUTE_CALLS (or NOT_ACTING): {sorted(missing)}"
    assert not (set(ROUTE_CALLS) | set(NOT_ACTING)) - routed, "a route that is gone"


def refused_pairs() -> list[tuple[str, str]]:
    return [(p, a) for p, a in cases() if a and acts_as(p, a) is None and p != "ingest"]


def test_every_endpoint_and_tool_refuses_a_session_it_may_not_act_as(principals, world):
    from sessions_app.models import Session
    from sessions_app.tools import TOOLS

    configure("all")
    sid = str(Session.objects.get(key=MAIN).session_id)
    refused = refused_pairs()
    assert ("sandboxed", CRON) in refused and ("research", GLOBAL) in refused
    calls = [
        (method, path.replace("{sid}", sid), body)
        for (method, _), made in ROUTE_CALLS.items()
        for path, body in made
    ]
    failures, count = [], 0
    for principal, acting in refused:
        api = principals[principal]
        for method, path, body in calls:
            call = getattr(api, method)
            response = (
                call(path, **header(acting)) if body is None else call(path, body, **header(acting))
            )
            count += 1
            if response.status_code != 403:
                failures.append((principal, acting, method, path, response.status_code))
        for tool in TOOLS.names:
            response = api.invoke(tool, TOOL_ARGS.get(tool, {}), sessionKey=acting)
            count += 1
            if response.status_code != 403:
                failures.append((principal, acting, tool, response.status_code))
    assert not failures, failures
    assert count == len(refused) * (len(calls) + len(TOOLS.names))
    # Nothing was done on their behalf.
    assert not Session.objects.filter(key="agent:main:new").exists()
    assert Session.objects.get(key=MAIN).session_id == sid


def test_the_reported_hole_is_closed(principals, world):
    """The issue's own example: 403 without the header, and still 403 with it."""
    sandboxed = principals["sandboxed"]
    assert sandboxed.get(url(CRON, "history/")).status_code == 403
    response = sandboxed.get(url(CRON, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=CRON)
    assert response.status_code == 403
    assert (
        "sandboxed API key may act only as agent:main:main" in response.json()["error"]["message"]
    )
    # acting as what it spawned stays possible (the sandboxed sub-agent's own view)
    assert (
        sandboxed.get(url(CHILD, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=CHILD).status_code == 200
    )


def test_reserved_keys_belong_to_the_default_agent(principals, world):
    research = principals["research"]
    for reserved in ("global", "unknown", "GLOBAL"):
        response = research.get(url(GLOBAL, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=reserved)
        assert response.status_code == 403, reserved
        assert "may not act as session" in response.json()["error"]["message"]
    assert (
        principals["agent"]
        .get(url(GLOBAL, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=GLOBAL)
        .status_code
        == 200
    )


def test_under_scope_global_another_agents_key_defaults_to_its_own_main(principals, world):
    set_config(session_scope="global", visibility="tree")
    research = principals["research"]
    assert research.get(url(RESEARCH, "history/")).status_code == 200
    assert research.get(url(GLOBAL, "history/")).status_code == 403
    assert principals["agent"].get(url(GLOBAL, "history/")).status_code == 200


def test_reserved_keys_follow_a_configured_default_agent(principals, world):
    """With defaultAgentId=research, `global` is research's: a main key with visibility `agent`
    no longer reads it, and only research's keys act as it."""
    set_config(default_agent_id="research", visibility="agent")
    main, research = principals["agent"], principals["research"]
    assert main.get(url(GLOBAL, "history/")).status_code == 403
    refused = main.get(url(MAIN, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=GLOBAL)
    assert refused.status_code == 403
    acting = research.get(url(GLOBAL, "history/"), HTTP_X_OPENCLAW_SESSION_KEY=GLOBAL)
    assert acting.status_code == 200, acting.content
    assert research.get(url(GLOBAL, "history/")).status_code == 200  # visibility agent
