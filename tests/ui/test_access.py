"""Who may reach which browser page: nothing without login, nothing without a group, writes only
for operators and superusers."""

import pytest
from django.test import Client

from tests.ui.conftest import PASSWORD, make_user

MAIN = "/sessions/agent:main:main/"
READ_URLS = [
    "/",
    "/ui/rows/",
    MAIN,
    MAIN + "messages/",
    MAIN + "panel/",
    MAIN + "transcript.jsonl",
    MAIN + "images/4/1/",
]


@pytest.mark.parametrize("url", [*READ_URLS, MAIN + "send-policy/"])
def test_anonymous_users_are_sent_to_the_login_page(anon, world, url):
    response = anon.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_anonymous_post_to_the_override_changes_nothing(anon, world):
    response = anon.post(MAIN + "send-policy/", {"policy": "deny"})
    assert response.status_code == 302
    world["main"].refresh_from_db()
    assert world["main"].send_policy == ""


@pytest.mark.parametrize("url", [*READ_URLS, MAIN + "send-policy/"])
def test_a_user_in_no_group_is_refused(outsider_user, world, url):
    response = outsider_user.get(url)
    assert response.status_code == 403
    assert b"Viewers or Operators" in response.content


@pytest.mark.parametrize("url", READ_URLS)
def test_viewers_operators_and_superusers_read_every_page(
    viewer, operator_user, superuser, world, url
):
    for client in (viewer, operator_user, superuser):
        assert client.get(url).status_code == 200, url


def test_an_inactive_account_cannot_log_in(db):
    person = make_user("gone", group="Viewers", password=PASSWORD)
    person.is_active = False
    person.save()
    client = Client()
    response = client.post("/accounts/login/", {"username": "gone", "password": PASSWORD})
    assert response.status_code == 200 and b"didn" in response.content
    assert client.get("/").status_code == 302


def test_login_form_logs_a_viewer_in_and_lands_on_the_list(world):
    make_user("vera", group="Viewers", password=PASSWORD)
    client = Client()
    page = client.get("/accounts/login/?next=/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post(
        "/accounts/login/?next=/",
        {"username": "vera", "password": PASSWORD, "next": "/"},
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_logout_is_a_post_and_ends_the_session(viewer, world):
    assert viewer.get("/").status_code == 200
    response = viewer.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert viewer.get("/").status_code == 302


def test_the_override_control_is_shown_only_to_operators_and_superusers(
    viewer, operator_user, superuser, world
):
    assert b'id="policy-form"' not in viewer.get(MAIN).content
    assert b'id="policy-form"' not in viewer.get(MAIN + "panel/").content
    for client in (operator_user, superuser):
        assert b'id="policy-form"' in client.get(MAIN).content
        assert b'id="policy-form"' in client.get(MAIN + "panel/").content


def top_nav(response) -> str:
    html = response.content.decode()
    start = html.index('class="top-nav"')
    return html[start : html.index("</nav>", start)]


def test_the_header_links_the_api_docs_for_everyone_and_the_admin_for_staff(viewer, world):
    nav = top_nav(viewer.get("/"))
    assert "/api/v1/docs/" in nav and "/admin/" not in nav
    staff = make_user("stella", group="Operators")
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    assert "/admin/" in top_nav(client.get("/"))
