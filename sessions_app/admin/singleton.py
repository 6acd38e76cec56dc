"""Admin pages for a model that has exactly one row (GatewayConfig, SendPolicy).

The model provides `load()`, which returns the row and creates it with its defaults the first
time. The list page is that row's change page; there is nothing to add or delete.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import reverse

from .actions import ModelAdminMixin


class SingletonAdminMixin(ModelAdminMixin):
    """Put before `admin.ModelAdmin` in the bases."""

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def change_url(self) -> str:
        opts = self.model._meta
        return reverse(
            f"admin:{opts.app_label}_{opts.model_name}_change", args=[self.model.load().pk]
        )

    def changelist_view(self, request, extra_context=None):
        # Checked before load(), so a user without access does not create the row either.
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return HttpResponseRedirect(self.change_url())

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        self.model.load()  # a first visit straight to the change URL finds the row
        return super().change_view(
            request,
            object_id,
            form_url,
            {"show_save_and_add_another": False, **(extra_context or {})},
        )
