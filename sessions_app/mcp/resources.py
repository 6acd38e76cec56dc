"""Transcripts as MCP resources: `session://<session key>` (the key may be percent-encoded).

- `resources/list`: the sessions the key may see (sessions_list's rows, newest first, paged).
- `resources/read`: the transcript as sessions_history returns it (tool results included), JSON.
- Updates, in both protocol eras: `resources/subscribe` (2025 handshake era) sends
  `notifications/resources/updated` on the connection's standalone stream until the connection
  ends or `resources/unsubscribe`; `subscriptions/listen` (2026-07-28) sends them on the listen
  request's own stream until the client closes it.

Both follow the sessions with the live hub (live/hub.py: `Hub.current`, `add`, `follow`,
`remove`, the same public calls the SSE stream makes), so a subscription costs no query of its
own: the hub reads each changed transcript once for every follower in the process. Only
sessions the key may read are followed, and the hub closes a subscriber whose key is revoked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from openclaw_common import keys
from openclaw_common.errors import Refusal, ToolError

from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..lib.jsontext import dumps_pretty
from ..live.consumer import in_thread
from ..live.hub import Hub
from ..live.subscribers import Close, Event, Followed, Subscriber
from ..tools import TOOLS

SCHEME = "session://"
MIME = "application/json"
PAGE = 100
RESOURCE_NOT_FOUND = -32002  # MCP's code for an unknown resource

Caller = Callable[[ServerRequestContext[Any, Any]], Any]


def uri_of(key: str) -> str:
    return SCHEME + quote(key, safe=":@-._~+")


def key_of(uri: str) -> str:
    if not uri.startswith(SCHEME) or len(uri) == len(SCHEME):
        raise MCPError(RESOURCE_NOT_FOUND, f"Unknown resource {uri}: use session://<session key>")
    key = unquote(uri[len(SCHEME) :])
    if len(key) > keys.MAX_KEY_LENGTH:
        raise MCPError(
            types.INVALID_PARAMS, f"session key must be at most {keys.MAX_KEY_LENGTH} characters"
        )
    return key


async def _requester(caller: Caller, ctx) -> Requester:
    try:
        return await caller(ctx)
    except ToolError as exc:
        raise MCPError(types.INVALID_REQUEST, exc.message) from None


def _followed(requester: Requester, key: str) -> Followed:
    """The session behind `key` as a hub follow from its newest seq. Raises Refusal."""
    session = resolve_session(requester, key, action="history")
    display = keys.display_key(session.key, requester.key_settings)
    return Followed.of(session, display, session.last_seq, True)


async def updates(requester: Requester, followed: list[Followed]) -> AsyncIterator[str]:
    """The URI of each followed session whose transcript grew, one per burst, until the hub
    closes the subscriber (a revoked key) or the caller stops iterating."""
    hub = Hub.current()
    subscriber = Subscriber(requester, api_key_id=requester.api_key_id)
    hub.add(subscriber)
    for one in followed:
        hub.follow(subscriber, one)
    uris = {one.session_pk: uri_of(one.key) for one in followed}
    try:
        while True:
            item = await subscriber.next()
            changed: set[int] = set()
            while True:
                if isinstance(item, Close):
                    return
                # Only new messages change the transcript (a hub may send other events for a
                # followed session, e.g. its sub-agents' states).
                if (
                    isinstance(item, Event)
                    and item.name == "session.message"
                    and item.session_pk in uris
                ):
                    changed.add(item.session_pk)
                if subscriber.outbox.empty():
                    break
                item = subscriber.outbox.get_nowait()
            for pk in sorted(changed):
                yield uris[pk]
    finally:
        with contextlib.suppress(Exception):
            hub.remove(subscriber)


class TranscriptResources:
    """The Server's resource handlers, for one way of saying who calls (`caller`)."""

    def __init__(self, caller: Caller):
        self.caller = caller
        # Legacy-era subscriptions per connection: {uri: watcher task}. Keyed by the connection
        # object, which the SDK's request context does not expose yet (its TODO L54): read from
        # the session, with cleanup pushed on the connection's exit stack.
        self.watchers: dict[int, dict[str, asyncio.Task]] = {}

    async def on_list_resources(self, ctx, params) -> types.ListResourcesResult:
        requester = await _requester(self.caller, ctx)
        offset = int(params.cursor) if params and params.cursor and params.cursor.isdigit() else 0
        page = await in_thread(TOOLS.call)(
            "sessions_list", requester=requester, args={"limit": PAGE, "offset": offset}
        )
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=uri_of(row["key"]),
                    name=row["key"],
                    title=row.get("displayName") or row.get("label") or None,
                    description=f"Transcript of {row['key']} ({row['kind']}, {row['channel']})",
                    mime_type=MIME,
                )
                for row in page["sessions"]
            ],
            next_cursor=str(page["nextOffset"]) if page.get("hasMore") else None,
        )

    async def on_list_resource_templates(self, ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=SCHEME + "{sessionKey}",
                    name="transcript",
                    description="A session's transcript (sessions_history with tool results).",
                    mime_type=MIME,
                )
            ]
        )

    async def on_read_resource(
        self, ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        key = key_of(str(params.uri))
        requester = await _requester(self.caller, ctx)
        try:
            details = await in_thread(TOOLS.call)(
                "sessions_history",
                requester=requester,
                args={"sessionKey": key, "includeTools": True},
            )
        except Refusal as exc:
            raise MCPError(RESOURCE_NOT_FOUND, exc.message) from None
        except ToolError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=str(params.uri), mime_type=MIME, text=dumps_pretty(details)
                )
            ]
        )

    async def follow(self, ctx, uri: str) -> tuple[Requester, Followed]:
        requester = await _requester(self.caller, ctx)
        try:
            return requester, await in_thread(_followed)(requester, key_of(uri))
        except Refusal as exc:
            raise MCPError(RESOURCE_NOT_FOUND, exc.message) from None
        except ToolError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None

    async def on_subscribe_resource(
        self, ctx, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        requester, followed = await self.follow(ctx, uri)
        connection = getattr(ctx.session, "_connection", None)
        session = ctx.session
        mine = self.watchers.setdefault(id(connection), {})
        if uri in mine:
            return types.EmptyResult()

        async def watch() -> None:
            async for changed in updates(requester, [followed]):
                await session.send_resource_updated(changed)

        task = asyncio.get_running_loop().create_task(watch(), name=f"mcp-subscribe {uri}")
        mine[uri] = task
        if connection is not None and len(mine) == 1:

            def stop_all(key: int = id(connection)) -> None:
                for running in self.watchers.pop(key, {}).values():
                    running.cancel()

            connection.exit_stack.callback(stop_all)
        return types.EmptyResult()

    async def on_unsubscribe_resource(
        self, ctx, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        connection = getattr(ctx.session, "_connection", None)
        task = self.watchers.get(id(connection), {}).pop(str(params.uri), None)
        if task is not None:
            task.cancel()
        return types.EmptyResult()

    async def on_subscriptions_listen(
        self, ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """One listen stream: acknowledge the transcripts asked for, then send their updates on
        this request's stream until the client closes it (the hub ends it on revocation). A
        transcript the key may not read fails the request with the refusal's text rather than
        being left out silently. List-changed kinds are not offered (not in the ack)."""
        if ctx.request_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        requester = None
        followed: list[Followed] = []
        for uri in params.notifications.resource_subscriptions or ():
            requester, one = await self.follow(ctx, uri)
            followed.append(one)
        honored = types.SubscriptionFilter(
            resource_subscriptions=[uri_of(f.key) for f in followed] or None
        )
        await ctx.session.send_notification(
            types.SubscriptionsAcknowledgedNotification(
                params=types.SubscriptionsAcknowledgedNotificationParams(
                    notifications=honored, _meta=meta
                )
            ),
            related_request_id=ctx.request_id,
        )
        if requester is None:
            await asyncio.Event().wait()  # nothing to send; held until the client closes it
        else:
            async for uri in updates(requester, followed):
                await ctx.session.send_notification(
                    types.ResourceUpdatedNotification(
                        params=types.ResourceUpdatedNotificationParams(uri=uri, _meta=meta)
                    ),
                    related_request_id=ctx.request_id,
                )
        return types.SubscriptionsListenResult(_meta=meta)

    def handlers(self) -> dict[str, Any]:
        """The Server's constructor keyword arguments."""
        return {
            "on_list_resources": self.on_list_resources,
            "on_list_resource_templates": self.on_list_resource_templates,
            "on_read_resource": self.on_read_resource,
            "on_subscribe_resource": self.on_subscribe_resource,
            "on_unsubscribe_resource": self.on_unsubscribe_resource,
            "on_subscriptions_listen": self.on_subscriptions_listen,
        }


def handlers(caller: Caller) -> dict[str, Any]:
    return TranscriptResources(caller).handlers()
