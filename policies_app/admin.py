"""Admin for the send policy, channels and the delivery outbox.

The policy page is one row (id=1) with its rules inline, a preview of what it decides for a
session key, how many active sessions it blocks, and its change history. Deliveries are read
only; the one thing an operator does with them is retry a failed one, through
`delivery.retry_delivery()` like every other caller.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import reverse

from sessions_app.models import Session

from . import history, preview
from .delivery import retry_delivery
from .forms import EVERYTHING_WARNING, ChannelConfigForm, SendPolicyRuleForm, blocks_everything
from .models import ChannelConfig, Delivery, SendPolicy, SendPolicyRule

HISTORY_LIMIT = 20
PICK_LIMIT = 50


class SendPolicyRuleInline(admin.TabularInline):
    model = SendPolicyRule
    form = SendPolicyRuleForm
    extra = 1
    ordering = ["position", "id"]
    verbose_name = "rule"
    verbose_name_plural = (
        "rules (a matching deny wins, then a matching allow, then the default; "
        "blank fields match anything)"
    )


@admin.register(SendPolicy)
class SendPolicyAdmin(admin.ModelAdmin):
    inlines = [SendPolicyRuleInline]
    fields = ["enabled", "default_action"]
    change_form_template = "admin/policies_app/sendpolicy/change_form.html"

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        # One row: the list is the change page.
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        config = SendPolicy.load()
        return HttpResponseRedirect(
            reverse("admin:policies_app_sendpolicy_change", args=[config.pk])
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = dict(extra_context or {})
        if self.has_view_or_change_permission(request):
            context.update(self._policy_context(request, object_id))
        return super().change_view(request, object_id, form_url, extra_context=context)

    def _policy_context(self, request, object_id) -> dict:
        config = SendPolicy.objects.filter(pk=object_id).first()
        if config is None:
            return {}
        key = request.GET.get("preview_key", "").strip()
        return {
            "preview_key": key,
            "preview": preview.preview(key, config) if key else None,
            "blocked_count": preview.count_blocked(config),
            "active_count": preview.count_active(),
            "policy_history": history.recent_changes(HISTORY_LIMIT),
            "session_choices": list(
                Session.objects.active().by_activity().values_list("key", flat=True)[:PICK_LIMIT]
            ),
        }

    def save_model(self, request, obj, form, change):
        # The state before this save, read from the database: the form has already changed obj.
        request._send_policy_before = history.snapshot(SendPolicy.objects.get(pk=obj.pk))
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        config = form.instance
        for number, rule in enumerate(config.rules.all(), start=1):
            if blocks_everything(rule):
                messages.warning(request, f"Rule {number}: {EVERYTHING_WARNING}")
        before = getattr(request, "_send_policy_before", None) or history.snapshot(config)
        history.record_change(user=request.user, before=before, after=history.snapshot(config))


@admin.register(ChannelConfig)
class ChannelConfigAdmin(admin.ModelAdmin):
    form = ChannelConfigForm
    list_display = ["channel", "adapter", "webhook_url", "max_attempts"]
    list_filter = ["adapter"]
    search_fields = ["channel"]


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
        return request.user.has_perm("policies_app.change_delivery")

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
