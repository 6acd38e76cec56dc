"""The retention page of the admin (Gateway settings → Retention): edit `session.maintenance`,
preview what the policy would do now (a dry run: nothing changes), and save it. The preview
and the save read the same form, so what is saved is what was previewed. The save goes through
config.update_config, like every other setting."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse

from openclaw_common.errors import InvalidArgument

from ..manage import config, retention
from ..models import GatewayConfig

TIERS = (
    ("archive_age", "Archived: idle longer than pruneAfter (age-retention)"),
    (
        "archive_dashboard",
        "Archived: idle dashboard sessions (archiveDashboardAfter; this service has no "
        "dashboard sessions, so never any)",
    ),
    ("archive_cap", "Archived: beyond maxEntries for their agent (active-session-cap)"),
    (
        "keep_recent",
        "Kept: interactive sessions active within preserveRecent that the age or maxEntries "
        "rule would otherwise archive",
    ),
    ("delete_archived", "Deleted: reset/deleted archives older than resetArchiveRetention"),
    (
        "delete_disk",
        "Deleted: over maxDiskBytes, down to highWaterBytes (the oldest reset archives, then "
        "the oldest active-session-cap archives)",
    ),
    ("cold", "Moved to cold storage: transcripts idle longer than coldStorage.afterDays"),
)


class RetentionForm(forms.Form):
    policy = forms.JSONField(
        label=retention.SETTING,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 70}),
        help_text=config.BY_PATH[retention.SETTING].help,
    )

    def clean_policy(self):
        try:
            return retention.clean_policy(self.cleaned_data["policy"])
        except InvalidArgument as exc:
            raise forms.ValidationError(exc.message) from None


def retention_view(model_admin, request):
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    can_change = model_admin.has_change_permission(request)
    saved = retention.effective_setting(GatewayConfig.load().session_maintenance)
    if request.method == "POST":
        form = RetentionForm(request.POST)
        if form.is_valid() and "_save" in request.POST:
            if not can_change:
                raise PermissionDenied
            config.update_config(
                api_key=None, changes={retention.SETTING: form.cleaned_data["policy"]}
            )
            messages.success(request, "The retention policy was saved.")
            return HttpResponseRedirect(request.path)
    else:
        form = RetentionForm(initial={"policy": json.dumps(saved, indent=2)})
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Retention (session.maintenance)",
        "form": form,
        "can_change": can_change,
        "saved": json.dumps(saved, indent=2),
    }
    if form.is_bound and form.is_valid():
        context["preview"] = _preview(form.cleaned_data["policy"])
    return TemplateResponse(request, "admin/sessions_app/gatewayconfig/retention.html", context)


def _preview(policy_setting: dict) -> dict:
    policy = retention.Policy.from_setting(policy_setting)
    plan = retention.plan(policy)
    tiers = [
        {
            "name": name,
            "title": title,
            "count": len(getattr(plan, name)),
            "rows": retention.preview_rows(getattr(plan, name)),
        }
        for name, title in TIERS
    ]
    disk = [{"agent": agent, **usage} for agent, usage in plan.disk.items()]
    return {
        "mode": policy.mode,
        "tiers": tiers,
        "before": plan.unarchived_before,
        "disk": disk,
        "max_disk_bytes": policy.max_disk_bytes,
    }
