from __future__ import annotations

from .base import Adapter


class Webchat(Adapter):
    """The message is already in the session's transcript, and live clients are pushed from
    there: nothing more to send."""

    name = "webchat"

    def send(self, delivery) -> None:
        return None
