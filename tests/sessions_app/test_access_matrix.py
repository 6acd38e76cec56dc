"""The authorization matrix (issue 16): every principal, acting as every session, reading every
session under every visibility config, over REST and `/tools/invoke`; and every endpoint that
acts as a session refusing the sessions a principal may not act as. The live ways in (SSE,
WebSocket) run the same oracle in tests/live_updates/test_access_matrix_live.py.

The oracle below is written from the rules (README "Make an API key", docs/reliability.md
"Access"), not from the code, so a change in either shows here.
"""

from __future__ import annotations

import itertools
from urllib.parse import quote

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


def read_outcomes(api: Api, acting: str | None, target: str) -> dict[str, str]:
    """What each read way answers: "ok", "forbidden" (a refusal) or "refused" (acting as)."""
    out = {}
    for name, path in (
        ("detail", url(target)),
        ("history", url(target, "history/")),
        ("transcript", url(target).rstrip("/") + "/transcript.jsonl"),
    ):
        status = api.get(path, **header(acting)).status_code
        out[name] = {200: "ok", 403: "forbidden"}.get(status, str(status))
    body = {"sessionKey": acting} if acting else {}
    response = api.invoke("sessions_history", {"sessionKey": target}, **body)
    if response.status_code == 403:
        out["tool"] = "forbidden"
    else:
        details = response.json()["result"]["details"]
        out["tool"] = "forbidden" if details.get("status") == "forbidden" else "ok"
    return out


def cases():
    return list(itertools.product(PRINCIPALS, ACTING))


@pytest.mark.parametrize("config", CONFIGS)
def test_reads_follow_the_matrix(principals, world, config):
    configure(config)
    failures, count = [], 0
    for principal, acting in cases():
        api = principals[principal]
        act = acts_as(principal, acting)
        for target in SESSIONS:
            expected = "ok" if act and may_read(principal, act, target, config) else "forbidden"
            got = read_outcomes(api, acting, target)
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
    assert count == len(PRINCIPALS) * len(ACTING) * (len(SESSIONS) * 4 + 2)


# Every endpoint that acts as a session: a principal naming a session it may not act as is
# refused before anything is read or written.
ACTING_ENDPOINTS = [
    ("get", "/api/v1/sessions/", None),
    ("get", url(MAIN), None),
    ("get", url(MAIN, "history/"), None),
    ("get", url(MAIN, "history/") + "?follow=1", None),
    ("get", url(MAIN).rstrip("/") + "/transcript.jsonl", None),
    ("post", url(MAIN, "send/"), {"message": "hi", "timeoutSeconds": 0}),
    ("post", url(MAIN, "abort/"), {}),
    ("post", "/api/v1/spawn/", {"task": "x"}),
    ("get", "/api/v1/agents/", None),
    ("get", "/api/v1/runs/00000000-0000-0000-0000-000000000000/", None),
    ("get", "/api/v1/runs/00000000-0000-0000-0000-000000000000/wait/?timeout=0", None),
    ("post", "/api/v1/runs/00000000-0000-0000-0000-000000000000/abort/", {}),
]
TOOLS = ["sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "agents_list"]
TOOL_ARGS = {
    "sessions_history": {"sessionKey": MAIN},
    "sessions_send": {"sessionKey": MAIN, "message": "hi", "timeoutSeconds": 0},
    "sessions_spawn": {"task": "x"},
}


def test_every_endpoint_refuses_a_session_it_may_not_act_as(principals, world):
    configure("all")
    refused = [(p, a) for p, a in cases() if a and acts_as(p, a) is None and p != "ingest"]
    assert ("sandboxed", CRON) in refused and ("research", GLOBAL) in refused
    failures, count = [], 0
    for principal, acting in refused:
        api = principals[principal]
        for method, path, body in ACTING_ENDPOINTS:
            call = getattr(api, method)
            response = (
                call(path, **header(acting)) if body is None else call(path, body, **header(acting))
            )
            count += 1
            if response.status_code != 403:
                failures.append((principal, acting, path, response.status_code))
        for tool in TOOLS:
            response = api.invoke(tool, TOOL_ARGS.get(tool, {}), sessionKey=acting)
            count += 1
            if response.status_code != 403:
                failures.append((principal, acting, tool, response.status_code))
    assert not failures, failures
    assert count == len(refused) * (len(ACTING_ENDPOINTS) + len(TOOLS))


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
