"""The channel adapters: how a message leaves the service. One module per adapter, one class
each (see base.Adapter), and one registry.

A new adapter is a module here and its class in ADAPTERS below: `ChannelConfig.adapter` has no
choices and no check constraint (both would be frozen into a migration), so save_channel() and
the admin's select read this registry instead, and no migration is needed.
"""

from __future__ import annotations

from .agent_webhook import AgentWebhook
from .base import Adapter, DeliveryFailed, DeliveryRefused
from .log import Log
from .webchat import Webchat
from .webhook import Webhook

# In this order in the admin's select and in save_channel()'s "adapter must be one of" text.
ADAPTERS: dict[str, type[Adapter]] = {
    cls.name: cls for cls in (Webchat, Webhook, Log, AgentWebhook)
}


def channel_adapters() -> list[str]:
    """What a channel may use (the agent webhook's deliveries are not a channel's), in order."""
    return [name for name, cls in ADAPTERS.items() if cls.for_channels]


def choices() -> list[tuple[str, str]]:
    """The channel adapters as form choices (name, label)."""
    return [(name, name) for name in channel_adapters()]


__all__ = [
    "ADAPTERS",
    "Adapter",
    "DeliveryFailed",
    "DeliveryRefused",
    "channel_adapters",
    "choices",
]
