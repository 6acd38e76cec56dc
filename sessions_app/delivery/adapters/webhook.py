from __future__ import annotations

import json
import urllib.error
import urllib.request

from ..models import ChannelConfig
from .base import Adapter, DeliveryFailed

TIMEOUT_SECONDS = 10  # below Delivery.CLAIM_LEASE_SECONDS: an attempt in flight is not retried


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would follow a 301/302 by re-sending the POST as a GET without the body, and the
    # 200 of that GET would count as delivered. A redirect is a failed attempt instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


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
    """POST `body` as JSON; returns on a 2xx, raises DeliveryFailed otherwise."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "openclaw-sessions",
            **headers,
        },
    )
    try:
        with _opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the open response
            detail = exc.read(200).decode("utf-8", "replace").strip()
        raise DeliveryFailed(f"HTTP {exc.code}" + (f": {detail}" if detail else "")) from None
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, bad URLs
        reason = getattr(exc, "reason", exc)
        raise DeliveryFailed(f"webhook unreachable: {reason}") from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}")
