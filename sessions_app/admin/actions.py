"""What an operator does from the admin besides editing a form: list actions over selected rows,
and buttons on a row's change page. Both only check permission and call one function of
sessions_app/policies_app (STYLE.md rule 1); the shapes live here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

if TYPE_CHECKING:
    # A mixin here always goes before admin.ModelAdmin in the bases, so mypy reads it as one:
    # its self.model, super().changelist_view() etc. are the ModelAdmin's.
    ModelAdminMixin = admin.ModelAdmin[Any]
else:
    ModelAdminMixin = object


class ActionsNeedChangeMixin(ModelAdminMixin):
    """A POSTed list action from a user without change permission is refused outright (403),
    rather than answered with Django's "No action selected" redirect."""

    def changelist_view(self, request, extra_context=None):
        if (
            request.method == "POST"
            and "action" in request.POST
            and not self.has_change_permission(request)
        ):
            raise PermissionDenied
        return super().changelist_view(request, extra_context)


def each_row_action(name: str, description: str, apply: Callable[[Any], Any], done: str):
    """A list action that hands each selected row to `apply` (the function the API uses) and
    says how many it changed: `done` with `{count}`. `apply` returns False for a row it left as
    it was (abort_run on a finished run); anything else counts. Needs change permission."""

    def action(modeladmin, request, queryset):
        count = sum(1 for row in queryset if apply(row) is not False)
        modeladmin.message_user(request, done.format(count=count))

    action.__name__ = name
    return admin.action(description=description, permissions=["change"])(action)


@dataclass(frozen=True)
class RowAction:
    """A button on a row's change page: `route` below the row's URL runs the ModelAdmin method
    `handler(request, row)`, which returns a response or None (back to the change page)."""

    route: str  # e.g. "archive/"
    name: str  # the URL is admin:<app>_<model>_<name>
    handler: str
    method: str = "POST"  # GET only for downloads; everything that changes a row is a POST


class RowActionsMixin(ModelAdminMixin):
    """URLs for `row_actions`, each allowed only to users with change permission on the row."""

    row_actions: tuple[RowAction, ...] = ()
    row_pk_converter = "int"

    def get_urls(self):
        opts = self.model._meta
        own = [
            path(
                f"<{self.row_pk_converter}:pk>/{action.route}",
                self.admin_site.admin_view(self.row_action_view),
                {"action": action},
                name=f"{opts.app_label}_{opts.model_name}_{action.name}",
            )
            for action in self.row_actions
        ]
        return [*own, *super().get_urls()]

    def row_action_view(self, request, pk, action: RowAction) -> HttpResponse:
        if request.method != action.method:
            raise PermissionDenied
        row = get_object_or_404(self.model, pk=pk)
        if not self.has_change_permission(request, row):
            raise PermissionDenied
        response = getattr(self, action.handler)(request, row)
        return response or HttpResponseRedirect(self.row_change_url(row))

    def row_change_url(self, row) -> str:
        opts = self.model._meta
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
