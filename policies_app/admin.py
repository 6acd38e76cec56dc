"""Admin for the send policy, channels and the delivery outbox.

The policy page is one row (id=1) with its rules inline, a preview of what it decides for a
session key, how many active sessions it blocks, and its change history; a save goes through
`editing.save_send_policy()`. Channels are saved through `channels.save_channel()`. Deliveries
are read only; the one thing an operator does with them is retry a failed one, through
`delivery.retry_delivery()` like every other caller.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect

from sessions_app.admin_singleton import SingletonAdminMixin
from sessions_app.errors import InvalidArgument
from sessions_app.models import Session

from . import channels, editing, history, preview
from .delivery import retry_delivery
from .forms import ChannelConfigForm, SendPolicyForm, SendPolicyRuleForm
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


class RefusedSaveMixin:
    """The forms passed but the save function refused (a rule or row another operator changed
    meanwhile): Django's transaction for the save is rolled back, and the page says why instead
    of a server error."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except InvalidArgument as exc:
            self.message_user(request, f"Not saved: {exc.message}", messages.ERROR)
            return HttpResponseRedirect(request.path)


@admin.register(SendPolicy)
class SendPolicyAdmin(RefusedSaveMixin, SingletonAdminMixin, admin.ModelAdmin):
    form = SendPolicyForm
    inlines = [SendPolicyRuleInline]
    fields = ["enabled", "default_action", "change_note"]
    change_form_template = "admin/policies_app/sendpolicy/change_form.html"

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

    # The policy and its rules are one write, save_send_policy(), made in save_related() once
    # the inline is valid too; the form and the formset never save themselves.
    def save_model(self, request, obj, form, change):
        pass

    def save_related(self, request, form, formsets, change):
        (rules,) = formsets
        rows = [
            rule_form.rule_data()
            for rule_form in rules.forms
            if rule_form not in rules.deleted_forms
            and (rule_form.instance.pk is not None or rule_form.has_changed())
        ]
        saved = editing.save_send_policy(
            enabled=form.cleaned_data["enabled"],
            default_action=form.cleaned_data["default_action"],
            rules=rows,
            actor=request.user,
            note=form.cleaned_data.get("change_note", ""),
        )
        for warning in saved.warnings:
            messages.warning(request, warning)
        request.send_policy_change = saved.change

    def construct_change_message(self, request, form, formsets, add=False):
        # Django's admin log gets the history's summary: the formsets did not save, so they
        # cannot describe the change themselves.
        change = getattr(request, "send_policy_change", None)
        return change.summary if change is not None else "No changes."


@admin.register(ChannelConfig)
class ChannelConfigAdmin(RefusedSaveMixin, admin.ModelAdmin):
    form = ChannelConfigForm
    list_display = ["channel", "adapter", "webhook_url", "max_attempts"]
    list_filter = ["adapter"]
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
