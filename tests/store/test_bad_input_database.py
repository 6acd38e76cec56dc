"""What no database column can hold never reaches a query: each of these was a 500 on
PostgreSQL (some on SQLite too) found by an audit on 28 Nov, and is now a clear answer on both.

- A NUL in an admin path or query string (PostgreSQL refuses NUL in any text parameter, also in
  a WHERE): 400 before any admin view (openclaw_site.middleware.RefuseNulMiddleware); in an API
  path, a 400 naming it (a group's name, an agent id).
- A `sessionid` cookie Django unquotes into a NUL: no session (sessions_app/access/login_sessions.py).
- A run timeout past its 32-bit column; a message seq past its column's range in the browser's
  "newer messages" read; a non-numeric send-policy id in the admin; a NUL Idempotency-Key.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from openclaw_common.errors import InvalidArgument
from openclaw_site.middleware import RefuseNulMiddleware
from sessions_app.models import Run, Session
from tests.conftest import add_messages, admin_groups, assistant, make_agent, user

NUL_TEXT = RefuseNulMiddleware.TEXT


@pytest.fixture
def superuser(db) -> Client:
    admin_groups()
    browser = Client()
    browser.force_login(User.objects.create_user("root", is_staff=True, is_superuser=True))
    return browser


@pytest.mark.parametrize(
    ("method", "path", "text"),
    [
        ("delete", "/api/v1/groups/a%00b/", "name must not contain NUL characters"),
        (
            "post",
            "/api/v1/agents/a%00b/models/refresh/",
            "agent id must not contain NUL characters",
        ),
    ],
)
def test_a_nul_in_an_api_path_is_a_400_naming_it(operator, home, method, path, text):
    """The API names the parameter at fault (the page middleware leaves the API to do so)."""
    response = getattr(operator.client, method)(path, **operator.headers())
    assert response.status_code == 400
    assert response.json()["error"]["message"] == text


@pytest.mark.parametrize(
    "path",
    [
        "/admin/sessions_app/session/?kind=a%00b",
        "/admin/sessions_app/delivery/?adapter=a%00b",
        "/admin/sessions_app/agent/a%00b/change/",
        "/admin/sessions_app/agent/a%00b/history/",
    ],
)
def test_a_nul_in_an_admin_path_or_query_is_a_400(superuser, path):
    response = superuser.get(path)
    assert response.status_code == 400 and response.content.decode() == NUL_TEXT


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/admin/"])
def test_a_session_cookie_holding_a_nul_is_no_session(db, path):
    # Over the wire `sessionid="abcdefgh\000ijklmnop"` is plain ASCII; Django unquotes it.
    browser = Client(HTTP_COOKIE='sessionid="abcdefgh\\000ijklmnop"')
    assert browser.get(path).status_code in (200, 302)


def test_a_run_timeout_past_its_column_is_a_400_and_writes_nothing(agent_main, home):
    before = Session.objects.count()
    for name in ("runTimeoutSeconds", "timeoutSeconds"):
        for value in (2**31, 10**12, 2**53 - 1):
            args = {"task": "x", "agentId": "research", name: value}
            response = agent_main.invoke("sessions_spawn", args)
            assert response.status_code == 400, (name, value)
            assert response.json()["error"]["message"] == f"{name} must be a non-negative integer"
    rest = agent_main.post("/api/v1/spawn/", {"task": "x", "runTimeoutSeconds": 2**31})
    assert rest.status_code == 400
    assert Session.objects.count() == before and not Run.objects.exists()
    longest = agent_main.details(
        "sessions_spawn", {"task": "x", "agentId": "research", "runTimeoutSeconds": 2**31 - 1}
    )
    assert longest["status"] == "accepted"


def test_newer_messages_past_the_seq_column_are_none(superuser, home):
    add_messages(home, user("hello"), assistant("hi"))
    for after in ("2147483648", "9999999999"):
        response = superuser.get(f"/sessions/{home.key}/messages/", {"after": after})
        assert response.status_code == 200, after


@pytest.mark.parametrize("object_id", ["abc", "12x"])
def test_a_non_numeric_send_policy_id_in_the_admin_is_not_found(superuser, object_id):
    response = superuser.get(f"/admin/policies_app/sendpolicy/{object_id}/change/")
    assert response.status_code == 302  # Django's "not found" for a change page: back to the list


def test_a_nul_idempotency_header_is_a_400_and_sends_nothing(operator, home):
    response = operator.post(
        f"/api/v1/sessions/{home.key}/send/",
        {"message": "x", "timeoutSeconds": 0},
        HTTP_IDEMPOTENCY_KEY="a\x00b",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Idempotency-Key must not contain NUL characters"
    assert not Run.objects.exists()


def test_an_agent_setting_holding_a_nul_is_refused_on_every_way_in(agents):
    """The API's body check refused it; the admin's JSON fields, the importer and the seeds
    reach upsert_agent without that check (a DataError on PostgreSQL)."""
    with pytest.raises(InvalidArgument) as refused:
        make_agent(
            "main", backend={"type": "scripted", "rules": [{"match": ".*", "reply": "a\x00"}]}
        )
    assert refused.value.message == "backend.rules[0].reply must not contain NUL characters"
