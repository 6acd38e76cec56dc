"""Query-string and form parsing for the browser. Bad input is a form error (a 400 page)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import forms
from django.forms.utils import ErrorDict

from openclaw_common import keys

from ..reads.activity import RANGES as ACTIVITY_RANGES

ARCHIVED_CHOICES = [("", "Active"), ("true", "Archived"), ("all", "All")]
SUBAGENT_KIND = "subagent"  # not one of OpenClaw's kinds (theirs say `other`): the browser's own
KIND_CHOICES = [("", "Any kind")] + [(k, k) for k in keys.KINDS] + [(SUBAGENT_KIND, "sub-agent")]
# Suggestions for the channel box (any value is accepted): OpenClaw's channels plus the two the
# row derivation produces for sessions without one.
CHANNEL_SUGGESTIONS = (
    "discord",
    "telegram",
    "slack",
    "whatsapp",
    "signal",
    "imessage",
    "googlechat",
    "msteams",
    "matrix",
    "webchat",
    "internal",
    "unknown",
)
MAX_ACTIVE_MINUTES = 60 * 24 * 366 * 10
_CURSOR = re.compile(r"([0-9]{1,16})\.([0-9]{1,19})")
_AGENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.IGNORECASE)


@dataclass(frozen=True)
class Cursor:
    """Keyset position: the (updated_at, id) of the last row of the previous page."""

    updated_at: int
    id: int

    def __str__(self) -> str:
        return f"{self.updated_at}.{self.id}"


class ListFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    kind = forms.ChoiceField(required=False, choices=KIND_CHOICES)
    channel = forms.CharField(required=False, max_length=64)
    agent = forms.CharField(required=False, max_length=64)
    active = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ACTIVE_MINUTES, label="Active in last (min)"
    )
    archived = forms.ChoiceField(required=False, choices=ARCHIVED_CHOICES)
    # The URL's `errors` filter. Django's form metaclass moves declared fields into base_fields,
    # so on a form instance `errors` is still the error dict, which is what mypy is told.
    errors: ErrorDict = forms.BooleanField(  # type: ignore[assignment]
        required=False, label="Has errors"
    )
    after = forms.CharField(required=False, max_length=40)
    # The agents' activity charts' range (reads/activity.py), not a filter of the sessions.
    range = forms.ChoiceField(
        required=False, choices=[("", "24 hours")] + [(r, r) for r in ACTIVITY_RANGES]
    )

    def clean_channel(self) -> str:
        return self.cleaned_data["channel"].strip().lower()

    def clean_agent(self) -> str:
        value = self.cleaned_data["agent"].strip()
        if value and not _AGENT.fullmatch(value):
            raise forms.ValidationError("Not an agent id.")
        return value.lower()

    def clean_after(self) -> Cursor | None:
        value = self.cleaned_data["after"].strip()
        if not value:
            return None
        match = _CURSOR.fullmatch(value)
        if not match or int(match[2]) > 2**63 - 1:
            raise forms.ValidationError("Not a page cursor.")
        return Cursor(int(match[1]), int(match[2]))

    def filter_params(self) -> dict:
        """The filters (no cursor) as query parameters, for links that keep them."""
        data = self.cleaned_data
        params = {}
        for name in ("q", "kind", "channel", "agent", "archived"):
            if data.get(name):
                params[name] = data[name]
        if data.get("active"):
            params["active"] = data["active"]
        if data.get("errors"):
            params["errors"] = "1"
        return params


def parse_seq(raw: str | None, name: str, *, minimum: int = 1) -> int | None:
    """A message seq from a query parameter; ValueError with a message when not one."""
    if raw is None or raw == "":
        return None
    if not re.fullmatch(r"[0-9]{1,10}", raw) or int(raw) < minimum:
        kind = "a positive integer" if minimum else "a non-negative integer"
        raise ValueError(f"{name} must be {kind}")
    return int(raw)
