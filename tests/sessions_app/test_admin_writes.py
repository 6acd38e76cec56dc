"""STYLE.md rule 1 for the admin: no admin page saves or deletes one of our rows with Django's
default ModelAdmin code. Each page that can save overrides the save (and delete) to call the
sessions_app/policies_app function the API uses; read-only pages cannot save at all."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory

from sessions_app.admin import ReadOnlyModelAdmin

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
