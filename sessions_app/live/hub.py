"""The live hub: one per web process (per event loop), between the database and local clients.

Every round it reads what changed and hands it to the clients that follow it:
- transcripts: messages with `seq` above the lowest cursor of the clients following a session,
  read once per session and shared by every client (500 subscribers cost one query);
- session lifecycle (`sessions.changed`): sessions whose `changed_ms` moved, filtered per
  client by the same visibility rules as sessions_list.
Every AUTH_RECHECK_SECONDS it also reads who may still be connected: a revoked key or a
deactivated user is closed (4401), and a client whose visibility changed (gateway settings, a
sandbox flag) gets its new policy, or is closed (4403) if it follows a session it may no longer
read.

A round starts when a hint arrives (a local write, or Redis from another process) and at least
every POLL_SECONDS. Hints carry no data that matters: the database is read every time, so a
lost hint costs at most one poll interval, and a duplicated one costs one cheap query.

All database work runs on one dedicated thread (its own connection); the event loop never
blocks on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import orjson
from django.conf import settings
from django.db import close_old_connections

from openclaw_common import keys

from .. import rows, transcript
from ..access import visibility
from ..access.resolve import forbidden_text
from ..access.visibility import can_list
from ..lib import hints, sanitize
from ..models import Agent, ApiKey, GatewayConfig, Message, Run, Session, now_ms
from ..runs import subagent_tasks
from . import limits
from .subscribers import Event, Followed, Subscriber

log = logging.getLogger("openclaw.live")

# A change is looked for again this long after its changed_ms, so a transaction that committed
# late (its changed_ms older than one already seen) is still found by the timer round.
LOOKBACK_MS = 5000
TOOL_RESULT = transcript.TOOL_RESULT
_ROW_FIELDS = (*rows.ROW_FIELDS, "changed_ms", "change_reason")
# The hints that can mean a sub-agent changed state (a child session created, a run of it
# queued, started or finished).
CHILD_REASONS = ("created", "run")


class ChangedSession(NamedTuple):
    """A session whose changed_ms moved, with its `sessions.changed` event serialised once."""

    row: rows.SessionRow
    changed_ms: int
    payload: str


class Hub:
    _hubs: dict[asyncio.AbstractEventLoop, Hub] = {}

    @classmethod
    def current(cls) -> Hub:
        loop = asyncio.get_running_loop()
        hub = cls._hubs.get(loop)
        if hub is None or hub.stopped:
            hub = cls._hubs[loop] = cls(loop)
        return hub

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.stopped = False
        self.subscribers: set[Subscriber] = set()
        self.by_session: dict[int, set[Subscriber]] = {}
        self.change_subscribers: set[Subscriber] = set()
        self.latest_seq: dict[int, int] = {}  # session pk → newest seq known to exist
        self.hinted: list[tuple] = []
        self.changes_since = now_ms()  # lifecycle events start from the hub's start
        self.seen_changes: dict[int, int] = {}  # session pk → changed_ms already announced
        # Sub-agents of followed sessions: the newest child change read, and each child's
        # state as last handed out (parent pk → child pk → state), so a state goes out once.
        self.children_seen_ms = now_ms()
        self.child_states: dict[int, dict[int, str]] = {}
        self.next_auth_check = 0.0
        self._wake = asyncio.Event()
        self._db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="live-hub")
        self._tasks = [loop.create_task(self._run(), name="live-hub")]
        if settings.REDIS_URL:
            self._tasks.append(loop.create_task(self._listen(), name="live-hub-redis"))
        hints.register_local(self)

    # --- called by transports ---------------------------------------------------------------

    def add(self, subscriber: Subscriber) -> None:
        subscriber.hub = self
        self.subscribers.add(subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)
        self.change_subscribers.discard(subscriber)
        for pk in list(subscriber.followed):
            self.unfollow(subscriber, pk)

    def follow(self, subscriber: Subscriber, followed: Followed) -> None:
        """Hand `subscriber` every message of the session after `followed.cursor`, in order."""
        subscriber.followed[followed.session_pk] = followed
        self.by_session.setdefault(followed.session_pk, set()).add(subscriber)
        self.wake()

    def unfollow(self, subscriber: Subscriber, session_pk: int) -> None:
        subscriber.followed.pop(session_pk, None)
        followers = self.by_session.get(session_pk)
        if followers is not None:
            followers.discard(subscriber)
            if not followers:
                del self.by_session[session_pk]
                self.latest_seq.pop(session_pk, None)
                self.child_states.pop(session_pk, None)

    def follow_changes(self, subscriber: Subscriber, on: bool = True) -> None:
        """`sessions.changed` events from now on (subscribing is not a replay)."""
        if on and not self.change_subscribers:
            self.changes_since, self.seen_changes = now_ms(), {}
        subscriber.follows_changes = on
        (self.change_subscribers.add if on else self.change_subscribers.discard)(subscriber)

    def wake(self) -> None:
        self._wake.set()

    def poke_threadsafe(self, batch: list[tuple]) -> None:
        """A hint from any thread of this process (hints.publish after a local commit)."""
        with contextlib.suppress(RuntimeError):  # the loop is closing
            self.loop.call_soon_threadsafe(self._poke, batch)

    def delta_threadsafe(self, session_pk: int, payload: dict) -> None:
        """Streaming text of a session (hints.publish_delta), from any thread of this process."""
        with contextlib.suppress(RuntimeError):  # the loop is closing
            self.loop.call_soon_threadsafe(self._delta, session_pk, payload)

    def _delta(self, session_pk: int, payload: dict) -> None:
        """To each follower of the session at once: a delta is no row, so there is no cursor to
        move and nothing to replay. A follower already behind (stalled) skips it; it reads the
        stored message when it catches up."""
        followers = self.by_session.get(session_pk)
        if not followers:
            return
        event = Event("session.delta", orjson.dumps(payload).decode(), None, session_pk)
        for subscriber in list(followers):
            if not subscriber.stalled and session_pk in subscriber.followed:
                subscriber.offer(event)

    def _poke(self, batch) -> None:
        self.hinted.extend(tuple(h) for h in batch)
        self._wake.set()

    async def stop(self) -> None:
        self.stopped = True
        hints.unregister_local(self)
        for task in self._tasks:
            task.cancel()
        # A cancelled Redis receive can take a while to unwind; don't hold shutdown for it.
        await asyncio.wait(self._tasks, timeout=2)
        self._db.shutdown(wait=False)
        if self._hubs.get(self.loop) is self:
            del self._hubs[self.loop]

    # --- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            timer = False
            try:
                await asyncio.wait_for(self._wake.wait(), self._next_timeout())
            except TimeoutError:
                timer = True
            self._wake.clear()
            batch, self.hinted = self.hinted, []
            try:
                await self._round(batch, timer=timer)
            except asyncio.CancelledError:
                raise
            except Exception:
                # The database is down or locked: keep the clients and try again shortly.
                log.warning("live hub round failed", exc_info=True)
                self.hinted.extend(batch)
                await asyncio.sleep(0.5)

    def _next_timeout(self) -> float:
        """The poll interval, or less if a stalled client is due to be cut off sooner."""
        timeout = limits.poll_seconds()
        stalled = [s.stalled_since for s in self.subscribers if s.stalled_since is not None]
        if stalled:
            due = min(stalled) + limits.get("STALL_SECONDS") - time.monotonic()
            timeout = min(timeout, max(0.01, due + 0.01))
        return timeout

    async def _listen(self) -> None:
        """Hints from other processes, through the Redis channel layer."""
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        while True:
            try:
                channel = await layer.new_channel("live-hub.")
                await layer.group_add(hints.GROUP, channel)
                renew_at = time.monotonic() + 3600  # group membership expires after a day
                while time.monotonic() < renew_at:
                    message = await layer.receive(channel)
                    self._poke(message.get("hints") or [])
                    if message.get("deltas") and message.get("origin") != hints.origin():
                        for session_pk, payload in message["deltas"]:
                            self._delta(session_pk, payload)
                await layer.group_discard(hints.GROUP, channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("live hints from Redis interrupted; polling meanwhile", exc_info=True)
                await asyncio.sleep(1.0)

    async def _round(self, batch: list[tuple], *, timer: bool) -> None:
        for pk, _reason, last_seq in batch:
            if last_seq is not None and pk in self.by_session:
                self.latest_seq[pk] = max(self.latest_seq.get(pk, 0), last_seq)
        hinted_pks = {h[0] for h in batch}
        # Sessions whose newest seq must be read first (new followers; every timer round, in
        # case a hint was lost), and sessions known to hold messages some follower lacks.
        unknown = {}
        wanted = {}
        for pk in self.by_session:
            cursor = self._lowest_cursor(pk)
            if cursor is None:
                continue
            if timer or pk not in self.latest_seq:
                unknown[pk] = cursor
            elif cursor < self.latest_seq[pk]:
                wanted[pk] = cursor
        changes = bool(self.change_subscribers) and (timer or bool(hinted_pks))
        auth = self._auth_targets() if self._auth_due() else None
        children = self._children_query({h[0] for h in batch if h[1] in CHILD_REASONS}, timer=timer)
        if unknown or wanted or changes or auth is not None or children is not None:
            since = max(self.changes_since, max(self.seen_changes.values(), default=0))
            result = await self.loop.run_in_executor(
                self._db,
                _read,
                unknown,
                wanted,
                {pk: self._display_key(pk) for pk in (*unknown, *wanted)},
                sorted(hinted_pks) if changes and not timer else None,
                since if changes and timer else None,
                auth,
                children,
            )
            self._deliver(result)
        self._cut_stalled()

    def _children_query(self, hinted_pks: set[int], *, timer: bool) -> ChildrenQuery | None:
        """What to read for the sub-agents of followed sessions: on a timer round every child
        changed since the last one seen (a worker's hint may not reach this process), else the
        hinted sessions that turn out to be children of a followed session."""
        if not self.by_session or not (timer or hinted_pks):
            return None
        parents = {}
        for pk, followers in self.by_session.items():
            followed = next((s.followed[pk] for s in followers if pk in s.followed), None)
            if followed is not None:
                parents[pk] = (followed.canonical, followed.key)
        if not parents:
            return None
        return ChildrenQuery(
            parents,
            None if timer else sorted(hinted_pks),
            self.children_seen_ms - LOOKBACK_MS if timer else None,
        )

    def _display_key(self, pk: int) -> str | None:
        for subscriber in self.by_session.get(pk, ()):
            followed = subscriber.followed.get(pk)
            if followed is not None:
                return followed.key
        return None

    def _lowest_cursor(self, pk: int) -> int | None:
        """The lowest cursor among the session's followers that can take more, if any."""
        cursors = [
            s.followed[pk].cursor
            for s in self.by_session.get(pk, ())
            if pk in s.followed and not s.stalled
        ]
        return min(cursors) if cursors else None

    # --- back on the loop ----------------------------------------------------------------------

    def _deliver(self, result: dict) -> None:
        for pk, latest in result["latest"].items():
            if pk in self.by_session:
                self.latest_seq[pk] = max(self.latest_seq.get(pk, 0), latest)
        for pk, events in result["messages"].items():
            self._hand_out(pk, events)
        for row, changed_ms, payload in result["changes"]:
            if changed_ms <= max(self.changes_since, self.seen_changes.get(row.pk, 0)):
                continue
            self.seen_changes[row.pk] = changed_ms
            event = Event("sessions.changed", payload)
            for subscriber in list(self.change_subscribers):
                if _visible(subscriber, row) and not subscriber.offer(event):
                    # Lifecycle events cannot be replayed by seq: a client that cannot keep up
                    # reconnects and lists again.
                    subscriber.close(4008, "slow consumer: too many unread events")
        if result["changes"]:
            horizon = max(self.seen_changes.values()) - 2 * LOOKBACK_MS
            self.seen_changes = {k: v for k, v in self.seen_changes.items() if v >= horizon}
        for change in result["children"]:
            self._hand_out_child(change)
        if result["access"] is not None:
            self.next_auth_check = time.monotonic() + limits.get("AUTH_RECHECK_SECONDS")
            for subscriber in list(self.subscribers):
                _recheck(subscriber, result["access"])

    def _hand_out(self, pk: int, events: list[tuple[int, str, Event]]) -> None:
        if not events:
            return
        last = events[-1][0]
        self.latest_seq[pk] = max(self.latest_seq.get(pk, 0), last)
        for subscriber in list(self.by_session.get(pk, ())):
            followed = subscriber.followed.get(pk)
            if followed is None or subscriber.stalled:
                continue
            for seq, role, event in events:
                if seq <= followed.cursor:
                    continue
                if role == TOOL_RESULT and not followed.include_tools:
                    followed.cursor = seq
                    continue
                if not subscriber.offer(event):
                    break
                followed.cursor = seq
        if len(events) >= limits.get("BATCH_MESSAGES"):
            self.wake()  # a long catch-up: the next round reads on

    def _hand_out_child(self, change: ChildChange) -> None:
        """A sub-agent's new state to every follower of its parent, once per state."""
        self.children_seen_ms = max(self.children_seen_ms, change.changed_ms)
        followers = self.by_session.get(change.parent_pk)
        if not followers:
            return
        known = self.child_states.setdefault(change.parent_pk, {})
        if known.get(change.child_pk) == change.state:
            return
        known[change.child_pk] = change.state
        event = Event("session.subagent", change.payload, None, change.parent_pk)
        for subscriber in list(followers):
            if not subscriber.offer(event):
                # Not replayable by seq: a client this far behind reconnects and asks
                # `subagents list` for the current states.
                subscriber.close(4008, "slow consumer: too many unread events")

    def _cut_stalled(self) -> None:
        limit = limits.get("STALL_SECONDS")
        now = time.monotonic()
        for subscriber in list(self.subscribers):
            if subscriber.stalled_since is not None and now - subscriber.stalled_since > limit:
                subscriber.close(4008, "slow consumer", say_resume=True)

    def _auth_due(self) -> bool:
        return bool(self.subscribers) and time.monotonic() >= self.next_auth_check

    def _auth_targets(self) -> tuple[set[int], set[int], set[str]]:
        key_ids: set[int] = set()
        agent_ids: set[str] = set()
        for s in self.subscribers:
            if s.api_key_id is not None and s.requester is not None:  # identified together
                key_ids.add(s.api_key_id)
                agent_ids.add(s.requester.agent_id)
        user_ids = {s.user_id for s in self.subscribers if s.user_id is not None}
        return key_ids, user_ids, agent_ids


@dataclass(frozen=True)
class Access:
    """What the periodic check read: who may still be connected, and what visibility uses."""

    key_sandboxed: dict[int, bool]  # usable key id → the key's own sandbox flag
    users: set[int]  # active users who may still view sessions
    agent_sandboxed: dict[str, bool]
    config: GatewayConfig
    # What was asked: a connection identified after the snapshot is not in these, and waits
    # for the next check (it would otherwise read as revoked, or as not sandboxed).
    asked: tuple[frozenset[int], frozenset[int], frozenset[str]] = (
        frozenset(),
        frozenset(),
        frozenset(),
    )


def _recheck(subscriber: Subscriber, access: Access) -> None:
    key_ids, user_ids, agent_ids = access.asked
    requester = subscriber.requester
    if requester is None:
        return  # not authenticated yet (identify() sets the key or user with the requester)
    if subscriber.user_id is not None and subscriber.user_id not in user_ids:
        return
    if subscriber.api_key_id is not None and (
        subscriber.api_key_id not in key_ids or requester.agent_id not in agent_ids
    ):
        return
    if subscriber.user_id is not None:
        # Team members read every session (identity.requester_for_user): only their account
        # and its permission matter.
        if subscriber.user_id not in access.users:
            subscriber.close(4401, "access revoked")
        return
    if subscriber.api_key_id is None:
        return  # not authenticated yet
    if subscriber.api_key_id not in access.key_sandboxed:
        subscriber.close(4401, "access revoked")
        return
    sandboxed = access.key_sandboxed[subscriber.api_key_id] or access.agent_sandboxed.get(
        requester.agent_id, False
    )
    fresh = replace(requester, config=access.config, sandboxed=sandboxed)
    if (
        sandboxed
        and not requester.sandboxed
        and requester.home_key
        and requester.session_key != requester.home_key
    ):
        # Sandboxed since it connected, acting as a session other than its default: closed, to
        # connect again under the sandbox's rules (identity.requester_for).
        subscriber.close(4403, "access revoked: sandboxed")
        return
    policy = visibility.policy_for(fresh)
    if policy == subscriber.policy:
        return
    subscriber.identify(fresh, api_key_id=subscriber.api_key_id)
    # Lifecycle events are filtered with the new policy from now on; a followed transcript the
    # client may no longer read ends its connection (it learns why when it subscribes again).
    for followed in subscriber.followed.values():
        denied = forbidden_text(
            policy,
            followed.key,
            canonical=followed.canonical,
            spawned_by=followed.spawned_by,
            action="history",
        )
        if denied:
            subscriber.close(4403, "access revoked: visibility changed")
            return


# --- database side: these run on the hub's thread, on snapshots the loop passed in ------------


class ChildrenQuery(NamedTuple):
    """Which sub-agent changes a round reads (Hub._children_query)."""

    parents: dict[int, tuple[str, str]]  # followed session pk → (stored key, display key)
    hinted: list[int] | None  # sessions hinted since the last round, or None (a timer round)
    since_ms: int | None  # a timer round: children whose changed_ms is above this


class ChildChange(NamedTuple):
    parent_pk: int
    child_pk: int
    changed_ms: int
    state: str  # queued | started | waiting | finished | cancelled
    payload: str


def _read(
    unknown: dict,
    wanted: dict,
    display_keys: dict,
    changed_pks,
    sweep_since,
    auth,
    children: ChildrenQuery | None = None,
) -> dict:
    close_old_connections()
    try:
        out: dict[str, Any] = {
            "latest": {},
            "messages": {},
            "changes": [],
            "access": None,
            "children": [],
        }
        if unknown:
            out["latest"] = dict(
                Session.objects.filter(pk__in=list(unknown)).values_list("pk", "last_seq")
            )
            for pk, latest in out["latest"].items():
                if unknown[pk] < latest:
                    wanted[pk] = unknown[pk]
        batch = limits.get("BATCH_MESSAGES")
        for pk, after in wanted.items():
            out["messages"][pk] = _message_events(pk, after, batch, display_keys.get(pk))
        if changed_pks is not None:
            out["changes"] = _changed_rows(Session.objects.filter(pk__in=changed_pks))
        elif sweep_since is not None:
            since = sweep_since - LOOKBACK_MS
            out["changes"] = _changed_rows(Session.objects.filter(changed_ms__gt=since))
        if children is not None:
            out["children"] = _child_changes(children)
        if auth is not None:
            out["access"] = _access(*auth)
        return out
    finally:
        close_old_connections()


def _changed_rows(queryset) -> list[ChangedSession]:
    """Each session with its sessions_list row, as the event carries it."""
    settings_ = GatewayConfig.load().key_settings
    make = rows.SessionRow._make
    out = []
    for values in queryset.order_by("changed_ms").values_list(*_ROW_FIELDS)[:1000]:
        # No children and no stateVersion: the event's row lists neither (sessions_list does).
        row = make(values[:-2] + ((), 0))
        changed_ms, reason = values[-2:]
        payload = {
            "key": keys.display_key(row.key, settings_),
            "reason": reason or "updated",
            "session": rows.session_row(row, settings=settings_),
        }
        out.append(ChangedSession(row, changed_ms, orjson.dumps(payload).decode()))
    return out


def _child_changes(query: ChildrenQuery) -> list[ChildChange]:
    """The current state of each child of a followed session that changed (a run queued,
    started, finished; a task that waits or was stopped), oldest change first. The child
    session's changed_ms moves with each of those (engine, completions)."""
    by_key = {stored: pk for pk, (stored, _display) in query.parents.items()}
    found = Session.objects.filter(spawned_by__in=list(by_key))
    if query.hinted is not None:
        found = found.filter(pk__in=query.hinted)
    else:
        found = found.filter(changed_ms__gt=query.since_ms)
    changed = dict(found.order_by("changed_ms").values_list("pk", "changed_ms")[:1000])
    if not changed:
        return []
    spawns = Run.objects.filter(kind="spawn", session_id__in=list(changed)).select_related(
        "session"
    )
    settings_ = GatewayConfig.load().key_settings
    out = []
    for task in subagent_tasks.build(list(spawns)):
        parent_pk = by_key.get(task.session.spawned_by)
        if parent_pk is None:
            continue
        state = child_state(task)
        payload = {
            "sessionKey": query.parents[parent_pk][1],
            "childSessionKey": keys.display_key(task.session.key, settings_),
            "taskId": task.task_id,
            "label": task.run.label or "",
            "state": state,
            "status": task.status,
            "deliveryStatus": task.delivery_status,
        }
        out.append(
            ChildChange(
                parent_pk,
                task.session.pk,
                changed[task.session.pk],
                state,
                orjson.dumps(payload).decode(),
            )
        )
    return sorted(out, key=lambda c: c.changed_ms)


def child_state(task: subagent_tasks.Task) -> str:
    """The state a live client sees: queued, started, waiting, finished or cancelled."""
    if task.ended:
        return "cancelled" if task.status == "cancelled" else "finished"
    return "started" if task.state == "running" else task.state


def _visible(subscriber: Subscriber, row: rows.SessionRow) -> bool:
    # Only an identified client follows changes (Connection.call refuses the others first).
    assert subscriber.policy is not None
    return can_list(
        subscriber.policy, key=row.key, agent_id=row.agent_id, spawned_by=row.spawned_by
    )


def _message_events(
    session_pk: int, after: int, limit: int, session_key: str | None
) -> list[tuple[int, str | None, Event]]:
    """(seq, role, event) for messages after `after`: projected and sanitised once, as
    sessions_history does, and serialised once for every client."""
    found = transcript.message_rows(
        Message.objects.filter(session_id=session_pk, seq__gt=after).order_by("seq")[:limit]
    )
    out = []
    for row in found:
        if session_key is None:
            key = Session.objects.values_list("key", flat=True).get(pk=session_pk)
            session_key = keys.display_key(key, GatewayConfig.load().key_settings)
        seq = row.seq
        try:
            message = sanitize.sanitize_message(
                row.payload(), sanitize.Flags(), scan=row.scan_needed
            )
            payload = orjson.dumps(
                {"sessionKey": session_key, "messageSeq": seq, "message": message}
            )
        except (orjson.JSONEncodeError, RecursionError, TypeError, ValueError) as exc:
            # One message this process cannot encode (nested past orjson's limit, stored before
            # the depth limit) must not stop every other session's events: a placeholder.
            log.warning("live: message %s of session %s not encodable: %s", seq, session_pk, exc)
            message = {"role": row.role}
            payload = _placeholder(session_key, seq, row.role, NOT_ENCODABLE_PLACEHOLDER)
        else:
            if len(payload) > limits.get("MAX_EVENT_BYTES"):
                payload = _placeholder(
                    session_key, seq, message.get("role"), sanitize.TOO_LARGE_PLACEHOLDER
                )
        event = Event("session.message", payload.decode(), seq, session_pk)
        out.append((seq, message.get("role"), event))
    return out


NOT_ENCODABLE_PLACEHOLDER = sanitize.NOT_ENCODABLE_PLACEHOLDER


def _placeholder(session_key: str, seq: int, role: str | None, text: str) -> bytes:
    return orjson.dumps(
        {
            "sessionKey": session_key,
            "messageSeq": seq,
            "message": {"role": role, "content": text, "__openclaw": {"seq": seq}},
        }
    )


def _access(key_ids: set[int], user_ids: set[int], agent_ids: set[str]) -> Access:
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    key_sandboxed = dict(
        ApiKey.objects.usable().filter(pk__in=key_ids).values_list("pk", "sandboxed")
    )
    users = set()
    if user_ids:
        # ModelBackend's rule for view_session, as one query.
        perm = {"codename": "view_session", "content_type__app_label": "sessions_app"}
        users = set(
            get_user_model()
            .objects.filter(pk__in=user_ids, is_active=True)
            .filter(
                Q(is_superuser=True)
                | Q(**{f"user_permissions__{k}": v for k, v in perm.items()})
                | Q(**{f"groups__permissions__{k}": v for k, v in perm.items()})
            )
            .values_list("pk", flat=True)
        )
    agent_sandboxed = {}
    if agent_ids:
        agent_sandboxed = dict(
            Agent.objects.filter(pk__in=agent_ids).values_list("pk", "sandboxed")
        )
    asked = (frozenset(key_ids), frozenset(user_ids), frozenset(agent_ids))
    return Access(key_sandboxed, users, agent_sandboxed, GatewayConfig.load(), asked)
