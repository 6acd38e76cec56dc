"""What a harness may ask of the client besides permissions: fs/read_text_file and
fs/write_text_file inside the session's cwd (sessions_app/acp/files.py), terminal/* declined.
First the confinement rules on their own, then through a real harness process and a turn."""

from __future__ import annotations

import json
import os

import pytest

from sessions_app.acp.files import MAX_FILE_BYTES, Refused, WorkingDirectory
from sessions_app.models import Message, Run
from tests.acp.harness_fixtures import NEEDS_SANDBOX, misbehaving, register
from tests.acp.test_acp_turns import texts, transcript
from tests.conftest import make_session
from tests.runs.helpers import drain

pytestmark = pytest.mark.usefixtures("no_heartbeat")


@pytest.fixture
def cwd(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "secret.txt").write_text("the worker's secret\n")
    return work


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(Refused) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def test_reads_and_writes_inside_the_cwd(cwd):
    files = WorkingDirectory(str(cwd))
    assert files.read_text(str(cwd / "notes.txt")) == "one\ntwo\nthree\n"
    assert files.read_text(str(cwd / "notes.txt"), line=2, limit=1) == "two\n"
    assert files.read_text(str(cwd / "notes.txt"), line=2) == "two\nthree\n"
    files.write_text(str(cwd / "deep" / "er" / "out.txt"), "written ✓\n")
    assert (cwd / "deep" / "er" / "out.txt").read_text() == "written ✓\n"
    files.write_text(str(cwd / "notes.txt"), "short")  # replaced, not overwritten in place
    assert (cwd / "notes.txt").read_text() == "short"
    # A symlink inside the cwd that stays inside is followed.
    (cwd / "link.txt").symlink_to(cwd / "notes.txt")
    assert files.read_text(str(cwd / "link.txt")) == "short"


def test_paths_out_of_the_cwd_are_refused(cwd, tmp_path):
    files = WorkingDirectory(str(cwd))
    secret = tmp_path / "secret.txt"
    outside = f"is outside the session's working directory {cwd}"
    assert outside in refused(files.read_text, str(secret))
    assert outside in refused(files.read_text, str(cwd / ".." / "secret.txt"))
    assert outside in refused(files.write_text, str(tmp_path / "new.txt"), "x")
    assert not (tmp_path / "new.txt").exists()
    assert "must be absolute" in refused(files.read_text, "notes.txt")
    assert "non-empty string" in refused(files.read_text, "")
    assert "non-empty string" in refused(files.read_text, str(cwd / "a\x00b"))
    assert "is a directory" in refused(files.read_text, str(cwd))
    # Symlinks out, as the file or as a directory on the way: refused, for reads and writes.
    (cwd / "out.txt").symlink_to(secret)
    (cwd / "up").symlink_to(tmp_path)
    for path in (cwd / "out.txt", cwd / "up" / "secret.txt"):
        assert outside in refused(files.read_text, str(path))
        assert outside in refused(files.write_text, str(path), "overwritten")
    assert secret.read_text() == "the worker's secret\n"


def test_what_is_not_a_plain_text_file_is_refused(cwd, tmp_path):
    files = WorkingDirectory(str(cwd))
    os.mkfifo(cwd / "pipe")  # opening it for reading would block the worker
    assert "not a regular file" in refused(files.read_text, str(cwd / "pipe"))
    assert "not a regular file" in refused(files.write_text, str(cwd / "pipe"), "x")
    os.link(tmp_path / "secret.txt", cwd / "hard.txt")
    assert "other hard links" in refused(files.read_text, str(cwd / "hard.txt"))
    assert "other hard links" in refused(files.write_text, str(cwd / "hard.txt"), "x")
    assert (tmp_path / "secret.txt").read_text() == "the worker's secret\n"
    (cwd / "binary.bin").write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8 text" in refused(files.read_text, str(cwd / "binary.bin"))
    (cwd / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    assert "larger than" in refused(files.read_text, str(cwd / "big.txt"))
    assert "larger than" in refused(
        files.write_text, str(cwd / "b.txt"), "x" * (MAX_FILE_BYTES + 1)
    )
    assert "not valid Unicode" in refused(files.write_text, str(cwd / "s.txt"), "\ud800")
    assert "no such file" in refused(files.read_text, str(cwd / "missing.txt"))


def test_a_cwd_replaced_since_the_turn_began_is_refused(cwd, tmp_path):
    files = WorkingDirectory(str(cwd))
    cwd.rename(tmp_path / "moved")
    cwd.symlink_to(tmp_path)  # the same path now leads to the parent, where the secret is
    assert "outside" in refused(files.read_text, str(cwd / "secret.txt"))
    os.unlink(cwd)
    cwd.mkdir()  # a new directory at the same path: not the one the turn started in
    (cwd / "notes.txt").write_text("new")
    assert "was replaced since the turn began" in refused(files.read_text, str(cwd / "notes.txt"))


# --- through a harness process and a turn ------------------------------------------------------


def test_a_harness_reads_and_writes_in_its_cwd_and_is_refused_elsewhere(agent_main, cwd, tmp_path):
    make_session("main")
    register(echo=misbehaving(cwd, "files"))
    requests = [
        {"read": str(cwd / "notes.txt"), "line": 3},
        {"write": str(cwd / "out.txt"), "content": "from the harness\n"},
        {"read": str(tmp_path / "secret.txt")},
        {"write": str(cwd / ".." / "escaped.txt"), "content": "x"},
        {"terminal": "cat /etc/passwd"},
    ]
    result = agent_main.details("sessions_spawn", {"task": json.dumps(requests), "runtime": "acp"})
    assert result["status"] == "accepted", result
    drain()
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.OK, run.error
    outside = f"is outside the session's working directory {cwd}"
    assert json.loads(run.reply) == [
        {"ok": "three\n"},
        {"ok": "written"},
        {"error": -32602, "message": f"{tmp_path / 'secret.txt'} {outside}"},
        {"error": -32602, "message": f"{cwd / '..' / 'escaped.txt'} {outside}"},
        {
            "error": -32601,
            "message": "terminal/create is not offered by this client "
            "(clientCapabilities.terminal is false)",
        },
    ]
    assert (cwd / "out.txt").read_text() == "from the harness\n"
    assert not (tmp_path / "escaped.txt").exists()
    # Each refusal is in the child's transcript, where whoever reads it sees the attempt.
    notes = [
        texts(m)
        for m in transcript(run.session)
        if m.role == "system" and (m.extra.get("acp") or {}).get("event") == "refused"
    ]
    assert notes == [
        f"Refused fs/read_text_file: {tmp_path / 'secret.txt'} {outside}",
        f"Refused fs/write_text_file: {cwd / '..' / 'escaped.txt'} {outside}",
    ]
    assert Message.objects.filter(session=run.session, role="assistant").count() == 1


# --- with a harness user of its own (sandbox.py) and warm processes (client.py's Pool) -------

_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="a harness gets a user of its own only from a worker run as root"
)


def AS_ROOT(test):  # noqa: N802 (a mark)
    return _ROOT(NEEDS_SANDBOX(test))


def started(session) -> dict:
    row = Message.objects.filter(session=session, extra__acp__event="started").order_by("seq")
    return row.last().extra["acp"]


def turn(api, requests: list[dict], **args) -> Run:
    result = api.details("sessions_spawn", {"task": json.dumps(requests), "runtime": "acp", **args})
    assert result["status"] == "accepted", result
    drain()
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.OK, run.error
    return run


@AS_ROOT
def test_what_the_worker_writes_as_root_is_given_to_the_user_the_harness_runs_as(cwd):
    files = WorkingDirectory(str(cwd), owner=2_000_999_999)
    files.write_text(str(cwd / "new" / "er" / "out.txt"), "x")
    files.write_text(str(cwd / "notes.txt"), "replaced")  # was root's
    for path in (
        cwd / "new",
        cwd / "new" / "er",
        cwd / "new" / "er" / "out.txt",
        cwd / "notes.txt",
    ):
        assert (path.stat().st_uid, path.stat().st_gid) == (2_000_999_999, 2_000_999_999), path


@AS_ROOT
def test_a_sandboxed_harness_can_change_the_files_it_had_the_client_write(agent_main, cwd):
    """The worker serves fs/write_text_file as root; the harness runs as the user of its cwd.
    What the client wrote (and the directories it made) is that user's, so the harness, in its
    next turn in the same warm process, appends to it itself."""
    make_session("main")
    register(echo=misbehaving(cwd, "files"))
    made = cwd / "sub" / "made.txt"
    run = turn(agent_main, [{"write": str(made), "content": "by the client\n"}])
    assert json.loads(run.reply) == [{"ok": "written"}]
    uid = started(run.session)["uid"]
    assert uid is not None and uid != 0
    assert made.stat().st_uid == uid and (cwd / "sub").stat().st_uid == uid
    sent = agent_main.details(
        "sessions_send",
        {
            "sessionKey": run.session.key,
            "message": json.dumps([{"own": "sub/made.txt", "content": "by the harness\n"}]),
            "timeoutSeconds": 0,
        },
    )
    assert sent["status"] == "accepted", sent
    drain()
    again = Run.objects.filter(session=run.session, kind="send").get()
    assert again.status == Run.OK, again.error
    assert started(run.session)["resumed"] == "warm"
    assert json.loads(again.reply) == [{"ok": "appended"}]
    assert made.read_text() == "by the client\nby the harness\n"


def test_in_a_warm_process_a_file_request_must_name_the_session_of_the_running_turn(
    agent_main, cwd
):
    """Two children working in one directory share a warm process, which holds both ACP
    sessions; while it serves B's turn, a request naming A's session is refused (it has no turn
    running), and B's own requests are served in B's turn's cwd."""
    make_session("main")
    register(echo=misbehaving(cwd, "files"))
    first = turn(agent_main, [{"write": str(cwd / "a.txt"), "content": "A"}])
    a = started(first.session)
    second = turn(
        agent_main,
        [
            {"read": str(cwd / "a.txt"), "session": a["sessionId"]},
            {"write": str(cwd / "a.txt"), "content": "B", "session": a["sessionId"]},
            {"read": str(cwd / "a.txt")},
        ],
    )
    b = started(second.session)
    assert b["pid"] == a["pid"] and b["warm"] is True and b["sessionId"] != a["sessionId"]
    no_turn = f"session {a['sessionId']!r} has no turn running"
    assert json.loads(second.reply) == [
        {"error": -32602, "message": no_turn},
        {"error": -32602, "message": no_turn},
        {"ok": "A"},
    ]
    assert (cwd / "a.txt").read_text() == "A"
