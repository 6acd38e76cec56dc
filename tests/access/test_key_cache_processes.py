"""Issue 26: every web process keeps the API keys and settings it read (access/key_cache.py), and
a change made anywhere counts on the next request everywhere. Two real server processes on the
test database (SQLite: the version file beside it; PostgreSQL with REDIS_URL: the Redis key),
each first serving requests so that both have the key and the settings cached; then a change
through one process (or this one) and the next request through the other."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app.lib.shared_version import ACCESS
from sessions_app.models import ApiKey
from tests.conftest import make_session
from tests.servers import start_server, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def list_count(server, token: str) -> int:
    response = server.request("POST", "/tools/invoke", body={"tool": "sessions_list"}, token=token)
    assert response.status == 200, response.body
    return response.json()["result"]["details"]["count"]


@pytest.fixture
def two_servers():
    first, second = start_server(), start_server()
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def warm(servers, token: str) -> None:
    """Two requests on each process: the key and the settings are in its cache."""
    for server in servers:
        for _ in range(2):
            assert (
                server.request(
                    "POST", "/tools/invoke", body={"tool": "agents_list"}, token=token
                ).status
                == 200
            )


def test_a_revoked_key_is_refused_by_every_process_on_its_next_request(agents, two_servers):
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="revoked")
    warm(two_servers, token)
    # Revoked behind the models' back (SQL by hand, no version change): both processes still
    # answer from their cache, which shows that they use one.
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=None)  # (a quiet field: no change)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {ApiKey._meta.db_table} SET revoked_at = %s", [timezone.now()])
    kept = ACCESS.read() is not None  # PostgreSQL without Redis keeps nothing
    for server in two_servers:
        assert invoke(server, token).status == (200 if kept else 401)
    key.revoke()  # in this process: the servers learn it only from the shared version
    for server in two_servers:
        assert invoke(server, token).status == 401
        # and the REST resources, which authenticate through DRF
        assert server.request("GET", "/api/v1/agents/", token=token).status == 401


def invoke(server, token: str, **body):
    return server.request(
        "POST", "/tools/invoke", body={"tool": "agents_list", **body}, token=token
    )


def test_a_settings_change_through_one_process_is_seen_by_the_other(agents, two_servers):
    first, second = two_servers
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="settings")
    make_session("agent:research:main")
    warm(two_servers, token)
    change = {"tools.sessions.visibility": "all", "tools.agentToAgent.enabled": True}
    response = first.request("PATCH", "/api/v1/config/", body=change, token=token)
    assert response.status == 200, response.body
    assert list_count(second, token) == 1  # agent:research:main, visible under "all"
    response = second.request(
        "PATCH", "/api/v1/config/", body={"tools.sessions.visibility": "self"}, token=token
    )
    assert response.status == 200, response.body
    assert list_count(first, token) == 0


def test_a_sandboxed_agent_through_one_process_clamps_its_key_on_the_other(agents, two_servers):
    first, second = two_servers
    _, operator = ApiKey.generate(scope=ApiKey.OPERATOR, name="operator")
    _, token = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["research"], name="research")
    make_session("agent:research:main")
    make_session("agent:research:other")
    for server in two_servers:
        assert (
            server.request(
                "POST",
                "/tools/invoke",
                body={"tool": "agents_list", "sessionKey": "agent:research:other"},
                token=token,
            ).status
            == 200
        )
    response = first.request(
        "PUT",
        "/api/v1/agents/research/",
        body={"name": "Research", "sandboxed": True},
        token=operator,
    )
    assert response.status == 200, response.body
    # A sandboxed key acts only as its own session (or one spawned under it): a 403 now.
    response = second.request(
        "POST",
        "/tools/invoke",
        body={"tool": "agents_list", "sessionKey": "agent:research:other"},
        token=token,
    )
    assert response.status == 403, response.body


def test_last_use_is_written_once_a_minute_per_key_after_the_response(agents, two_servers):
    first, _ = two_servers
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="used")
    assert key.last_used_at is None
    warm([first], token)
    # Written after the response (request_finished): the test may read before it lands.
    stamped = wait_until(
        lambda: ApiKey.objects.filter(pk=key.pk).values_list("last_used_at", flat=True)[0]
    )
    warm([first], token)
    key.refresh_from_db()
    assert key.last_used_at == stamped  # within the minute: not written again
