"""python manage.py import_openclaw <state dir> (api.md §5, reference §8)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Agent, Message, Session
from tests.conftest import assistant, set_config, tool_result, user

MAIN_ID = "11111111-1111-4111-8111-111111111111"
CRON_ID = "22222222-2222-4222-8222-222222222222"
GROUP_ID = "33333333-3333-4333-8333-333333333333"
HOOK_ID = "44444444-4444-4444-8444-444444444444"
SUB_ID = "55555555-5555-4555-8555-555555555555"
GLOBAL_ID = "66666666-6666-4666-8666-666666666666"
HOOK_UUID = "0b9e7f1a-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
SUB_UUID = "5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"
T0 = 1_767_607_200_000  # 2026-01-05T10:00:00Z


# --- building a state dir -------------------------------------------------------------------


def sessions_dir(root: Path, agent_id: str) -> Path:
    directory = root / "agents" / agent_id / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def write_store(root: Path, agent_id: str, entries) -> Path:
    path = sessions_dir(root, agent_id) / "sessions.json"
    path.write_text(json.dumps(entries, indent=2))
    return path


def header(session_id: str) -> dict:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-05T10:00:00.000Z",
        "cwd": "/home/me",
    }


def entry_line(message: dict, n: int = 1) -> dict:
    return {
        "type": "message",
        "id": f"e{n}",
        "parentId": f"e{n - 1}" if n > 1 else None,
        "timestamp": f"2026-01-05T10:00:{n:02d}.000Z",
        "message": message,
    }


def write_transcript(directory: Path, name: str, *lines) -> Path:
    """Lines are dicts (written as JSON) or raw text (written as it is)."""
    path = directory / name
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def append_lines(path: Path, *lines) -> None:
    with path.open("a") as f:
        for ln in lines:
            f.write((ln if isinstance(ln, str) else json.dumps(ln)) + "\n")


def run_import(state_dir) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_openclaw", str(state_dir), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def transcript(key: str) -> list[dict]:
    return [m.to_transcript() for m in Message.objects.filter(session__key=key).order_by("seq")]


def seqs(key: str) -> list[int]:
    return list(
        Message.objects.filter(session__key=key).order_by("seq").values_list("seq", flat=True)
    )


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-5",
        "stopReason": "toolUse",
        "timestamp": T0 + 2000,
    }


def openclaw_state(root: Path) -> Path:
    """Two agent dirs: `main` (canonical, bare and reserved keys) and `ops` (new to the database),
    whose store also holds a sub-agent session of `research`."""
    main = sessions_dir(root, "main")
    write_store(
        root,
        "main",
        {
            "agent:main:main": {
                "sessionId": MAIN_ID,
                "updatedAt": T0 + 60_000,
                "chatType": "direct",
                "lastChannel": "telegram",
                "skillsSnapshot": {"skills": []},
                "someFutureField": 1,
            },
            "cron:nightly": {"sessionId": CRON_ID, "updatedAt": T0 + 120_000, "label": "Nightly"},
            "discord:group:dev": {
                "sessionId": GROUP_ID,
                "updatedAt": T0 + 180_000,
                "chatType": "group",
                "displayName": "discord:#dev",
                "someFutureField": 2,
            },
            "global": {"sessionId": GLOBAL_ID, "updatedAt": T0},
        },
    )
    write_transcript(
        main,
        f"{MAIN_ID}.jsonl",
        header(MAIN_ID),
        entry_line(user("what is in /tmp?", timestamp=T0 + 1000), 1),
        entry_line(tool_call("call_1", "exec", {"command": "ls /tmp"}), 2),
        entry_line(
            {**tool_result("a.txt", call_id="call_1"), "isError": False, "details": {"exit": 0}},
            3,
        ),
        {"type": "custom", "id": "c1", "customType": "memory", "data": {"x": 1}},
        entry_line(
            {
                **assistant("Just a.txt"),
                "api": "openai-completions",
                "provider": "openai",
                "model": "gpt-5",
                "usage": {"input": 10, "output": 3, "totalTokens": 13},
                "stopReason": "stop",
                "futureField": {"kept": True},
            },
            4,
        ),
    )
    write_transcript(
        main,
        f"{CRON_ID}.jsonl",
        header(CRON_ID),
        entry_line(user("[cron] nightly report", timestamp=T0 + 5000), 1),
    )
    write_transcript(
        main,
        f"{GROUP_ID}.jsonl",
        header(GROUP_ID),
        entry_line(user("hi all", timestamp=T0 + 7000), 1),
        entry_line(assistant("hello", timestamp=T0 + 8000), 2),
    )
    ops = sessions_dir(root, "ops")
    write_store(
        root,
        "ops",
        {
            f"hook:{HOOK_UUID}": {"sessionId": HOOK_ID, "updatedAt": T0 + 240_000},
            f"agent:research:subagent:{SUB_UUID}": {
                "sessionId": SUB_ID,
                "updatedAt": T0 + 300_000,
                "spawnedBy": "agent:main:main",
                "spawnDepth": 1,
                "label": "dig",
            },
        },
    )
    write_transcript(ops, f"{HOOK_ID}.jsonl", header(HOOK_ID), entry_line(user("webhook"), 7))
    write_transcript(
        ops,
        f"{SUB_ID}.jsonl",
        header(SUB_ID),
        entry_line(user("dig into it", timestamp=T0 + 9000), 1),
        entry_line(assistant("found it", timestamp=T0 + 9500), 2),
    )
    return root


# --- tests ----------------------------------------------------------------------------------


def test_imports_sessions_of_several_agents_with_their_transcripts(agents, tmp_path):
    out, err = run_import(openclaw_state(tmp_path))

    assert out.strip() == (
        "import_openclaw: 3 agents (1 new), 6 sessions (6 new, 0 updated), "
        "10 messages added, 0 lines skipped, 0 sessions failed"
    )
    rows = {s.key: s for s in Session.objects.all()}
    assert set(rows) == {
        "agent:main:main",
        "agent:main:cron:nightly",
        "agent:main:discord:group:dev",
        "global",
        f"agent:ops:hook:{HOOK_UUID}",
        f"agent:research:subagent:{SUB_UUID}",
    }
    assert {k: s.agent_id for k, s in rows.items()} == {
        "agent:main:main": "main",
        "agent:main:cron:nightly": "main",
        "agent:main:discord:group:dev": "main",
        "global": "main",
        f"agent:ops:hook:{HOOK_UUID}": "ops",
        f"agent:research:subagent:{SUB_UUID}": "research",
    }
    assert {k: s.kind for k, s in rows.items()} == {
        "agent:main:main": "main",
        "agent:main:cron:nightly": "cron",
        "agent:main:discord:group:dev": "group",
        "global": "other",
        f"agent:ops:hook:{HOOK_UUID}": "hook",
        f"agent:research:subagent:{SUB_UUID}": "other",
    }
    assert str(rows["agent:main:main"].session_id) == MAIN_ID
    assert str(rows[f"agent:research:subagent:{SUB_UUID}"].session_id) == SUB_ID
    assert rows["agent:main:main"].updated_at == T0 + 60_000
    assert rows["agent:main:discord:group:dev"].updated_at == T0 + 180_000
    assert rows["agent:main:main"].extra == {"skillsSnapshot": {"skills": []}}
    assert rows["agent:main:cron:nightly"].label == "Nightly"
    sub = rows[f"agent:research:subagent:{SUB_UUID}"]
    assert (sub.spawned_by, sub.spawn_depth, sub.label) == ("agent:main:main", 1, "dig")

    # The new agent gets default settings; existing agents keep theirs.
    assert Agent.objects.get(pk="ops").name == "ops"
    assert Agent.objects.get(pk="main").name == "Main"
    assert Agent.objects.get(pk="main").allow_agents == ["research"]

    # The unknown entry field is reported once, and dropped.
    assert err.count("someFutureField") == 1
    assert "warning: " in err and "sessions.json: agent:main:main: unknown session field" in err

    assert seqs("agent:main:main") == [1, 2, 3, 4]
    main = transcript("agent:main:main")
    assert [m["role"] for m in main] == ["user", "assistant", "toolResult", "assistant"]
    assert main[0] == {"role": "user", "content": "what is in /tmp?", "timestamp": T0 + 1000}
    assert main[2] == {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "exec",
        "content": [{"type": "text", "text": "a.txt"}],
        "isError": False,
        "details": {"exit": 0},
        # no timestamp on the message: the line's ISO timestamp (10:00:03Z) is used
        "timestamp": T0 + 3000,
    }
    assert main[3]["futureField"] == {"kept": True}
    assert main[3]["stopReason"] == "stop"
    assert main[3]["usage"] == {"input": 10, "output": 3, "totalTokens": 13}
    assert main[1]["content"][0]["arguments"] == {"command": "ls /tmp"}
    assert rows["agent:main:main"].last_seq == 4
    assert seqs(f"agent:research:subagent:{SUB_UUID}") == [1, 2]
    assert transcript(f"agent:ops:hook:{HOOK_UUID}")[0]["timestamp"] == T0 + 7000
    assert transcript("global") == []


def test_second_run_adds_nothing(agents, tmp_path):
    state = openclaw_state(tmp_path)
    run_import(state)
    before = {s.key: (s.updated_at, s.last_seq) for s in Session.objects.all()}

    out, _ = run_import(state)

    assert out.strip() == (
        "import_openclaw: 3 agents (0 new), 6 sessions (0 new, 0 updated), "
        "0 messages added, 0 lines skipped, 0 sessions failed"
    )
    assert {s.key: (s.updated_at, s.last_seq) for s in Session.objects.all()} == before
    assert Message.objects.count() == 10


def test_appended_lines_are_imported_as_the_tail_only(agents, tmp_path):
    state = openclaw_state(tmp_path)
    run_import(state)
    path = sessions_dir(state, "main") / f"{MAIN_ID}.jsonl"
    append_lines(
        path,
        entry_line(user("and /var?", timestamp=T0 + 70_000), 5),
        entry_line(assistant("lots", timestamp=T0 + 71_000), 6),
    )
    store_path = state / "agents" / "main" / "sessions" / "sessions.json"
    entries = json.loads(store_path.read_text())
    entries["agent:main:main"]["updatedAt"] = T0 + 71_000
    store_path.write_text(json.dumps(entries))

    out, _ = run_import(state)

    assert "6 sessions (0 new, 1 updated), 2 messages added" in out
    assert seqs("agent:main:main") == [1, 2, 3, 4, 5, 6]
    main = transcript("agent:main:main")
    assert [m["content"] for m in main[-2:]] == ["and /var?", [{"type": "text", "text": "lots"}]]
    assert [m["content"] for m in main].count("what is in /tmp?") == 1
    assert Session.objects.get(key="agent:main:main").updated_at == T0 + 71_000


def test_bad_lines_and_invalid_messages_are_reported_and_skipped(agents, tmp_path):
    directory = sessions_dir(tmp_path, "main")
    write_store(tmp_path, "main", {"agent:main:main": {"sessionId": MAIN_ID, "updatedAt": T0}})
    path = write_transcript(
        directory,
        f"{MAIN_ID}.jsonl",
        header(MAIN_ID),
        entry_line(user("first", timestamp=T0), 1),
        '{"type": "message", "message": {"role": "user", "content": "cut off',
        "",
        entry_line({"content": "no role"}, 3),
        entry_line({"role": "robot", "content": "hi"}, 4),
        entry_line({"role": "user", "content": 42}, 5),
        entry_line({"role": "user", "content": "negative time", "timestamp": -1}, 6),
        '{"type": "message", "message": {"role": "user", "content": "x", "timestamp": NaN}}',
        entry_line(user("nul\u0000byte"), 8),
        '{"type": "message", "message": {"role": "user", "content": "\\ud800"}}',
        "   ",
        entry_line(user("last", timestamp=T0 + 1), 9),
    )

    out, err = run_import(tmp_path)

    assert "2 messages added, 8 lines skipped, 0 sessions failed" in out
    assert [m["content"] for m in transcript("agent:main:main")] == ["first", "last"]
    assert seqs("agent:main:main") == [1, 2]
    warnings = [ln for ln in err.splitlines() if ln.startswith(f"warning: {path}:")]
    assert [w.split(":", 3)[2] for w in warnings] == ["3", "5", "6", "7", "8", "9", "10", "11"]
    assert f"warning: {path}:3: not valid JSON" in err
    assert f"warning: {path}:5: message has no role" in err
    assert f"warning: {path}:6: message.role must be one of" in err
    assert f"warning: {path}:7: message.content must be a string or an array" in err
    assert f"warning: {path}:8: message.timestamp must be a non-negative integer" in err
    assert f"warning: {path}:10: message content must not contain NUL characters" in err
    assert f"warning: {path}:11: message content is not valid Unicode (unpaired surrogate)" in err

    # A re-run reports the same lines again but adds nothing.
    out, _ = run_import(tmp_path)
    assert "0 messages added, 8 lines skipped" in out


def test_session_file_outside_the_sessions_dir_is_refused(agents, tmp_path):
    state = tmp_path / "state"
    directory = sessions_dir(state, "main")
    secret = write_transcript(tmp_path, "secret.jsonl", entry_line(user("secret"), 1))
    ids = [f"7777777{n}-7777-4777-8777-777777777777" for n in range(5)]
    write_store(
        state,
        "main",
        {
            "relative-escape": {"sessionId": ids[0], "sessionFile": "../../../../secret.jsonl"},
            "absolute-escape": {"sessionId": ids[1], "sessionFile": str(secret)},
            "relative-ok": {"sessionId": ids[2], "sessionFile": "renamed.jsonl"},
            "absolute-ok": {"sessionId": ids[3], "sessionFile": str(directory / "abs.jsonl")},
            # A state dir copied from another machine: same agent, same file name.
            "moved-ok": {
                "sessionId": ids[4],
                "sessionFile": f"/home/someone/.openclaw/agents/main/sessions/{ids[4]}.jsonl",
            },
        },
    )
    write_transcript(directory, "renamed.jsonl", entry_line(user("renamed"), 1))
    write_transcript(directory, "abs.jsonl", entry_line(user("absolute"), 1))
    write_transcript(directory, f"{ids[4]}.jsonl", entry_line(user("moved"), 1))

    out, err = run_import(state)

    assert "3 sessions (3 new, 0 updated), 3 messages added, 0 lines skipped" in out
    assert "2 sessions failed" in out
    assert "relative-escape: transcript path '../../../../secret.jsonl' is outside" in err
    assert f"absolute-escape: transcript path '{secret}' is outside" in err
    assert set(Session.objects.values_list("key", flat=True)) == {
        "agent:main:relative-ok",
        "agent:main:absolute-ok",
        "agent:main:moved-ok",
    }
    assert not Message.objects.filter(content="secret").exists()
    assert transcript("agent:main:moved-ok")[0]["content"] == "moved"


def test_session_file_symlink_leading_out_is_refused(agents, tmp_path):
    state = tmp_path / "state"
    directory = sessions_dir(state, "main")
    secret = write_transcript(tmp_path, "secret.jsonl", entry_line(user("secret"), 1))
    (directory / "link.jsonl").symlink_to(secret)
    write_store(state, "main", {"linked": {"sessionId": MAIN_ID, "sessionFile": "link.jsonl"}})

    out, err = run_import(state)

    assert "1 sessions failed" in out
    assert "linked: transcript path 'link.jsonl' is outside" in err
    assert not Session.objects.exists()


def test_invalid_session_is_reported_and_rolled_back_while_others_import(agents, tmp_path):
    directory = sessions_dir(tmp_path, "main")
    (directory / "a-directory.jsonl").mkdir()
    write_store(
        tmp_path,
        "main",
        {
            "agent:main:bad-id": {"sessionId": "not a uuid!", "updatedAt": T0},
            "agent:main:bad-field": {"sessionId": CRON_ID, "spawnDepth": "deep"},
            "agent:main:nul": {"sessionId": HOOK_ID, "groupId": "a\u0000b"},
            # Fails after its entry (and its new agent) were written: all of it is rolled back.
            "agent:ghost:unreadable": {"sessionId": GROUP_ID, "sessionFile": "a-directory.jsonl"},
            "agent:main:good": {"sessionId": MAIN_ID, "updatedAt": T0},
        },
    )
    write_transcript(directory, f"{MAIN_ID}.jsonl", header(MAIN_ID), entry_line(user("ok"), 1))

    out, err = run_import(tmp_path)

    assert out.strip() == (
        "import_openclaw: 1 agents (0 new), 1 sessions (1 new, 0 updated), "
        "1 messages added, 0 lines skipped, 4 sessions failed"
    )
    assert "agent:main:bad-id: sessionId must be a UUID or 1-128 letters" in err
    assert "agent:main:bad-field: spawnDepth must be a non-negative integer" in err
    assert "agent:main:nul: the entry" in err
    assert "agent:ghost:unreadable: IsADirectoryError" in err
    assert list(Session.objects.values_list("key", flat=True)) == ["agent:main:good"]
    assert not Agent.objects.filter(pk="ghost").exists()
    assert Message.objects.count() == 1


def test_store_that_is_not_an_object_is_reported_and_others_import(agents, tmp_path):
    write_store(tmp_path, "broken", ["not", "an", "object"])
    (sessions_dir(tmp_path, "garbled") / "sessions.json").write_text("{nope")
    write_store(tmp_path, "main", {"main": {"sessionId": MAIN_ID, "updatedAt": T0}})

    out, err = run_import(tmp_path)

    assert "1 agents (0 new), 1 sessions (1 new, 0 updated)" in out
    assert "broken/sessions/sessions.json: the session store is not a JSON object" in err
    assert "garbled/sessions/sessions.json: cannot read the session store" in err
    assert Session.objects.filter(key="agent:main:main").exists()
    assert not Agent.objects.filter(pk__in=["broken", "garbled"]).exists()


def test_every_store_failing_is_a_command_error(db, tmp_path):
    write_store(tmp_path, "main", "just a string")

    with pytest.raises(CommandError, match="no session store could be read"):
        run_import(tmp_path)


def test_missing_state_dir_is_a_command_error(db, tmp_path):
    with pytest.raises(CommandError, match="state dir not found"):
        run_import(tmp_path / "nowhere")


def test_state_dir_without_session_stores_is_a_command_error(db, tmp_path):
    (tmp_path / "agents" / "main").mkdir(parents=True)

    with pytest.raises(CommandError, match=r"no agents/\*/sessions/sessions.json"):
        run_import(tmp_path)


def test_imported_transcript_is_readable_through_sessions_history(operator, tmp_path):
    set_config(visibility="all", a2a_enabled=True)
    run_import(openclaw_state(tmp_path))

    details = operator.details(
        "sessions_history", {"sessionKey": "agent:main:main", "includeTools": True}
    )

    assert details["sessionKey"] == "agent:main:main"
    assert [m["role"] for m in details["messages"]] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert [m["__openclaw"]["seq"] for m in details["messages"]] == [1, 2, 3, 4]
    assert details["messages"][2]["toolCallId"] == "call_1"

    group = operator.details("sessions_history", {"sessionKey": "discord:group:dev"})
    assert [m["role"] for m in group["messages"]] == ["user", "assistant"]

    sub = operator.details(
        "sessions_history", {"sessionKey": f"agent:research:subagent:{SUB_UUID}"}
    )
    assert [m["role"] for m in sub["messages"]] == ["user", "assistant"]


def test_large_transcript_is_streamed_in_batches(agents, tmp_path):
    directory = sessions_dir(tmp_path, "main")
    write_store(tmp_path, "main", {"main": {"sessionId": MAIN_ID, "updatedAt": T0}})
    path = write_transcript(
        directory,
        f"{MAIN_ID}.jsonl",
        header(MAIN_ID),
        *(entry_line(user(f"m{n}", timestamp=T0 + n), 1) for n in range(1, 2301)),
    )
    run_import(tmp_path)
    append_lines(path, *(entry_line(user(f"m{n}", timestamp=T0 + n), 1) for n in range(2301, 3501)))

    out, _ = run_import(tmp_path)

    assert "1200 messages added" in out
    rows = list(Message.objects.order_by("seq").values_list("seq", "content"))
    assert rows == [(n, f"m{n}") for n in range(1, 3501)]
