"""import_openclaw refuses non-regular files and bounds a line (issue 16, item 4)."""

from __future__ import annotations

import os
import signal

import pytest

from sessions_app.manage.importer import NotRegularFile, open_regular
from sessions_app.models import Message
from tests.conftest import user
from tests.manage.test_import_openclaw import (
    MAIN_ID,
    T0,
    entry_line,
    header,
    run_import,
    sessions_dir,
    write_store,
    write_transcript,
)


def finishes(fn, *, within: int = 20):
    """Run fn; fail (instead of hanging the suite) when it does not return in time. (An alarm,
    not a thread: the import must run on the test's own database connection.)"""

    def hung(signum, frame):
        raise AssertionError("the import hung on a FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(within)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_fifo_transcript_is_refused_without_hanging(agents, tmp_path):
    directory = sessions_dir(tmp_path, "main")
    write_store(tmp_path, "main", {"agent:main:main": {"sessionId": MAIN_ID, "updatedAt": T0}})
    os.mkfifo(directory / f"{MAIN_ID}.jsonl")
    out, err = finishes(lambda: run_import(tmp_path))
    assert "1 sessions failed" in out
    assert "is a FIFO, not a regular file; refused" in err


def test_a_fifo_session_store_is_refused_without_hanging(agents, tmp_path):
    write_store(tmp_path, "main", {})
    ops = sessions_dir(tmp_path, "ops") / "sessions.json"
    os.mkfifo(ops)
    out, err = finishes(lambda: run_import(tmp_path))
    assert f"{ops} is a FIFO, not a regular file; refused; store skipped" in err


def test_a_device_is_refused(tmp_path):
    with pytest.raises(NotRegularFile, match="character device"):
        open_regular("/dev/zero")
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)


def test_an_over_long_line_is_reported_and_skipped(agents, tmp_path, settings):
    settings.IMPORT_MAX_LINE_BYTES = 1000
    directory = sessions_dir(tmp_path, "main")
    write_store(tmp_path, "main", {"agent:main:main": {"sessionId": MAIN_ID, "updatedAt": T0}})
    path = write_transcript(
        directory,
        f"{MAIN_ID}.jsonl",
        header(MAIN_ID),
        entry_line(user("first", timestamp=T0), 1),
        entry_line(user("x" * 5000, timestamp=T0 + 1), 2),
        entry_line(user("last", timestamp=T0 + 2), 3),
    )
    out, err = run_import(tmp_path)
    assert "2 messages added, 1 lines skipped" in out
    assert f"{path}:3: line longer than 1000 bytes (IMPORT_MAX_LINE_BYTES); skipped" in err
    contents = list(
        Message.objects.filter(session__key="agent:main:main")
        .order_by("seq")
        .values_list("content", flat=True)
    )
    assert contents == ["first", "last"]


def test_an_over_long_last_line_without_newline_is_skipped(agents, tmp_path, settings):
    settings.IMPORT_MAX_LINE_BYTES = 100
    directory = sessions_dir(tmp_path, "main")
    write_store(tmp_path, "main", {"agent:main:main": {"sessionId": MAIN_ID, "updatedAt": T0}})
    path = directory / f"{MAIN_ID}.jsonl"
    path.write_text('{"type": "session"}\n' + "y" * 10_000)
    out, err = run_import(tmp_path)
    assert "0 messages added, 1 lines skipped" in out
    assert f"{path}:2: line longer than 100 bytes" in err
