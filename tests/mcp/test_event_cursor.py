"""The MCP event cursor never skips a message (PostgreSQL): a message whose transaction is
still open holds a lower id than one already committed; events stop before the gap until it
commits, so a poller whose cursor moved past the visible one does not lose the other."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from sessions_app import store
from sessions_app.access.identity import requester_for_session
from sessions_app.mcp.events import newest_cursor, read_events
from sessions_app.models import Message, Session
from tests.conftest import make_session, set_config, user

pytestmark = pytest.mark.django_db(transaction=True)


def append(key: str, text: str) -> None:
    session = Session.objects.get(key=key)
    store.append_to_session(session, store.read_messages([user(text)]))


def test_a_message_still_being_written_is_not_skipped(agents):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite appends one transaction at a time")
    set_config(visibility="all", a2a_enabled=True)
    make_session("agent:main:main")
    make_session("agent:main:slow")
    make_session("agent:main:fast")
    append("agent:main:main", "before")
    reader = requester_for_session(Session.objects.get(key="agent:main:main"))
    start = Message.objects.order_by("-pk").values_list("pk", flat=True).first()

    written, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        try:
            with transaction.atomic():
                append("agent:main:slow", "written first, committed last")
                written.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    try:
        assert written.wait(timeout=10)
        append("agent:main:fast", "written second, committed first")
        # The fast message is visible, the slow one (a lower id) is not yet: nothing past it.
        assert [e["text"] for e in read_events(reader, start, None, 20)] == []
        fast = Message.objects.get(session__key="agent:main:fast").pk
        # A waiter starting now begins below the slow message, so it will hear it.
        assert newest_cursor(reader, None) < fast
    finally:
        release.set()
        writer.join(timeout=30)
    events = read_events(reader, start, None, 20)
    assert [e["text"] for e in events] == [
        "written first, committed last",
        "written second, committed first",
    ]
    assert events[0]["cursor"] < events[1]["cursor"]
