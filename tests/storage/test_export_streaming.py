"""transcript.jsonl streams under the ASGI server (issue 17.1): an async iterator reading
pages by seq, so the first line leaves before the transcript is read, and Django does not fall
back to `list()` over a sync iterator (which it warns about on every request)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from sessions_app.models import ApiKey, Message, Session
from tests.conftest import make_session
from tests.servers import start_server

COUNT = 20_000


def fill(session: Session, count: int) -> None:
    Message.objects.bulk_create(
        (
            Message(
                session=session,
                seq=seq,
                role="user" if seq % 2 else "assistant",
                content=f"message {seq}",
                timestamp=1_700_000_000_000 + seq,
                redact_needed=False,
            )
            for seq in range(1, count + 1)
        ),
        batch_size=5000,
    )
    Session.objects.filter(pk=session.pk).update(last_seq=count)


@pytest.mark.django_db(transaction=True)
def test_the_export_streams_under_asgi(agents):
    fill(make_session("main"), COUNT)
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="export")
    server = start_server()
    try:
        # The first request of a process imports the URLconf and the views: not the export's time.
        assert server.request("GET", "/api/v1/agents/", token=token).status == 200
        conn = http.client.HTTPConnection("127.0.0.1", urlsplit(server.url).port, timeout=60)
        conn.request(
            "GET",
            "/api/v1/sessions/agent%3Amain%3Amain/transcript.jsonl",
            headers={"Authorization": f"Bearer {token}"},
        )
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "application/x-ndjson; charset=utf-8"
        # Streamed: sent in chunks as pages are read, its length unknown when it starts (a
        # response built whole first carries a Content-Length).
        assert response.getheader("Content-Length") is None
        assert response.getheader("Transfer-Encoding") == "chunked"
        body = response.read()
        conn.close()
    finally:
        server.process.terminate()
        server.process.wait(timeout=15)
        log = server.process.stderr.read().decode()
        server.stop()
    lines = body.decode().splitlines()
    assert len(lines) == COUNT + 1 and '"content":"message 20000"' in lines[-1]
    # An async iterator: Django did not have to gather a synchronous one into a list first.
    assert "must consume synchronous iterators" not in log
