"""Where a message for a session goes (reference §4.6): its delivery context, else the place its
key names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Field

from openclaw_common import keys

from ..models import Delivery

_THREAD_SUFFIX = re.compile(r"^(?P<id>.+):(?:topic|thread):(?P<thread>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class DeliveryTarget:
    channel: str
    to: str
    account_id: str = ""
    thread_id: str = ""


def target_from_key(key: str) -> DeliveryTarget | None:
    """`resolveAnnounceTargetFromKey`: `<channel>:<group|channel>:<id>[:topic|thread:<n>]`.

    Only group and channel keys name a place to post; direct, main, cron … keys give None.
    """
    parts = keys.rest_of(key).split(":")
    if len(parts) < 3 or parts[1] not in ("group", "channel") or not parts[0]:
        return None
    channel, kind, peer = parts[0], parts[1], ":".join(parts[2:])
    thread_id = ""
    match = _THREAD_SUFFIX.match(peer)
    if match:
        peer, thread_id = match.group("id"), match.group("thread")
    if not peer:
        return None
    if channel in ("discord", "slack") or kind == "channel":
        to = f"channel:{peer}"
    else:
        to = f"group:{peer}"
    return DeliveryTarget(channel=channel, to=to, thread_id=thread_id)


def target_from_context(session) -> DeliveryTarget | None:
    """The session's delivery context (`last*` fields over `deliveryContext`, then `origin`);
    None unless it names both a channel and a recipient."""
    context = (
        keys.normalize_delivery_context(
            session.delivery_context,
            last_channel=session.last_channel,
            last_to=session.last_to,
            last_account_id=session.last_account_id,
            last_thread_id=session.last_thread_id,
        )
        or {}
    )
    origin = session.origin if isinstance(session.origin, dict) else {}

    def text(value) -> str:
        return str(value).strip() if isinstance(value, str | int) else ""

    channel = text(context.get("channel")) or text(origin.get("provider"))
    to = text(context.get("to"))
    if not channel or not to:
        return None
    return DeliveryTarget(
        channel=channel.lower(),
        to=to,
        account_id=text(context.get("accountId")) or text(origin.get("accountId")),
        thread_id=text(context.get("threadId")),
    )


def announce_target(session) -> DeliveryTarget | None:
    """Where a message for `session` goes: its delivery context if that names a channel and a
    recipient, else what its key names (group and channel keys), else None.

    Simplified from the reference, which prefers the key unless the channel plugin asks for a
    session lookup: the stored context is tried first because it also carries the account.
    """
    for target in (target_from_context(session), target_from_key(session.key)):
        if target is not None and _fits(target):
            return target
    return None


def _fits(target: DeliveryTarget) -> bool:
    # A recipient cut to fit its column would route elsewhere, so one that does not fit is no
    # route at all (and a DataError on PostgreSQL would break the caller's transaction).
    return all(
        len(getattr(target, name)) <= _max_length(name)
        for name in ("channel", "to", "account_id", "thread_id")
    )


def _max_length(column: str) -> int:
    field = Delivery._meta.get_field(column)
    assert isinstance(field, Field) and field.max_length is not None, column
    return field.max_length
