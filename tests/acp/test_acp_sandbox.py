"""A harness cannot read the worker's secrets (issue 27 item 6; sessions_app/acp/sandbox.py).

A probe harness (sandbox_probe.py) tries what a prompt-injected coding agent would: the worker's
environment (/proc/<its parent>/environ), var/secret_key, the database file, and another
session's working directory. Unsandboxed (OPENCLAW_ACP_SANDBOX=none) it gets them all, which
shows the probe works; run as a user of its own it gets none. The last test does it against a
real worker process started with SECRET_KEY and DATABASE_URL in its environment."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from sessions_app.acp import sandbox
from sessions_app.acp.harnesses import HarnessError, parse_harness
from sessions_app.models import ApiKey, Message, Run, Session
from tests.acp.harness_fixtures import NEEDS_SANDBOX, echo, probe, register
from tests.conftest import make_agent, make_session
from tests.runs.helpers import drain
from tests.servers import start_server, start_worker, wait_until

pytestmark = pytest.mark.usefixtures("no_heartbeat")

_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="a harness gets a user of its own only from a worker run as root"
)


def AS_ROOT(test):  # noqa: N802 (a mark)
    return _ROOT(NEEDS_SANDBOX(test))


SQLITE_HEADER = "SQLite format 3"
# These two try the SQLite file and var/secret_key, which a server database and SECRET_KEY
# replace; the real worker's test below tries a worker with SECRET_KEY and DATABASE_URL.
ON_SQLITE = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="tries the SQLite database file and var/secret_key"
)


@pytest.fixture
def shared_root():
    """A harness root every user could walk into (pytest's own tmp dirs are 0700, which would
    hide other sessions' directories whatever the sandbox did)."""
    root = Path(tempfile.mkdtemp(prefix="acp-sandbox-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def targets(other_cwd: Path, *, pids: list[int], needles: list[str]) -> str:
    db = Path(str(connection.settings_dict["NAME"]))
    files = [str(Path(settings.VAR_DIR) / "secret_key"), str(db), str(other_cwd / "notes.txt")]
    return json.dumps({"files": files, "dirs": [str(other_cwd)], "pids": pids, "needles": needles})


def the_other_session(api, root: Path) -> tuple[Path, str]:
    """Session B, an echo child working in `b`, which then holds a file of its own."""
    result = api.details("sessions_spawn", {"task": "hello", "runtime": "acp", "cwd": "b"})
    assert result["status"] == "accepted", result
    drain()
    assert Run.objects.get(pk=result["runId"]).status == Run.OK
    secret = f"other-session-notes-{secrets.token_hex(8)}"
    (root / "b" / "notes.txt").write_text(secret)
    return root / "b", secret


def probe_turn(api, task: str) -> tuple[Run, dict]:
    result = api.details(
        "sessions_spawn", {"task": task, "runtime": "acp", "agentId": "probe", "cwd": "a"}
    )
    assert result["status"] == "accepted", result
    drain()
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.OK, run.error
    return run, json.loads(run.reply)


def setup_world(root: Path) -> None:
    (root / "a").mkdir()
    (root / "b").mkdir()
    register(echo=echo(root), probe=probe(root), default="echo")


@AS_ROOT
@ON_SQLITE
def test_unsandboxed_the_probe_reads_every_secret(agent_main, shared_root, settings):
    """The control: as the worker's own user the probe gets all it tries, so the next test's
    refusals are the sandbox's doing, not the probe's failing."""
    settings.OPENCLAW_ACP_SANDBOX = "none"
    make_session("main")
    setup_world(shared_root)
    other, notes = the_other_session(agent_main, shared_root)
    key = Path(settings.VAR_DIR, "secret_key").read_text().strip()
    _, found = probe_turn(
        agent_main, targets(other, pids=[os.getpid()], needles=[key, notes, SQLITE_HEADER])
    )
    assert found["uid"] == 0 and found["parentEnviron"]["bytes"] > 0
    assert found["environs"][str(os.getpid())]["bytes"] > 0
    secret_key, db, notes_file = found["files"].values()
    assert secret_key["secrets"] == [key]
    assert db["secrets"] == [SQLITE_HEADER]
    assert notes_file["secrets"] == [notes]
    assert found["dirs"][str(other)]["listed"] == ["notes.txt"]


@AS_ROOT
@ON_SQLITE
def test_as_a_user_of_its_own_the_probe_reaches_nothing_of_the_worker(agent_main, shared_root):
    make_session("main")
    setup_world(shared_root)
    other, notes = the_other_session(agent_main, shared_root)
    key = Path(settings.VAR_DIR, "secret_key").read_text().strip()
    run, found = probe_turn(
        agent_main, targets(other, pids=[os.getpid()], needles=[key, notes, SQLITE_HEADER])
    )
    denied = {"error": "PermissionError"}
    assert found["parentEnviron"] == denied
    assert found["environs"] == {str(os.getpid()): denied}
    assert list(found["files"].values()) == [denied, denied, denied]
    assert found["dirs"] == {str(other): denied}
    # It works in its own directory, as a user of that directory, not the other session's.
    assert found["wroteOwnCwd"] is True and found["cwd"] == str(shared_root / "a")
    assert found["uid"] in sandbox.uid_range()
    assert (shared_root / "a").stat().st_uid == found["uid"]
    assert (shared_root / "b").stat().st_uid not in (0, found["uid"])
    assert (shared_root / "b").stat().st_mode & 0o777 == 0o700
    started = Message.objects.get(session=run.session, extra__acp__event="started")
    assert started.extra["acp"]["uid"] == found["uid"]
    assert f"uid {found['uid']}, new process" in started.content[0]["text"]


@AS_ROOT
def test_a_directory_keeps_its_user_and_a_new_one_gets_a_new_user(settings, shared_root):
    harness = parse_harness("x", echo(shared_root))
    (shared_root / "one").mkdir()
    (shared_root / "one" / "kept.txt").write_text("operator's file")
    (shared_root / "two").mkdir()
    first = sandbox.run_as_for(harness, str(shared_root / "one")).uid
    again = sandbox.run_as_for(harness, str(shared_root / "one")).uid
    second = sandbox.run_as_for(harness, str(shared_root / "two")).uid
    assert first == again and first != second
    # The first time, the directory is given to its user with what is in it.
    assert (shared_root / "one" / "kept.txt").stat().st_uid == first
    # Its parent, used as a cwd later, does not take its subdirectories from their users.
    parent = sandbox.run_as_for(harness, str(shared_root)).uid
    assert (shared_root / "one").stat().st_uid == first
    # A directory removed and made again is a new directory: a new user, never an old one.
    shutil.rmtree(shared_root / "two")
    (shared_root / "two").mkdir()
    sandbox.run_as_for(harness, str(shared_root / "one"))  # forgets the removed one
    assert sandbox.run_as_for(harness, str(shared_root / "two")).uid > max(first, second, parent)
    assert Path(settings.VAR_DIR).stat().st_mode & 0o077 == 0


@AS_ROOT
def test_a_command_other_users_cannot_reach_is_refused_with_the_reason(
    agent_main, shared_root, tmp_path, settings
):
    """pytest's tmp dirs are 0700: a harness user could not start a program kept there."""
    settings.OPENCLAW_ACP_SANDBOX = "uid"  # (auto runs it unsandboxed on the embedded demo)
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    settings.OPENCLAW_ACP_COMMANDS = [*settings.OPENCLAW_ACP_COMMANDS, (str(script),)]
    make_session("main")
    register(echo={"command": str(script), "cwdRoot": str(shared_root)})
    result = agent_main.details("sessions_spawn", {"task": "x", "runtime": "acp"})
    drain()
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.ERROR
    assert run.error.startswith(
        'ACP harness "echo" was not started: it runs as a user of its own, which cannot run its '
        f"command {script}"
    )
    # (the first directory on the way that others cannot search: pytest's, per user)
    closed = next(d for d in reversed(script.parents) if not d.stat().st_mode & 0o001)
    assert f"{closed} is not open to other users" in run.error


@AS_ROOT
def test_on_the_embedded_demo_an_unreachable_command_runs_as_the_worker_and_says_so(
    agent_main, shared_root, tmp_path, settings
):
    """`make run` in a root shell: its Python is under /root, which no harness user can enter."""
    script = tmp_path / "agent.py"
    script.write_text((Path(__file__).parent / "misbehaving_agent.py").read_text())
    settings.OPENCLAW_ACP_COMMANDS = [*settings.OPENCLAW_ACP_COMMANDS, (sys.executable,)]
    make_session("main")
    register(
        env={"command": sys.executable, "args": [str(script), "env"], "cwdRoot": str(shared_root)},
        default="env",
    )
    result = agent_main.details("sessions_spawn", {"task": "x", "runtime": "acp"})
    drain()
    run = Run.objects.get(pk=result["runId"])
    if connection.vendor != "sqlite":
        assert run.status == Run.ERROR and "is not open to other users" in run.error
        return
    assert run.status == Run.OK, run.error
    started = Message.objects.get(session=run.session, extra__acp__event="started")
    assert "uid" not in started.extra["acp"]
    assert "runs as the worker's own user" in json.dumps(started.content)


def test_a_worker_that_is_not_root_refuses_unless_told(settings, shared_root, monkeypatch):
    harness = parse_harness("x", echo(shared_root))
    monkeypatch.setattr(sandbox, "_worker_uid", lambda: 1000)
    settings.OPENCLAW_ACP_SANDBOX = "uid"
    with pytest.raises(HarnessError, match="the worker runs as uid 1000, not root"):
        sandbox.run_as_for(harness, str(shared_root))
    # auto: on the embedded SQLite default (a developer's demo) it runs, and says so...
    settings.OPENCLAW_ACP_SANDBOX = "auto"
    if connection.vendor == "sqlite":
        run_as = sandbox.run_as_for(harness, str(shared_root))
        assert run_as.uid is None and "runs as the worker's own user" in run_as.note
    # ...in production mode it refuses.
    monkeypatch.setattr(sandbox, "_production", lambda: True)
    with pytest.raises(HarnessError, match="OPENCLAW_ACP_SANDBOX=none to trust"):
        sandbox.run_as_for(harness, str(shared_root))
    settings.OPENCLAW_ACP_SANDBOX = "none"
    assert sandbox.run_as_for(harness, str(shared_root)).uid is None
    settings.OPENCLAW_ACP_SANDBOX = "bubble"
    with pytest.raises(HarnessError, match="OPENCLAW_ACP_SANDBOX must be one of auto, uid, none"):
        sandbox.run_as_for(harness, str(shared_root))


# --- against a real worker process ---------------------------------------------------------


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        server = start_server()
    yield server
    server.stop()


@AS_ROOT
@pytest.mark.django_db(transaction=True)
def test_a_harness_of_a_real_worker_finds_no_secret_of_the_workers(server, shared_root):
    """The done-when of issue 27 item 6: the worker's environment has SECRET_KEY, DATABASE_URL
    and a planted secret; the harness reads /proc/<parent>/environ and finds none of them."""
    planted = f"planted-{secrets.token_hex(8)}"
    worker = start_worker(workers=1, env={"OPENCLAW_TEST_WORKER_SECRET": planted})
    try:
        make_agent("main", subagents={"allowAgents": []})
        make_session("main")
        _, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
        setup_world(shared_root)
        key = Path(settings.VAR_DIR, "secret_key").read_text().strip()
        needles = [planted, settings.SECRET_KEY, key, str(connection.settings_dict["NAME"])]
        task = json.dumps(
            {
                "files": [str(Path(settings.VAR_DIR) / "secret_key")],
                "pids": [worker.process.pid],
                "needles": needles,
            }
        )
        response = server.request(
            "POST",
            "/tools/invoke",
            body={
                "tool": "sessions_spawn",
                "args": {"task": task, "runtime": "acp", "agentId": "probe", "cwd": "a"},
            },
            token=token,
        )
        accepted = response.json()["result"]["details"]
        assert accepted["status"] == "accepted", accepted
        run = wait_until(
            lambda: (
                Run.objects.filter(pk=accepted["runId"])
                .exclude(status__in=[Run.QUEUED, Run.RUNNING])
                .first()
            ),
            timeout=60,
        )
        assert run.status == Run.OK, run.error
        found = json.loads(run.reply)
    finally:
        worker.stop()
    denied = {"error": "PermissionError"}
    # Its parent is the worker process that ran the turn (the cluster's own pid is the other).
    assert found["ppid"] != os.getpid()
    assert found["parentEnviron"] == denied
    assert found["environs"] == {str(worker.process.pid): denied}
    assert found["files"] == {str(Path(settings.VAR_DIR) / "secret_key"): denied}
    assert not any(needle in run.reply for needle in needles)
    assert Session.objects.get(key=accepted["childSessionKey"]).agent_id == "probe"
