"""Waking a main-session watcher (9.6 §2.2: "main-session watchers are woken at once").
send_modes.notify_watchers queues the notice and names this function to call after its commit;
the run engine is above the watchers, so they name it rather than import it.
"""

from __future__ import annotations

import uuid

from django.db import transaction

from .. import send_modes
from ..models import Run, Session, SessionNotification
from .chain import Chain
from .engine import start_run
from .provenance import inter_session


def wake(watcher_pk: int, target_key: str) -> Run | None:
    """Give a main-session watcher a turn now that `target_key` changed (9.6 §2.2: "main-session
    watchers are woken at once"): a serial run (after any turn in flight) whose turn reads the
    notice with its notifications. None when there is nothing to do: the notice was read
    meanwhile, or a queued turn will read it when it starts (one wake however many notices)."""
    with transaction.atomic():
        watcher = Session.objects.select_for_update().filter(pk=watcher_pk).first()
        if watcher is None or watcher.archived_at is not None:
            return None
        if not SessionNotification.objects.filter(session=watcher, source_key=target_key).exists():
            return None
        if Run.objects.filter(session=watcher, status=Run.QUEUED).exists():
            return None
        return start_run(
            session=watcher,
            kind="send",
            message=send_modes.WAKE_MESSAGE,
            chain=Chain(uuid.uuid4(), (watcher.agent_id,)),
            provenance=inter_session(target_key, send_modes.WAKE_TOOL, channel="internal"),
            requester_key=target_key,
            serial=True,
        )
