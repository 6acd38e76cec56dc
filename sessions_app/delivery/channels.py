"""Writing channel rows (how messages for a channel leave the service): the functions the admin
calls, and a command or API would (STYLE.md rule 1)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from openclaw_common.errors import InvalidArgument

from ..lib import outbound
from ..models import ChannelConfig
from .adapters import channel_adapters

MAX_ATTEMPTS_LIMIT = 32767  # PositiveSmallIntegerField on every backend


def save_channel(
    *,
    channel: str,
    adapter: str,
    webhook_url: str = "",
    max_attempts: int = ChannelConfig.DEFAULT_MAX_ATTEMPTS,
    channel_id: int | None = None,
) -> ChannelConfig:
    """Create a channel row, or change the row `channel_id`. The name is stored lowercased;
    `adapter` is the name of a registered channel adapter (adapters.channel_adapters()); a webhook channel needs an
    http(s) `webhook_url`. Raises InvalidArgument naming the field."""
    name = (channel or "").strip().lower() if isinstance(channel, str) else None
    if not name:
        raise InvalidArgument("channel must be a non-empty name")
    allowed = channel_adapters()
    if not isinstance(adapter, str) or adapter not in allowed:
        raise InvalidArgument(f"adapter must be one of {', '.join(allowed)}")
    if (
        isinstance(max_attempts, bool)
        or not isinstance(max_attempts, int)
        or not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT
    ):
        raise InvalidArgument(f"max_attempts must be a whole number from 1 to {MAX_ATTEMPTS_LIMIT}")
    check_webhook_url(adapter, webhook_url)
    with transaction.atomic():
        row = (
            ChannelConfig()
            if channel_id is None
            else ChannelConfig.objects.select_for_update().filter(pk=channel_id).first()
        )
        if row is None:
            raise InvalidArgument(f"channel row {channel_id} does not exist")
        row.channel, row.adapter = name, adapter
        row.webhook_url, row.max_attempts = webhook_url or "", max_attempts
        try:
            # Field lengths, the URL's scheme and the unique name, with Django's messages.
            row.full_clean()
        except ValidationError as exc:
            raise InvalidArgument(_first_message(exc)) from None
        row.save()
    return row


def check_webhook_url(adapter: str | None, webhook_url: str | None) -> None:
    """A webhook channel needs somewhere to send to (the admin form shows this on its field)."""
    if adapter == ChannelConfig.WEBHOOK and not webhook_url:
        raise InvalidArgument("A webhook channel needs a webhook URL.")
    refused = outbound.check_saved_url(webhook_url) if webhook_url else None
    if refused:
        raise InvalidArgument(f"webhook_url: {refused}")


def configured_channels() -> list[str]:
    """The names of the channels that have a row. The send-policy editor takes them as known
    channels besides OpenClaw's (policies_app.editing cannot look here itself)."""
    return list(ChannelConfig.objects.values_list("channel", flat=True))


def delete_channels(channel_ids: list[int]) -> int:
    """Delete channel rows; their channels fall back to the default adapter. How many went."""
    deleted, _ = ChannelConfig.objects.filter(pk__in=channel_ids).delete()
    return deleted


def _first_message(error: ValidationError) -> str:
    fields: dict[str, Any] = getattr(error, "message_dict", {})
    for name, texts in fields.items():
        return f"{name}: {texts[0]}"
    return error.messages[0]
