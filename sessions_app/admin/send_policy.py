"""The send policy's admin page: one row (id=1) with its rules inline, a preview of what it decides
for a session key, which active sessions it blocks (listed, with links), and its change
history. A save goes through policies_app's `editing.save_send_policy()`. "Preview these rules"
submits the form as Save does but only runs the dry run on what the form holds, unsaved:
`send_policy_api.trial()`, the function the API's POST /api/v1/policies/dry-run/ calls, and the
page comes back with the form as it was sent and the sessions those rules would block.

The model is policies_app's (so are the URL and the template, admin/policies_app/sendpolicy/);
the page is registered here because the preview and the key picker read sessions, which
policies_app does not import.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.forms.models import BaseInlineFormSet
from django.urls import reverse

from policies_app import editing, history
from policies_app.forms import SendPolicyForm, SendPolicyRuleForm
from policies_app.models import SendPolicy, SendPolicyRule

from ..delivery import configured_channels
from ..manage import send_policy_api
from ..manage import send_policy_preview as preview
from ..models import Session
from .forms import RefusedSaveMixin
from .singleton import SingletonAdminMixin

HISTORY_LIMIT = 20
PICK_LIMIT = 50
BLOCKED_LISTED = 50  # the blocked sessions listed by name (the count covers them all)
PREVIEW_BUTTON = "_preview"


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
        SendPolicy.load()  # a first visit: the row exists before its counts are read
        config = SendPolicy.objects.filter(pk=object_id).first()
        if config is None:
            return {}
        key = request.GET.get("preview_key", "").strip()
        return {
            "preview_key": key,
            "preview": preview.preview(key, config) if key else None,
            # The saved policy's dry run: the same function as an unsaved form's, with nothing
            # replaced.
            "saved_run": blocked_listing(
                send_policy_api.trial(
                    enabled=None, default_action=None, rules=None, limit=BLOCKED_LISTED
                )
            ),
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
        if PREVIEW_BUTTON in request.POST:
            # Nothing is written: the dry run of the form as sent, shown by response_change.
            result = send_policy_api.trial(
                enabled=form.cleaned_data["enabled"],
                default_action=form.cleaned_data["default_action"],
                rules=rows,
                limit=BLOCKED_LISTED,
            )
            request.send_policy_trial = (form, formsets, blocked_listing(result))
            return
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

    def log_change(self, request, obj, message):
        if PREVIEW_BUTTON in request.POST:
            return None  # a preview changed nothing
        return super().log_change(request, obj, message)

    def response_change(self, request, obj):
        found = getattr(request, "send_policy_trial", None)
        if found is None:
            return super().response_change(request, obj)
        form, formsets, result = found
        return self._render_with_trial(request, obj, form, formsets, result)

    def _render_with_trial(self, request, obj, form, formsets, result):
        """The change page with the form and rules as they were sent (bound, unsaved) and the
        dry run of them: what Django's change view renders for a form it did not save."""
        # django-stubs types a fieldset's options narrower than get_fieldsets() returns them.
        fieldsets: Any = self.get_fieldsets(request, obj)
        admin_form = helpers.AdminForm(
            form, list(fieldsets), {}, self.get_readonly_fields(request, obj), model_admin=self
        )
        inline_formsets = self.get_inline_formsets(
            request, formsets, self.get_inline_instances(request, obj), obj
        )
        media = self.media + admin_form.media
        for inline_formset in inline_formsets:
            media += inline_formset.media
        context = {
            **self.admin_site.each_context(request),
            "title": f"Change {self.opts.verbose_name}",
            "subtitle": str(obj),
            "adminform": admin_form,
            "object_id": str(obj.pk),
            "original": obj,
            "is_popup": False,
            "to_field": None,
            "media": media,
            "inline_admin_formsets": inline_formsets,
            "errors": helpers.AdminErrorList(form, formsets),
            "preserved_filters": self.get_preserved_filters(request),
            "show_save_and_add_another": False,
            **self._policy_context(request, obj.pk),
            "trial_run": result,
        }
        return self.render_change_form(request, context, change=True, obj=obj)

    def construct_change_message(self, request, form, formsets, add=False):
        # Django's admin log gets the history's summary: the formsets did not save, so they
        # cannot describe the change themselves.
        change = getattr(request, "send_policy_change", None)
        return change.summary if change is not None else "No changes."


def blocked_listing(result: dict) -> dict:
    """A dry run's result (send_policy_api.trial) for the page: each blocked session with a
    link to its admin page (one query for the listed keys)."""
    listed = result["blocked"]
    pks = dict(Session.objects.filter(key__in=[b["key"] for b in listed]).values_list("key", "pk"))
    sessions = [
        {
            **blocked,
            "url": (
                reverse("admin:sessions_app_session_change", args=[pks[blocked["key"]]])
                if blocked["key"] in pks
                else ""
            ),
        }
        for blocked in listed
    ]
    return {**result, "sessions": sessions, "more": result["blockedCount"] - len(listed)}
