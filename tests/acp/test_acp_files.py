"""What a harness may ask of the client besides permissions: fs/read_text_file and
fs/write_text_file inside the session's cwd (sessions_app/acp/files.py), terminal/* declined.
First the confinement rules on their own, then through a real harness process and a turn."""

from __future__ import annotations

import json
import os

import pytest

from sessions_app.acp.files import MAX_FILE_BYTES, Refused, WorkingDirectory
from sessions_app.models import Message, Run
from tests.acp.harness_fixtures import misbehaving, register
from tests.acp.test_acp_turns import texts, transcript
from tests.conftest import make_session
from tests.runs.helpers import drain


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


@pytest.fixture(autouse=True)
def _no_heartbeat(monkeypatch):
    monkeypatch.setattr("sessions_app.runs.engine.HEARTBEAT_SECONDS", 3600)


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
