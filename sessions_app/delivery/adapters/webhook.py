from __future__ import annotations

import json

from ...lib import outbound
from ...models import ChannelConfig
from .base import Adapter, DeliveryFailed, DeliveryRefused

TIMEOUT_SECONDS = 10  # below Delivery.CLAIM_LEASE_SECONDS: an attempt in flight is not retried
MAX_ANSWER_BYTES = 1024 * 1024  # a receiver's answer is read (and dropped) up to this size


class Webhook(Adapter):
    """POSTs the message as JSON to the channel's `webhook_url`; any 2xx is delivered. The body
    carries `deliveryId`, so a receiver can drop the repeats of at-least-once delivery."""

    name = "webhook"

    def send(self, delivery) -> None:
        url = ChannelConfig.for_channel(delivery.channel).webhook_url
        if not url.lower().startswith(("http://", "https://")):
            raise DeliveryFailed(f"no webhook URL configured for channel {delivery.channel!r}")
        body = json.dumps(
            {
                "deliveryId": delivery.pk,
                "sessionKey": delivery.session.key,
                "channel": delivery.channel,
                "to": delivery.to,
                "accountId": delivery.account_id or None,
                "threadId": delivery.thread_id or None,
                "text": delivery.text,
                "kind": delivery.kind,
            }
        ).encode()
        post_json(url, body, {})


def post_json(url: str, body: bytes, headers: dict[str, str]) -> None:
    """POST `body` as JSON through the outbound policy (sessions_app/lib/outbound.py); returns on a
    2xx, raises DeliveryFailed otherwise. A redirect is a failed attempt (never followed: urllib
    would re-send the POST as a GET without the body, and a 200 of that would count as
    delivered). `last_error` says what came back, never the receiver's body. A URL the
    outbound policy refuses is DeliveryRefused: failed at once."""
    try:
        response = outbound.post(
            url,
            body,
            {"Content-Type": "application/json", "User-Agent": "openclaw-sessions", **headers},
            timeout=TIMEOUT_SECONDS,
            max_bytes=MAX_ANSWER_BYTES,
        )
    except outbound.Unresolved as exc:
        raise DeliveryFailed(f"webhook unreachable: {exc}") from None
    except outbound.OutboundRefused as exc:
        # The policy answers the same on every attempt (issue 28: five attempts, ~30 s of
        # backoff, for the same refusal).
        raise DeliveryRefused(f"webhook refused: {exc}") from None
    except outbound.OutboundFailed as exc:
        raise DeliveryFailed(f"webhook unreachable: {exc}") from None
    if not 200 <= response.status < 300:
        raise DeliveryFailed(response.describe())
