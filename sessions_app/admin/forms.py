"""Admin forms. They validate with the same functions the API uses (agents.clean_backend,
config.clean_value); the admin then saves through agents.upsert_agent / config.update_config /
ApiKey.generate, never by saving the form's instance. RefusedSaveMixin turns such a function's
refusal into a message on the page."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponseRedirect

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..access.identity import api_key_fields
from ..manage import config
from ..manage.agents import clean_backend, clean_subagent_settings, clean_webhook
from ..models import Agent, ApiKey, GatewayConfig
from .actions import ModelAdminMixin


def split_list(text: str | None) -> list[str]:
    """ "a, b\nc" -> ["a", "b", "c"] (lists are edited as comma- or line-separated text)."""
    return [part.strip() for part in (text or "").replace("\n", ",").split(",") if part.strip()]


class ListField(forms.CharField):
    """A list of strings edited as comma-separated text."""

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        return split_list(super().to_python(value))


# --- Agents ---------------------------------------------------------------------------------


class AgentForm(forms.ModelForm):
    """The fields of api.md §5 (`PUT /api/v1/agents/{id}/`), labelled by their OpenClaw names."""

    backend = forms.JSONField(
        required=False,
        label="backend",
        help_text='{"type": "scripted", "rules": [...]} or {"type": "openai", "baseUrl": ..., '
        '"model": ..., "apiKeyEnv": ...}. Empty: scripted.',
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
    )
    allow_agents = ListField(
        required=False,
        label="subagents.allowAgents",
        help_text='Agent ids this agent may spawn under, comma-separated; "*" allows any.',
    )
    tools_allow = ListField(required=False, label="tools.allow", help_text="Comma-separated.")
    tools_deny = ListField(required=False, label="tools.deny", help_text="Comma-separated.")
    subagent_settings = forms.JSONField(
        required=False,
        label="subagents (limits)",
        help_text="This agent's overrides of agents.defaults.subagents.*: maxSpawnDepth, "
        'maxChildrenPerAgent, runTimeoutSeconds, announceTimeoutMs, e.g. {"maxSpawnDepth": 2}.',
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
    )
    webhook_url = forms.URLField(
        required=False,
        label="webhook.url",
        help_text="Finished sends and spawns of this agent's sessions are POSTed here, signed "
        "with the secret below (docs/orchestration.md). Empty: none.",
        assume_scheme="https",
    )

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "description",
            "model",
            "backend",
            "allow_agents",
            "sandboxed",
            "tools_allow",
            "tools_deny",
            "subagent_settings",
            "webhook_url",
        ]

    def clean_id(self):
        agent_id = (self.cleaned_data.get("id") or "").strip()
        normalized = keys.normalize_agent_id(agent_id)
        if normalized != agent_id:
            raise forms.ValidationError(
                f"agent id must be lowercase letters, digits, - and _ (try {normalized})"
            )
        return agent_id

    def clean_backend(self):
        try:
            return clean_backend(self.cleaned_data.get("backend"))
        except InvalidArgument as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_webhook_url(self):
        # The same check upsert_agent makes (sessions_app/lib/outbound.py), shown on the field
        # instead of failing the save.
        url = self.cleaned_data.get("webhook_url") or ""
        try:
            clean_webhook({"url": url} if url else None)
        except InvalidArgument as exc:
            raise forms.ValidationError(exc.message) from None
        return url

    def clean_allow_agents(self):
        allow = self.cleaned_data.get("allow_agents") or []
        own_id = self.instance.pk or self.data.get("id", "")
        known = set(Agent.objects.values_list("id", flat=True)) | {own_id}
        unknown = [a for a in allow if a != "*" and keys.normalize_agent_id(a) not in known]
        if unknown:
            raise forms.ValidationError(
                f"Unknown agent id in subagents.allowAgents: {', '.join(unknown)} "
                '(use known agent ids or "*")'
            )
        return allow

    def api_data(self) -> dict[str, Any]:
        """The cleaned values in the shape `upsert_agent` takes (api.md §5)."""
        data = self.cleaned_data
        return {
            "name": data.get("name", ""),
            "description": data.get("description", ""),
            "model": data.get("model", ""),
            "backend": data.get("backend"),
            "subagents": {
                "allowAgents": data.get("allow_agents") or [],
                **(data.get("subagent_settings") or {}),
            },
            "sandboxed": bool(data.get("sandboxed")),
            "tools": {"allow": data.get("tools_allow") or [], "deny": data.get("tools_deny") or []},
            "webhook": {"url": data.get("webhook_url") or ""},
        }

    def clean_subagent_settings(self):
        value = self.cleaned_data.get("subagent_settings") or {}
        if not isinstance(value, dict):
            raise forms.ValidationError("subagents must be an object")
        try:
            return clean_subagent_settings(value)
        except InvalidArgument as exc:
            raise forms.ValidationError(exc.message) from None


# --- Gateway settings -----------------------------------------------------------------------


def setting_help(setting: config.Setting) -> str:
    parts = [setting.help] if setting.help else []
    if setting.kind == "int":
        parts.append(f"range: {setting.minimum}–{setting.maximum}.")
    default = setting.default
    if isinstance(default, bool):
        default = "true" if default else "false"
    elif isinstance(default, list | dict):
        default = json.dumps(default)
    parts.append(f"default: {default}")
    return " ".join(parts)


class GatewayConfigForm(forms.ModelForm):
    """Every setting labelled with its OpenClaw path and default. Ranges are not duplicated
    here: clean() asks config.clean_value, the check `update_config` applies when saving."""

    class Meta:
        model = GatewayConfig
        fields = [s.field for s in config.SETTINGS]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for setting in config.SETTINGS:
            common: dict[str, Any] = {"label": setting.path, "help_text": setting_help(setting)}
            field: forms.Field
            if setting.kind == "bool":
                field = forms.BooleanField(required=False, **common)
            elif setting.kind == "int":
                field = forms.IntegerField(**common)
            elif setting.kind == "choice":
                field = forms.ChoiceField(choices=[(c, c) for c in setting.choices], **common)
            elif setting.kind == "list":
                field = ListField(required=False, **common)
            elif setting.kind == "json":
                field = forms.JSONField(required=False, **common)
            elif setting.cleaner is not None:
                field = forms.CharField(required=False, **common)
            else:
                field = forms.CharField(**common)
            self.fields[setting.field] = field

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data  # what ModelForm.clean() returns, typed as never None
        for setting in config.SETTINGS:
            if setting.field not in cleaned:
                continue  # the field already has an error
            if cleaned[setting.field] is None:  # an emptied JSON field: the default
                cleaned[setting.field] = setting.default
                continue
            try:
                cleaned[setting.field] = config.clean_value(setting, cleaned[setting.field])
            except InvalidArgument as exc:
                self.add_error(setting.field, exc.message)
        return cleaned

    def changes(self) -> dict[str, Any]:
        """{OpenClaw path: value} of the settings this form changed, for update_config()."""
        return {
            s.path: self.cleaned_data[s.field]
            for s in config.SETTINGS
            if s.field in self.changed_data
        }


# --- API keys -------------------------------------------------------------------------------


class ApiKeyCreateForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["name", "scope", "agent", "session_key", "sandboxed"]

    def clean(self):
        """identity.api_key_fields decides, as for `create_api_key`; `key_fields` is what
        ApiKey.generate gets (the pinned session in canonical form)."""
        super().clean()
        cleaned = self.cleaned_data  # what ModelForm.clean() returns, typed as never None
        if not self.errors:
            given: dict[str, Any] = {name: cleaned.get(name) for name in self.Meta.fields}
            try:
                self.key_fields = api_key_fields(
                    **{k: v for k, v in given.items() if v not in (None, "")}
                )
            except InvalidArgument as exc:
                self.add_error(None, exc.message)
        return cleaned


class RefusedSaveMixin(ModelAdminMixin):
    """For a ModelAdmin whose save calls a function that may refuse (InvalidArgument): the forms
    passed but the function refused (a rule or row another operator changed meanwhile). Django's
    transaction for the save is rolled back, and the page says why instead of a server error."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except InvalidArgument as exc:
            self.message_user(request, f"Not saved: {exc.message}", messages.ERROR)
            return HttpResponseRedirect(request.path)
