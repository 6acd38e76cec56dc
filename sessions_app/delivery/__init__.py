"""Outbound messages: channels (how messages for one leave the service) and the delivery outbox
(one row per message, sent by a task after commit, retried by the sweep).

    models.py     ChannelConfig, Delivery (imported by sessions_app.models, where Django finds them)
    targets.py    announce_target(): where a session's messages go
    outbox.py     enqueue_delivery(), deliver() (the task), retry_due_deliveries(), retry_delivery()
    channels.py   save_channel(), delete_channels(): the writes of channel rows
    adapters/     one module per adapter (webchat, webhook, log) and the ADAPTERS registry

The names below are the package's public surface; runs, the sweep and the admin call these.
"""

from .adapters import ADAPTERS, Adapter, DeliveryFailed
from .channels import check_webhook_url, configured_channels, delete_channels, save_channel
from .outbox import (
    NO_ROUTE,
    TASK,
    deliver,
    enqueue_delivery,
    enqueue_webhook_event,
    retry_delivery,
    retry_due_deliveries,
)
from .targets import DeliveryTarget, announce_target

__all__ = [
    "ADAPTERS",
    "NO_ROUTE",
    "TASK",
    "Adapter",
    "DeliveryFailed",
    "DeliveryTarget",
    "announce_target",
    "check_webhook_url",
    "configured_channels",
    "deliver",
    "delete_channels",
    "enqueue_delivery",
    "enqueue_webhook_event",
    "retry_delivery",
    "retry_due_deliveries",
    "save_channel",
]
