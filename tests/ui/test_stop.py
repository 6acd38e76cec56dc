"""Stop on the transcript page: operators and superusers only, with CSRF, through
runs.control.stop_session (what the abort endpoint, the admin's Stop and `subagents cancel` call):
the session's runs and every sub-agent's below it."""

import uuid

import pytest
from django.db import transaction
from django.test import Client

from sessions_app.models import Run, Session
from sessions_app.runs import engine
from sessions_app.runs.chain import Chain
from tests.ui.conftest import make_user

URL = "/sessions/agent:main:main/stop/"


def start(key: str) -> Run:
    session = Session.objects.get(key=key)
    with transaction.atomic():
        return engine.start_run(
            session=session, kind="ingest", message="work", chain=Chain(uuid.uuid4(), ("main",))
        )


@pytest.fixture
def busy(world):
    """A run on main, its child and its grandchild."""
    keys = ("agent:main:main", "agent:main:subagent:child-1", "agent:main:subagent:grandchild-1")
    return [start(key) for key in keys]


def statuses(runs) -> set[str]:
    return set(Run.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True))


def test_an_operator_stops_the_session_and_every_sub_agent_below(operator_user, busy):
    page = operator_user.get("/sessions/agent:main:main/").content.decode()
    assert 'action="/sessions/agent:main:main/stop/"' in page
    response = operator_user.post(URL)
    assert response.status_code == 302 and response["Location"] == "/sessions/agent:main:main/"
    assert statuses(busy) == {Run.ABORTED}
    assert Run.objects.get(pk=busy[0].pk).error == "stopped by otto (transcript browser)"
    page = operator_user.get(response["Location"]).content.decode()
    assert "Stopped: 3 run(s) aborted, 0 waiting task(s) ended, 2 sub-agent session(s) below." in (
        page
    )


def test_a_superuser_may_stop(superuser, busy):
    assert superuser.post(URL).status_code == 302
    assert statuses(busy) == {Run.ABORTED}


def test_an_idle_session_stops_nothing_and_says_so(operator_user, world):
    response = operator_user.post(URL, follow=True)
    assert "Stopped: 0 run(s) aborted" in response.content.decode()


def test_a_viewer_sees_no_button_and_is_refused(viewer, busy):
    assert "stop-form" not in viewer.get("/sessions/agent:main:main/").content.decode()
    response = viewer.post(URL)
    assert response.status_code == 403 and b"Only operators may stop a session" in response.content
    assert statuses(busy) == {Run.QUEUED}


def test_anonymous_and_groupless_users_stop_nothing(anon, outsider_user, busy):
    assert anon.post(URL).status_code == 302  # to the login page
    assert outsider_user.post(URL).status_code == 403
    assert statuses(busy) == {Run.QUEUED}


def test_get_is_405(operator_user, busy):
    response = operator_user.get(URL)
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert statuses(busy) == {Run.QUEUED}


@pytest.mark.parametrize(
    ("url", "status"),
    [("/sessions/agent:main:nope/stop/", 404), ("/sessions/%20/stop/", 400)],
)
def test_unknown_or_malformed_keys(operator_user, world, url, status):
    assert operator_user.post(url).status_code == status


def test_csrf_is_required(busy):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("otto", group="Operators"))
    assert client.post(URL).status_code == 403
    assert statuses(busy) == {Run.QUEUED}
    token = client.get("/sessions/agent:main:main/").cookies["csrftoken"].value
    assert client.post(URL, {"csrfmiddlewaretoken": token}).status_code == 302
    assert statuses(busy) == {Run.ABORTED}
