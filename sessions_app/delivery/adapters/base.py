"""What every channel adapter is: a class with a `name` and `send(delivery)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ...models import Delivery


class DeliveryFailed(Exception):
    """An adapter could not hand the message over; the attempt is retried with backoff."""


class DeliveryRefused(DeliveryFailed):
    """No attempt can succeed as things are configured (the outbound policy refuses the URL):
    the delivery is `failed` at once, not retried; an operator may retry it after a change."""


class Adapter:
    """One way for a channel's messages to leave the service.

    `name` is what `ChannelConfig.adapter` and `Delivery.adapter` store (at most 16 characters).
    `send()` is called once per attempt, from the `deliver` task or the sweep, outside any
    transaction: it returns when the message was handed over, and raises DeliveryFailed with a
    short reason when it was not (shown as the row's `last_error`), DeliveryRefused when no
    later attempt can do better. Any other exception counts
    as a failed attempt too, logged with its traceback. Attempts are at-least-once, so a
    receiver that can see `delivery.pk` should drop repeats by it.
    """

    name: ClassVar[str]
    for_channels: ClassVar[bool] = True  # offered for ChannelConfig rows

    def send(self, delivery: Delivery) -> None:
        raise NotImplementedError
