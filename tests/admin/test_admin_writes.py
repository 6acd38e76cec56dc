"""STYLE.md rule 1 for the admin: no admin page saves or deletes one of our rows with Django's
default ModelAdmin code. Each page that can save overrides the save (and delete) to call the
sessions_app/policies_app function the API uses; read-only pages cannot save at all. Also the
shared shapes: change-page buttons (admin_actions.py) and one-row pages (admin_singleton.py)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from policies_app.models import SendPolicy, SendPolicyChange
from sessions_app.admin.core import ReadOnlyModelAdmin
from sessions_app.models import ChannelConfig, GatewayConfig
from tests.conftest import admin_groups, make_session

OUR_APPS = {"sessions_app", "policies_app"}


@pytest.fixture
def superuser_request(db):
    request = RequestFactory().get("/admin/")
    request.user = User.objects.create_superuser("root", "root@example.com", "pw")
    return request


def our_admins():
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in OUR_APPS
    ]


def overrides(model_admin, name: str) -> bool:
    return getattr(type(model_admin), name) is not getattr(admin.ModelAdmin, name)


def test_every_admin_that_saves_calls_our_functions(superuser_request):
    checked = []
    for model, model_admin in our_admins():
        name = model.__name__
        # Read-only pages refuse a POST to the change form; these have no form to save.
        saves = not isinstance(model_admin, ReadOnlyModelAdmin) and (
            model_admin.has_add_permission(superuser_request)
            or model_admin.has_change_permission(superuser_request)
        )
        if saves:
            assert overrides(model_admin, "save_model"), f"{name}: default save_model"
            if model_admin.inlines:
                assert overrides(model_admin, "save_related"), f"{name}: inlines save themselves"
            checked.append(name)
        if model_admin.has_delete_permission(superuser_request):
            assert overrides(model_admin, "delete_model"), f"{name}: default delete_model"
            assert overrides(model_admin, "delete_queryset"), f"{name}: default delete_queryset"
    assert sorted(checked) == [
        "Agent",
        "ApiKey",
        "ChannelConfig",
        "GatewayConfig",
        "SendPolicy",
    ]


@pytest.fixture
def people(db):
    """An operator and a viewer, in the groups of migration 0006 (made again after a flush)."""
    groups = admin_groups()
    clients = {}
    for name, group in (("olivia", "Operators"), ("victor", "Viewers")):
        person = User.objects.create_user(name, password="x", is_staff=True)
        person.groups.add(groups[group])
        clients[group] = Client()
        clients[group].force_login(person)
    return clients


def test_change_page_buttons_only_answer_a_post(people, agents):
    session = make_session("agent:main:main")
    operator = people["Operators"]
    for name in ("archive", "restore", "send_policy"):
        url = reverse(f"admin:sessions_app_session_{name}", args=[session.pk])
        assert operator.get(url, {"policy": "deny"}).status_code == 403, name
    assert (
        operator.get(reverse("admin:sessions_app_agent_test_backend", args=["main"])).status_code
        == 403
    )
    session.refresh_from_db()
    assert session.archived_at is None and session.send_policy == ""
    missing = reverse("admin:sessions_app_session_archive", args=[999999])
    assert operator.post(missing).status_code == 404


@pytest.mark.parametrize(
    ("model", "url_name"),
    [(GatewayConfig, "sessions_app_gatewayconfig"), (SendPolicy, "policies_app_sendpolicy")],
)
def test_one_row_pages_list_as_their_row_and_cannot_add_or_delete(people, model, url_name):
    operator, viewer = people["Operators"], people["Viewers"]
    model.objects.all().delete()
    response = operator.get(reverse(f"admin:{url_name}_changelist"))
    row = model.objects.get()  # the first visit made it
    assert response.status_code == 302
    assert response["Location"] == reverse(f"admin:{url_name}_change", args=[row.pk])
    assert operator.get(reverse(f"admin:{url_name}_add")).status_code == 403
    assert operator.get(reverse(f"admin:{url_name}_delete", args=[row.pk])).status_code == 403
    model.objects.all().delete()
    assert viewer.get(reverse(f"admin:{url_name}_changelist")).status_code == 403
    assert viewer.get(reverse(f"admin:{url_name}_change", args=[1])).status_code == 403
    assert not model.objects.exists()  # a viewer's visit does not create the row


def test_a_viewer_cannot_change_the_send_policy_or_channels(people, agents):
    viewer = people["Viewers"]
    SendPolicy.load()
    policy_url = reverse("admin:policies_app_sendpolicy_change", args=[1])
    form = {"enabled": "on", "default_action": "deny", "rules-TOTAL_FORMS": "0"}
    form.update({"rules-INITIAL_FORMS": "0", "rules-MIN_NUM_FORMS": "0"})
    assert viewer.post(policy_url, form).status_code == 403
    assert viewer.get(policy_url, {"preview_key": "agent:main:main"}).status_code == 403
    channels_url = reverse("admin:sessions_app_channelconfig_changelist")
    assert viewer.get(channels_url).status_code == 403
    add = {"channel": "slack", "adapter": "log", "max_attempts": "5"}
    assert viewer.post(reverse("admin:sessions_app_channelconfig_add"), add).status_code == 403
    assert not SendPolicy.load().enabled and not SendPolicyChange.objects.exists()
    assert not ChannelConfig.objects.exists()
