"""The send policy's admin page: one row (id=1) with its rules inline, a preview of what it decides
for a session key, how many active sessions it blocks, and its change history. A save goes
through policies_app's `editing.save_send_policy()`.

The model is policies_app's (so are the URL and the template, admin/policies_app/sendpolicy/);
the page is registered here because the preview and the key picker read sessions, which
policies_app does not import.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.forms.models import BaseInlineFormSet

from policies_app import editing, history
from policies_app.forms import SendPolicyForm, SendPolicyRuleForm
from policies_app.models import SendPolicy, SendPolicyRule

from ..delivery import configured_channels
from ..manage import send_policy_preview as preview
from ..models import Session
from .forms import RefusedSaveMixin
from .singleton import SingletonAdminMixin

HISTORY_LIMIT = 20
PICK_LIMIT = 50


class SendPolicyRuleFormSet(BaseInlineFormSet):
    def _construct_form(self, i, **kwargs):
        # A private hook of BaseFormSet that django-stubs does not declare.
        form = super()._construct_form(i, **kwargs)  # type: ignore[misc]
        if not self.is_bound and i >= self.initial_form_count():
            # A blank row goes after the saved rules (1, 2, 3… as the preview numbers them),
            # not first with the model's default 0.
            form.initial.setdefault("position", i + 1)
        return form


class SendPolicyRuleInline(admin.TabularInline):
    model = SendPolicyRule
    form = SendPolicyRuleForm
    formset = SendPolicyRuleFormSet
    extra = 1
    ordering = ["position", "id"]
    verbose_name = "rule"
    verbose_name_plural = (
        "rules (a matching deny wins, then a matching allow, then the default; "
        "blank fields match anything)"
    )


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
        # Before Django's own get_object, which answers a non-numeric id as "not found" (this
        # lookup raised ValueError on it: a 500).
        if not str(object_id).isdigit():
            return {}
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

    def get_formset_kwargs(self, request, obj, inline, prefix):
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        if request.method == "POST":
            # A rule may name a configured channel; only a POST checks the rules.
            known = editing.known_channels(configured_channels())
            kwargs["form_kwargs"] = {"known_channels": known}
        return kwargs

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
            configured_channels=configured_channels(),
        )
        for warning in saved.warnings:
            messages.warning(request, warning)
        request.send_policy_change = saved.change

    def construct_change_message(self, request, form, formsets, add=False):
        # Django's admin log gets the history's summary: the formsets did not save, so they
        # cannot describe the change themselves.
        change = getattr(request, "send_policy_change", None)
        return change.summary if change is not None else "No changes."
