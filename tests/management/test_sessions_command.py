"""manage.py sessions (9.6 §6.2): list, tail (following a live session), archive, delete,
export (read back identically by import_openclaw) and cleanup (a dry run unless --enforce)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Run, Session
from sessions_app.storage import cold_storage
from tests.conftest import add_messages, assistant, make_session, tool_result, user
from tests.runs.helpers import completed_spawn

DAY_MS = 86_400_000
NOT_FOUND = "Session not found. Run openclaw sessions list --json to choose a valid key."


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("sessions", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_json(*args: str) -> dict:
    return json.loads(run(*args, "--json")[0])


@pytest.fixture
def three(agents):
    main = make_session("agent:main:main", label="front desk")
    add_messages(main, user("hello"), assistant("hi there"))
    dm = make_session("agent:main:discord:dm:ann", displayName="Ann", chatType="direct")
    add_messages(dm, user("password=hunter2hunter2 please"), tool_result("done"))
    other = make_session("agent:other:main")
    return main, dm, other


def test_list_in_text_and_json(three):
    text, _ = run("list")
    assert "agent:main:main  2 messages" in text and "3 of 3 sessions" in text
    data = run_json("list", "--agent", "main", "--limit", "1")
    assert data["count"] == 1 and data["totalCount"] == 2 and data["hasMore"] is True
    assert data["limitApplied"] == 1 and data["allAgents"] is False
    assert {"key", "sessionId", "messages", "archived", "cold"} <= set(data["sessions"][0])
    assert run_json("list", "--limit", "all")["count"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "--limit", "0"), '--limit must be a positive integer or "all"'),
        (("list", "--limit", "many"), '--limit must be a positive integer or "all"'),
        (("list", "--active", "0"), "--active must be a positive number of minutes"),
        (("tail", "agent:main:nope", "--no-follow"), NOT_FOUND),
        (("tail", "agent:main:main", "--no-follow", "--tail", "-1"), "--tail must be"),
        (("delete", "agent:main:discord:dm:ann"), "delete needs --yes"),
        (("cleanup", "--enforce", "--dry-run"), "exclude each other"),
    ],
)
def test_bad_arguments_are_clear_errors(three, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(*args)


def test_tail_prints_redacted_lines(three):
    text, _ = run("tail", "agent:main:discord:dm:ann", "--no-follow")
    lines = text.splitlines()
    assert lines[0].startswith("#1 ") and "user: password=" in lines[0]
    assert "hunter2hunter2" not in text
    assert lines[1].endswith("toolResult: exec: ok")
    assert run("tail", "main", "--no-follow", "--tail", "1")[0].count("\n") == 1


def test_tail_prints_an_internal_row_as_its_summary(agent_main):
    """Issue 29.4: a real completion turn is two short lines, not the ~25-line prompt."""
    make_session("main", lastChannel="webchat")
    completed_spawn(agent_main, label="papers")
    lines = run("tail", "main", "--no-follow")[0].splitlines()
    assert lines[0].startswith("#1 ")
    assert lines[0].endswith(" user: [internal] Sub-agent papers finished: success")
    assert lines[1].endswith(" assistant: [internal] Replied NO_REPLY (nothing to send)")
    assert " user: Status: success Result: Found 3 papers." in lines[2]
    assert "background task" not in "\n".join(lines)


def test_archive_and_delete_report_each_key(three):
    main, dm, other = three
    data = run_json("archive", dm.key, "agent:main:discord:dm:ann")
    assert data["ok"] and data["operation"] == "archive"
    assert [r["status"] for r in data["results"]] == ["archived", "unchanged"]
    dm.refresh_from_db()
    assert dm.archived and dm.archive_reason == "manual"
    bo = make_session("agent:other:discord:dm:bo")
    with pytest.raises(CommandError, match="archive: 2 failed"):
        run("archive", "agent:main:main", "agent:main:ghost", bo.key)
    assert Session.objects.get(pk=bo.pk).archived  # the failures did not stop the others
    data = json.loads(_failed_json("archive", "agent:main:main", "agent:main:ghost"))
    assert data["results"] == [
        {
            "key": "agent:main:main",
            "ok": False,
            "status": "refused",
            "error": "Cannot archive an agent's main session.",
        },
        {"key": "agent:main:ghost", "ok": False, "status": "not_found", "error": NOT_FOUND},
    ]
    dry = run_json("delete", dm.key, "--dry-run")
    assert dry["dryRun"] and dry["results"][0]["status"] == "would-delete"
    assert Session.objects.filter(pk=dm.pk).exists()
    assert run_json("delete", dm.key, "--yes")["results"][0]["status"] == "deleted"
    assert not Session.objects.filter(pk=dm.pk).exists()


def _failed_json(*args: str) -> str:
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("sessions", *args, "--json", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_delete_refuses_main_and_busy_sessions(three):
    main, dm, _ = three
    Run.objects.create(session=dm, status=Run.RUNNING)
    data = json.loads(_failed_json("delete", main.key, dm.key, "--yes"))
    assert [r["error"] for r in data["results"]] == [
        "Cannot delete the main session (agent:main:main).",
        f"Session {dm.key} has a run in progress. Abort it first, then delete it.",
    ]
    assert Session.objects.count() == 3


def test_export_then_import_reads_back_identically(three, tmp_path, settings):
    """export → delete everything → import_openclaw → export: the same sessions.json and the
    same transcript lines (the header's timestamp is the row's creation time, which an import
    does not carry)."""
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    main, dm, other = three
    child = make_session(
        "agent:main:subagent:x1",
        spawnedBy="agent:main:main",
        spawnDepth=1,
        label="worker",
        sendPolicy="deny",
        compactionCount=3,
        origin={"provider": "discord"},
    )
    add_messages(
        child,
        {"role": "user", "content": "ünï", "provenance": {"kind": "inter_session"}},
        assistant("x", usage={"input": 3, "output": 4}, stopReason="stop"),
        {"role": "assistant", "content": None, "custom": [1, 2.5, None]},
    )
    Session.objects.filter(pk=dm.pk).update(updated_at=int(time.time() * 1000) - 40 * DAY_MS)
    assert cold_storage.freeze(dm.pk)  # a cold transcript is exported from its file
    first, second = tmp_path / "one", tmp_path / "two"
    out, err = run("export", str(first))
    assert "exported 4 sessions (7 messages) of 2 agents" in out
    assert "export: [####################] 4/4 (100%)" in err

    same = StringIO()  # into the same install: nothing to change
    call_command("import_openclaw", str(first), stdout=same, stderr=StringIO())
    assert "4 sessions (0 new, 0 updated), 0 messages added" in same.getvalue()
    Session.objects.all().delete()
    call_command("import_openclaw", str(first), stdout=StringIO(), stderr=StringIO())
    run("export", str(second))
    assert _tree(first) == _tree(second)
    store = json.loads((first / "agents/main/sessions/sessions.json").read_text())
    assert store["agent:main:subagent:x1"]["compactionCount"] == 3
    assert store["agent:main:subagent:x1"]["spawnedBy"] == "agent:main:main"
    assert (first / "agents/other/sessions/sessions.json").exists()


def _tree(root: Path) -> dict[str, list[str]]:
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            lines = path.read_text().splitlines()
            if path.suffix == ".jsonl":
                header = json.loads(lines[0])
                header.pop("timestamp")
                lines[0] = json.dumps(header)
            files[str(path.relative_to(root))] = lines
    return files


def test_cleanup_is_a_dry_run_unless_enforced(three):
    main, dm, other = three
    Session.objects.filter(pk__in=[dm.pk, other.pk]).update(
        updated_at=int(time.time() * 1000) - 40 * DAY_MS
    )
    text, _ = run("cleanup")
    assert f"archive-age  {dm.key}" in text and "dry run: nothing changed" in text
    assert not Session.objects.archived().exists()
    report = run_json("cleanup", "--enforce")
    # `other` is agent:other:main, an agent's main session: retention never archives one.
    assert report["dryRun"] is False and report["archived"] == 1
    assert set(Session.objects.archived().values_list("key", flat=True)) == {dm.key}


@pytest.mark.django_db(transaction=True)
def test_tail_follows_a_live_session(agents):
    """`sessions tail KEY` in its own process prints a message appended after it started."""
    from tests.servers import ROOT, child_env

    session = make_session("agent:main:discord:dm:live")
    add_messages(session, user("before"))
    process = subprocess.Popen(
        [sys.executable, "manage.py", "sessions", "tail", session.key, "--timeout", "20"],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert "user: before" in process.stdout.readline()
        add_messages(session, assistant("after, live"))
        line = process.stdout.readline()
        assert line.startswith("#2 ") and "assistant: after, live" in line
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
