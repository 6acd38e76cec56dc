"""An agent's completion webhook (docs/orchestration.md, "Completion webhooks"): each finished
send or spawn that one of the agent's sessions asked for is POSTed to the URL an operator set on
the agent, signed with the agent's secret:

    X-OpenClaw-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>

The body is the event with `deliveryId` (at-least-once: receivers drop repeats by it). Never a
URL from a tool call: only `Agent.webhook_url`, read at send time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from ...models import Agent
from .base import Adapter, DeliveryFailed
from .webhook import post_json


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


class AgentWebhook(Adapter):
    name = "agent_webhook"
    for_channels = False  # not a channel's adapter: the admin does not offer it

    def send(self, delivery) -> None:
        agent = Agent.objects.filter(pk=delivery.to).only("webhook_url", "webhook_secret").first()
        if agent is None or not agent.webhook_url:
            raise DeliveryFailed(f"agent {delivery.to!r} has no webhook URL")
        body = json.dumps(
            {"deliveryId": delivery.pk, **json.loads(delivery.text)}, separators=(",", ":")
        ).encode()
        timestamp = int(time.time())
        post_json(
            agent.webhook_url,
            body,
            {
                "X-OpenClaw-Event": "run.finished",
                "X-OpenClaw-Signature": signature(agent.webhook_secret, timestamp, body),
            },
        )
