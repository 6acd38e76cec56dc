"""Admin forms for the send policy and channels: field checks with messages that name the field."""

from __future__ import annotations

from django import forms

from . import policy
from .models import ChannelConfig, SendPolicyRule

# Channels OpenClaw knows; any channel with a ChannelConfig row is known too.
KNOWN_CHANNELS = (
    "whatsapp",
    "telegram",
    "discord",
    "signal",
    "imessage",
    "webchat",
    "slack",
    "matrix",
    "msteams",
    "googlechat",
    "internal",
    "unknown",
)
CHAT_TYPE_WORDS = ("direct", "dm", "group", "supergroup", "channel")
EVERYTHING_WARNING = "This deny rule matches every session: it blocks everything."


def known_channels() -> list[str]:
    configured = ChannelConfig.objects.values_list("channel", flat=True)
    return sorted(set(KNOWN_CHANNELS) | set(configured))


class SendPolicyRuleForm(forms.ModelForm):
    # Free text rather than the model's choices, so `dm` and `supergroup` are accepted (and
    # stored as `direct` / `group`) and anything else gets a message naming the field.
    chat_type = forms.CharField(
        required=False,
        max_length=16,
        label="Chat type",
        help_text="direct (or dm), group (or supergroup), channel; blank matches any.",
    )

    class Meta:
        model = SendPolicyRule
        fields = [
            "position",
            "action",
            "channel",
            "chat_type",
            "key_prefix",
            "raw_key_prefix",
            "note",
        ]

    def clean_channel(self) -> str:
        channel = (self.cleaned_data.get("channel") or "").strip().lower()
        if channel:
            known = known_channels()
            if channel not in known:
                raise forms.ValidationError(
                    f"Channel: “{channel}” is not a known channel. Use one of: {', '.join(known)}"
                    " (or add a channel row first)."
                )
        return channel

    def clean_chat_type(self) -> str:
        value = (self.cleaned_data.get("chat_type") or "").strip().lower()
        if not value:
            return ""
        normalized = policy.normalize_chat_type(value)
        if not normalized:
            raise forms.ValidationError(
                f"Chat type: “{value}” is not a chat type. Use one of: {', '.join(CHAT_TYPE_WORDS)}."
            )
        return normalized

    def clean_key_prefix(self) -> str:
        return (self.cleaned_data.get("key_prefix") or "").strip()

    def clean_raw_key_prefix(self) -> str:
        return (self.cleaned_data.get("raw_key_prefix") or "").strip()


def blocks_everything(rule: SendPolicyRule) -> bool:
    """A deny rule with no match fields: legal, but it blocks every session without an override."""
    return rule.action == policy.DENY and rule.to_rule().is_empty_match


class ChannelConfigForm(forms.ModelForm):
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
        cleaned = super().clean()
        if cleaned.get("adapter") == ChannelConfig.WEBHOOK and not cleaned.get("webhook_url"):
            self.add_error("webhook_url", "A webhook channel needs a webhook URL.")
        return cleaned
