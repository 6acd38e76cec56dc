"""Run.flow as a typed Flow (same JSON keys as the rows stored before it), and the follow-ups
flows.py hands the engine as data."""

import ast
import inspect
from dataclasses import fields
from pathlib import Path

from sessions_app.runs import engine, flows
from sessions_app.runs.flow_state import Flow, FollowUp

STORED_SEND = {
    "type": "a2a",
    "requester": "agent:main:main",
    "requesterChannel": "",
    "target": "agent:echo:main",
    "targetChannel": "discord",
    "original": "ping",
    "maxTurns": 5,
    "round1": "pong",
    "latest": "pong",
    "turn": 2,
}


def test_a_stored_flow_loads_and_is_written_back_with_the_same_keys():
    flow = Flow.from_json(STORED_SEND)
    assert (flow.type, flow.target_channel, flow.max_turns, flow.turn) == ("a2a", "discord", 5, 2)
    assert flow.to_json() == STORED_SEND


def test_an_empty_flow_is_an_empty_object_and_unknown_keys_are_ignored():
    assert Flow.from_json({}) == Flow() == Flow.from_json(None)
    assert Flow().to_json() == {}
    assert Flow.from_json({"type": "spawn", "someday": 1}).to_json() == {"type": "spawn"}


def test_the_constructors_write_what_the_tools_stored_as_dicts():
    send = Flow.a2a(
        requester="agent:main:main",
        requester_channel="",
        target="agent:echo:main",
        target_channel="discord",
        original="ping",
        max_turns=5,
    )
    assert send.to_json() == {k: STORED_SEND[k] for k in list(STORED_SEND)[:7]}
    spawn = Flow.spawn(
        requester="agent:main:main",
        requester_channel="",
        task="count",
        label="counter",
        cleanup="delete",
        attachments_dir="/tmp/x",
    )
    assert spawn.to_json() == {
        "type": "spawn",
        "requester": "agent:main:main",
        "requesterChannel": "",
        "task": "count",
        "label": "counter",
        "cleanup": "delete",
        "attachmentsDir": "/tmp/x",
    }


def test_a_follow_up_carries_exactly_the_arguments_start_run_takes():
    parameters = inspect.signature(engine.start_run).parameters
    assert [f.name for f in fields(FollowUp)] == list(parameters)


def test_flows_never_imports_the_engine():
    tree = ast.parse(Path(flows.__file__).read_text())
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    names = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not any("engine" in module for module in imported), imported
    assert "engine" not in names
