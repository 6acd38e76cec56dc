"""Visibility self/tree/agent/all, the sandbox clamp and the agent-to-agent policy (reference §7),
applied to sessions_list and sessions_history with OpenClaw's exact texts."""

import json
import uuid

import pytest
from django.db import transaction
from django.test import Client

from sessions_app.access import visibility
from sessions_app.models import ApiKey, Run
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import start_run
from tests.conftest import Api, make_agent, set_config
from tests.runs.helpers import drain
from tests.worlds import CHILD, GRANDCHILD, MAIN, OTHER, RESEARCH, SIBLING


def listed(api):
    return sorted(row["key"] for row in api.details("sessions_list")["sessions"])


def history_of(api, key):
    return api.details("sessions_history", {"sessionKey": key})


def test_default_visibility_is_tree_current_session_and_direct_children(agent_main, session_tree):
    assert listed(agent_main) == sorted([MAIN, CHILD])
    assert history_of(agent_main, CHILD)["sessionKey"] == CHILD
    assert history_of(agent_main, GRANDCHILD) == {
        "status": "forbidden",
        "error": "Session history visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree).",
    }


def test_self_sees_only_the_current_session(agent_main, session_tree):
    set_config(visibility="self")
    assert listed(agent_main) == [MAIN]
    assert history_of(agent_main, CHILD) == {
        "status": "forbidden",
        "error": "Session history visibility is restricted to the current session "
        "(tools.sessions.visibility=self).",
    }


def test_agent_sees_every_session_of_its_agent(agent_main, session_tree):
    set_config(visibility="agent")
    assert listed(agent_main) == sorted([MAIN, CHILD, GRANDCHILD, SIBLING])
    assert history_of(agent_main, RESEARCH) == {
        "status": "forbidden",
        "error": "Session history visibility is restricted. Set tools.sessions.visibility=all "
        "to allow cross-agent access.",
    }


def test_all_needs_agent_to_agent_for_other_agents(agent_main, session_tree):
    set_config(visibility="all")
    assert listed(agent_main) == sorted([MAIN, CHILD, GRANDCHILD, SIBLING])
    assert history_of(agent_main, RESEARCH) == {
        "status": "forbidden",
        "error": "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true "
        "to allow cross-agent access.",
    }


def test_all_with_agent_to_agent_allow_list(agent_main, session_tree):
    set_config(visibility="all", a2a_enabled=True, a2a_allow=["main", "res*"])
    assert RESEARCH in listed(agent_main) and OTHER not in listed(agent_main)
    assert history_of(agent_main, RESEARCH)["sessionKey"] == RESEARCH
    assert history_of(agent_main, OTHER) == {
        "status": "forbidden",
        "error": "Agent-to-agent history denied by tools.agentToAgent.allow.",
    }


def test_a_typo_in_the_agent_part_is_not_found_where_that_agent_may_be_seen(
    agent_main, session_tree
):
    """Issue 29.6. OpenClaw's guard reads the agent from the key's text before any lookup
    (reference §1.3: a key is not resolved through the gateway; §3.2: resolve, then the guard,
    then chat.history), so an agent id the allow list does not cover is the A2A refusal even
    when no such agent exists: that text is OpenClaw's and stays. Where the policy lets the
    caller see that agent id, the typo is a plain "not found"."""
    not_found = {
        "status": "error",
        "error": "Session not found: agent:mian:main (use the full sessionKey from sessions_list)",
    }
    set_config(visibility="all", a2a_enabled=True, a2a_allow=["main", "research"])
    assert history_of(agent_main, "agent:mian:main") == {
        "status": "forbidden",
        "error": "Agent-to-agent history denied by tools.agentToAgent.allow.",
    }
    assert history_of(agent_main, "agent:main:mian") == {
        **not_found,
        "error": not_found["error"].replace("agent:mian:main", "agent:main:mian"),
    }
    set_config(a2a_allow=["main", "m*"])
    assert history_of(agent_main, "agent:mian:main") == not_found
    set_config(a2a_allow=[])
    assert history_of(agent_main, "agent:mian:main") == not_found


def test_all_with_empty_allow_list_allows_every_agent(agent_main, session_tree):
    set_config(visibility="all", a2a_enabled=True, a2a_allow=[])
    assert {RESEARCH, OTHER} <= set(listed(agent_main))


def test_sandboxed_session_is_clamped_to_what_it_spawned(sandboxed_main, session_tree):
    set_config(visibility="all", a2a_enabled=True)
    # restrictToSpawned: the list shows only sessions this one spawned (of its own agent)
    assert listed(sandboxed_main) == [CHILD]
    assert history_of(sandboxed_main, CHILD)["sessionKey"] == CHILD
    assert history_of(sandboxed_main, MAIN)["sessionKey"] == MAIN  # itself
    assert history_of(sandboxed_main, SIBLING) == {
        "status": "forbidden",
        "error": f"Session not visible from this sandboxed agent session: {SIBLING}",
    }


def test_sandbox_visibility_all_lifts_the_clamp(sandboxed_main, session_tree):
    set_config(visibility="agent", sandbox_visibility="all")
    assert listed(sandboxed_main) == sorted([MAIN, CHILD, GRANDCHILD, SIBLING])


def test_a_run_a_sandboxed_key_starts_is_clamped_as_the_key(
    sandboxed_main, agent_main, session_tree
):
    """A sandboxed key may not read SIBLING; asking its agent to (a send to its own session)
    must not read it either (it did: the run's tool calls were clamped by the agent's flag
    only), nor spawn round it. An unsandboxed key's run of the same agent still reads it. Runs
    that run starts (replies, children, completions) inherit the clamp (Run.sandboxed)."""
    set_config(visibility="agent")
    read_sibling = {"name": "sessions_history", "arguments": {"sessionKey": SIBLING}}
    make_agent("main", backend={"type": "scripted", "rules": [
        {"match": "spawn", "toolCalls": [{"name": "sessions_spawn", "arguments": {
            "task": "read it", "agentId": "main"}}], "reply": "{toolResult}"},
        {"match": ".*", "toolCalls": [read_sibling], "reply": "{toolResult}"},
    ]}, subagents={"allowAgents": ["main"]}, tools={"allow": ["*"]})  # fmt: skip
    refused = {
        "status": "forbidden",
        "error": f"Session not visible from this sandboxed agent session: {SIBLING}",
    }
    assert history_of(sandboxed_main, SIBLING) == refused

    def send(api, text):
        sent = api.details("sessions_send", {"sessionKey": "main", "message": text,
                                             "timeoutSeconds": 0})  # fmt: skip
        assert sent["status"] == "accepted", sent
        drain()
        return Run.objects.get(pk=sent["runId"])

    run = send(sandboxed_main, "read the sibling")
    assert run.sandboxed and json.loads(run.reply) == refused
    with transaction.atomic():  # what a run starts (a reply step, a child) is clamped too
        step = start_run(session=run.session, kind="step", message="and then?",
                         chain=Chain(uuid.uuid4(), ("main",)), parent_run=run)  # fmt: skip
    assert step.sandboxed
    # Nor can it get round the clamp through a child: the key's own rule holds for its run.
    assert json.loads(send(sandboxed_main, "spawn a reader").reply) == {
        "status": "forbidden",
        "error": "a sandboxed session cannot spawn an unsandboxed agent (main)",
    }
    run = send(agent_main, "read the sibling")
    assert not run.sandboxed and json.loads(run.reply)["sessionKey"] == SIBLING


def test_a_sandboxed_sub_agent_is_not_restricted_to_its_own_children(agents, session_tree):
    _, token = ApiKey.generate(scope="agent", agent=agents["main"], sandboxed=True)
    api = Api(Client(), token)
    rows = api.details("sessions_list", sessionKey=CHILD)["sessions"]
    # tree from the child: itself and its own child
    assert sorted(r["key"] for r in rows) == sorted([CHILD, GRANDCHILD])


def test_list_skips_denied_rows_silently(agent_main, session_tree):
    details = agent_main.details("sessions_list", {"agentId": "research"})
    assert details == {
        "count": 0,
        "sessions": [],
        "limitApplied": 100,
        "offset": 0,
        "hasMore": False,
        # 9.6's disclosure of a restricted scope (test_sessions_list_96.py)
        "visibility": {
            "mode": "tree",
            "restricted": True,
            "warning": "Session visibility is restricted (effective "
            "tools.sessions.visibility=tree: current session + own spawn subtree). Sessions "
            "outside that scope are omitted from results and count.",
        },
    }


@pytest.mark.parametrize(
    ("configured", "sandboxed", "sandbox_visibility", "expected"),
    [
        (None, False, "spawned", "tree"),
        ("bogus", False, "spawned", "tree"),
        (" AGENT ", False, "spawned", "agent"),
        ("all", True, "spawned", "tree"),
        ("self", True, "spawned", "tree"),  # the clamp widens self
        ("all", True, "all", "all"),
        ("self", False, "spawned", "self"),
    ],
)
def test_effective_visibility(configured, sandboxed, sandbox_visibility, expected):
    assert (
        visibility.effective_visibility(
            configured, sandboxed=sandboxed, sandbox_visibility=sandbox_visibility
        )
        == expected
    )


def _policy(**overrides):
    base = {
        "requester_key": MAIN,
        "requester_agent": "main",
        "visibility": "all",
        "restrict_to_spawned": False,
        "a2a_enabled": True,
        "a2a_allow": (),
    }
    return visibility.Policy(**{**base, **overrides})


@pytest.mark.parametrize(
    ("allow", "target", "allowed"),
    [
        ((), "research", True),
        (("*",), "anything", True),
        (("main", "research"), "research", True),
        (("main", "Research"), "research", False),  # exact entries are case-sensitive
        (("main", "RES*"), "research", True),  # globs are case-insensitive
        (("main", "r?s*"), "research", False),  # only * is special
        (("research",), "research", False),  # the requester must match too
        (("ma*", "*arch"), "research", True),
    ],
)
def test_agent_to_agent_allow_patterns(allow, target, allowed):
    assert visibility.a2a_allowed(_policy(a2a_allow=allow), "main", target) is allowed


def test_a2a_disabled_denies_other_agents_but_not_self():
    policy = _policy(a2a_enabled=False)
    assert visibility.a2a_allowed(policy, "main", "main") is True
    assert visibility.a2a_allowed(policy, "main", "research") is False


@pytest.mark.parametrize(
    ("action", "prefix", "disabled", "denied"),
    [
        (
            "list",
            "Session list",
            "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent visibility.",
            "Agent-to-agent listing denied by tools.agentToAgent.allow.",
        ),
        (
            "history",
            "Session history",
            "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent access.",
            "Agent-to-agent history denied by tools.agentToAgent.allow.",
        ),
        (
            "send",
            "Session send",
            "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends.",
            "Agent-to-agent messaging denied by tools.agentToAgent.allow.",
        ),
    ],
)
def test_error_texts_per_action(action, prefix, disabled, denied):
    check = lambda policy, key, spawned_by="": visibility.check(  # noqa: E731
        policy, target_key=key, target_spawned_by=spawned_by, action=action
    )
    assert check(_policy(visibility="self"), SIBLING) == (
        f"{prefix} visibility is restricted to the current session (tools.sessions.visibility=self)."
    )
    assert check(_policy(visibility="tree"), SIBLING) == (
        f"{prefix} visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
    )
    assert check(_policy(visibility="tree"), CHILD, MAIN) is None
    assert check(_policy(visibility="agent"), RESEARCH) == (
        f"{prefix} visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."
    )
    assert check(_policy(a2a_enabled=False), RESEARCH) == disabled
    assert check(_policy(a2a_allow=("main",)), RESEARCH) == denied
    assert check(_policy(), RESEARCH) is None


def test_when_every_agent_is_visible_the_list_has_no_agent_filter():
    everyone = _policy(a2a_allow=())
    assert visibility.visible_q(everyone, agent_ids=["main", "research"]) == visibility.Q()
    some = _policy(a2a_allow=("main", "research"))
    assert visibility.visible_q(some, agent_ids=["main", "research", "other"]) != visibility.Q()
