"""The send-policy override on the transcript page: operators and superusers only, through
store.set_send_policy (what the API's PATCH sendPolicy calls), with CSRF."""

import pytest
from django.test import Client

from sessions_app.models import Session
from tests.ui.conftest import make_user

URL = "/sessions/agent:main:main/send-policy/"


def policy() -> str:
    return Session.objects.get(key="agent:main:main").send_policy


@pytest.mark.parametrize(("choice", "stored"), [("deny", "deny"), ("allow", "allow")])
def test_an_operator_sets_the_override(operator_user, world, choice, stored):
    response = operator_user.post(URL, {"policy": choice})
    assert response.status_code == 302 and response["Location"] == "/sessions/agent:main:main/"
    assert policy() == stored
    page = operator_user.get(response["Location"]).content.decode()
    assert f"Send policy for this session: {choice}." in page
    assert f'value="{choice}" checked' in page


def test_inherit_clears_the_override(superuser, world):
    Session.objects.filter(key="agent:main:main").update(send_policy="deny")
    assert superuser.post(URL, {"policy": "inherit"}).status_code == 302
    assert policy() == ""


def test_the_change_moves_updated_at_like_the_api(operator_user, world):
    before = Session.objects.get(key="agent:main:main").updated_at
    operator_user.post(URL, {"policy": "deny"})
    assert Session.objects.get(key="agent:main:main").updated_at >= before


def test_a_viewer_is_refused(viewer, world):
    response = viewer.post(URL, {"policy": "deny"})
    assert response.status_code == 403 and b"Only operators" in response.content
    assert policy() == ""


@pytest.mark.parametrize("body", [{"policy": "maybe"}, {}, {"policy": "DENY "}, {"policy": ""}])
def test_bad_values_are_400(operator_user, world, body):
    response = operator_user.post(URL, body)
    assert response.status_code == 400 and b"policy must be" in response.content
    assert policy() == ""


def test_get_is_405(operator_user, world):
    response = operator_user.get(URL)
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_unknown_session_is_404(operator_user, world):
    assert (
        operator_user.post("/sessions/agent:main:nope/send-policy/", {"policy": "deny"}).status_code
        == 404
    )


def test_csrf_is_required(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("otto", group="Operators"))
    assert client.post(URL, {"policy": "deny"}).status_code == 403
    assert policy() == ""
    page = client.get("/sessions/agent:main:main/")
    token = page.cookies["csrftoken"].value
    assert client.post(URL, {"policy": "deny", "csrfmiddlewaretoken": token}).status_code == 302
    assert policy() == "deny"
