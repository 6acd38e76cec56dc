"""Admin forms for the send policy: field checks with messages that name the field.

The rule checks live in `editing.py`, where `save_send_policy()` applies them again; the forms
only put their messages on the right field."""

from __future__ import annotations

from django import forms

from openclaw_common.errors import InvalidArgument

from . import editing
from .models import SendPolicy, SendPolicyRule


def _checked(check, *args, **kwargs):
    """Run one of editing's field checks; its message becomes the form field's error."""
    try:
        return check(*args, **kwargs)
    except InvalidArgument as exc:
        raise forms.ValidationError(exc.message) from None


class SendPolicyForm(forms.ModelForm):
    """The switch and the default; the rules come from the inline. `change_note` is not a
    column of the policy: it goes into the history row of this save."""

    change_note = forms.CharField(
        required=False,
        max_length=editing.MAX_CHANGE_NOTE,
        label="Why (for the history)",
        help_text="Optional: a few words on why you changed the policy.",
        widget=forms.TextInput(attrs={"size": 60}),
    )

    class Meta:
        model = SendPolicy
        fields = ["enabled", "default_action"]


class SendPolicyRuleForm(forms.ModelForm):
    # Free text rather than the model's choices, so `dm` and `supergroup` are accepted (and
    # stored as `direct` / `group`) and anything else gets a message naming the field.
    chat_type = forms.CharField(
        required=False,
        max_length=16,
        label="Chat type",
        help_text="direct (or dm), group (or supergroup), channel; blank matches any.",
        widget=forms.TextInput(attrs={"size": 8}),
    )

    class Meta:
        model = SendPolicyRule
        fields = list(editing.RULE_FIELDS)
        # Sized to their usual contents, so the rule table fits a laptop screen.
        widgets = {
            "position": forms.NumberInput(attrs={"style": "width: 4em"}),
            "channel": forms.TextInput(attrs={"size": 10}),
            "key_prefix": forms.TextInput(attrs={"size": 16}),
            "raw_key_prefix": forms.TextInput(attrs={"size": 16}),
            "note": forms.TextInput(attrs={"size": 22}),
        }

    def __init__(self, *args, known_channels: list[str] | None = None, **kwargs):
        # The channels a rule may name (editing.known_channels()); the admin passes them with
        # the configured ones, looked up once for all the rule rows of a save.
        super().__init__(*args, **kwargs)
        self.known_channels = known_channels

    # The same checks save_send_policy() applies, one field at a time.
    def clean_channel(self) -> str:
        value = self.cleaned_data.get("channel")
        return _checked(editing.clean_channel, value, known=self.known_channels)

    def clean_chat_type(self) -> str:
        return _checked(editing.clean_chat_type, self.cleaned_data.get("chat_type"))

    def clean_key_prefix(self) -> str:
        return _checked(
            editing.clean_prefix, "Key prefix", "key_prefix", self.cleaned_data.get("key_prefix")
        )

    def clean_raw_key_prefix(self) -> str:
        value = self.cleaned_data.get("raw_key_prefix")
        return _checked(editing.clean_prefix, "Raw key prefix", "raw_key_prefix", value)

    def rule_data(self) -> dict:
        """This row in the shape save_send_policy() takes (`id` None for a new row)."""
        data = self.cleaned_data
        return {
            "id": self.instance.pk,
            **{name: data.get(name) for name in editing.RULE_FIELDS},
        }
