from __future__ import annotations

import logging

from .base import Adapter

logger = logging.getLogger("openclaw.delivery")


class Log(Adapter):
    """Writes the message to the log: the default for a channel without a row, so nothing is
    lost while a channel has no real adapter yet."""

    name = "log"

    def send(self, delivery) -> None:
        logger.info(
            "delivery %s (%s) to %s:%s%s for %s: %s",
            delivery.pk,
            delivery.kind,
            delivery.channel,
            delivery.to,
            f" thread {delivery.thread_id}" if delivery.thread_id else "",
            delivery.session.key,
            delivery.text,
        )
