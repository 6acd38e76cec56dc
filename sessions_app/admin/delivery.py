"""Admin for channels and the delivery outbox. Channels are saved through
`delivery.save_channel()`. Deliveries are read only; the one thing an operator does with them is
retry a failed one, through `delivery.retry_delivery()` like every other caller.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied

from openclaw_common.errors import InvalidArgument

from ..delivery import adapters, channels, retry_delivery
from ..models import ChannelConfig, Delivery
from .forms import RefusedSaveMixin


class ChannelConfigForm(forms.ModelForm):
    # A select of the registered adapters, read when the form is made (the model field has no
    # choices, so that a new adapter needs no migration).
    adapter = forms.ChoiceField(choices=adapters.choices, initial=ChannelConfig.LOG)
    # Declared so the scheme a bare host gets is explicit (Django 6 changes the default).
    webhook_url = forms.URLField(
        required=False,
        max_length=2000,
        assume_scheme="https",
        help_text="Required for the webhook adapter: an http(s) URL that receives a JSON POST.",
    )

    class Meta:
        model = ChannelConfig
        fields = ["channel", "adapter", "webhook_url", "max_attempts"]

    def clean_channel(self) -> str:
        # Lowercased here as save() would, so the lowercase constraint and the unique check see
        # the stored value.
        return (self.cleaned_data.get("channel") or "").strip().lower()

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data  # what ModelForm.clean() returns, typed as never None
        try:
            channels.check_webhook_url(cleaned.get("adapter"), cleaned.get("webhook_url"))
        except InvalidArgument as exc:
            self.add_error("webhook_url", exc.message)
        return cleaned


class AdapterFilter(admin.SimpleListFilter):
    """Every registered adapter, as the field's choices used to list them."""

    title = "adapter"
    parameter_name = "adapter"

    def lookups(self, request, model_admin):
        return adapters.choices()

    def queryset(self, request, queryset):
        return queryset.filter(adapter=self.value()) if self.value() else queryset


@admin.register(ChannelConfig)
class ChannelConfigAdmin(RefusedSaveMixin, admin.ModelAdmin):
    form = ChannelConfigForm
    list_display = ["channel", "adapter", "webhook_url", "max_attempts"]
    list_filter = [AdapterFilter]
    search_fields = ["channel"]

    def save_model(self, request, obj, form, change):
        row = channels.save_channel(
            channel=form.cleaned_data["channel"],
            adapter=form.cleaned_data["adapter"],
            webhook_url=form.cleaned_data.get("webhook_url") or "",
            max_attempts=form.cleaned_data["max_attempts"],
            channel_id=obj.pk if change else None,
        )
        # The admin's log entry and redirect need the saved row's id.
        obj.pk = row.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        channels.delete_channels([obj.pk])

    def delete_queryset(self, request, queryset):
        channels.delete_channels(list(queryset.values_list("pk", flat=True)))


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "created_at",
        "kind",
        "channel",
        "to",
        "status",
        "attempts",
        "session",
        "decided_by",
        "last_error",
    ]
    list_filter = ["status", "kind", "channel"]
    search_fields = ["to", "session__key"]
    list_select_related = ["session"]
    date_hierarchy = "created_at"
    actions = ["retry_failed"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Status changes only through the outbox's transitions; the page is read only.
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("sessions_app.change_delivery")

    def changelist_view(self, request, extra_context=None):
        # An action the user may not run is a 403, not a silent "no action selected".
        if (
            request.method == "POST"
            and request.POST.get("action") == "retry_failed"
            and not self.has_retry_permission(request)
        ):
            raise PermissionDenied
        return super().changelist_view(request, extra_context)

    @admin.action(description="Retry selected failed deliveries", permissions=["retry"])
    def retry_failed(self, request, queryset):
        ids = list(queryset.filter(status=Delivery.FAILED).values_list("pk", flat=True))
        skipped = queryset.count() - len(ids)
        outcomes = {Delivery.PENDING: 0, Delivery.BLOCKED: 0, Delivery.FAILED: 0}
        for delivery_id in ids:
            status = retry_delivery(delivery_id).status
            outcomes[status] = outcomes.get(status, 0) + 1
        parts = [f"{outcomes[Delivery.PENDING]} queued again"]
        if outcomes[Delivery.BLOCKED]:
            parts.append(f"{outcomes[Delivery.BLOCKED]} now blocked by the send policy")
        if outcomes[Delivery.FAILED]:
            parts.append(f"{outcomes[Delivery.FAILED]} still without a delivery route")
        if skipped:
            parts.append(f"{skipped} skipped (not failed)")
        level = messages.SUCCESS if outcomes[Delivery.PENDING] else messages.WARNING
        self.message_user(request, "Retry: " + ", ".join(parts) + ".", level)
