"""REST resources under /api/v1/ (api.md §3): parse → call one sessions_app function → render."""

from __future__ import annotations

import re

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import agents as agents_mod
from .. import config as config_mod
from .. import keys, store, transcript
from ..args import Args
from ..errors import InvalidArgument
from ..identity import Requester, requester_for
from ..live import sse
from ..live.subscribers import Followed
from ..models import GatewayConfig
from ..resolve import resolve_session
from ..rows import session_row
from ..tools import agents_list, sessions_list, sessions_spawn
from ..tools.sessions_history import MAX_LIMIT, history_page
from .renderers import FastJSONRenderer

SESSION_HEADER = "HTTP_X_OPENCLAW_SESSION_KEY"
ERROR = {
    400: OpenApiTypes.OBJECT,
    401: OpenApiTypes.OBJECT,
    403: OpenApiTypes.OBJECT,
    404: OpenApiTypes.OBJECT,
}
KEY_PARAM = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, description="Session key, URL-encoded"
)
REQUESTER_HEADER = OpenApiParameter(
    "X-OpenClaw-Session-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="The session the caller acts as (default: the key's agent main session).",
)


def requester_of(request) -> Requester:
    return requester_for(request.auth, session_key=request.META.get(SESSION_HEADER))


def query_args(request, *, list_names: tuple[str, ...] = ()) -> dict:
    """Query parameters as tool args: one value each, except list parameters (repeat or commas)."""
    args: dict = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        if name in list_names:
            args[name] = [part for v in values for part in v.split(",") if part.strip()]
        elif len(values) > 1:
            raise InvalidArgument(f"{name} must be given once")
        else:
            args[name] = values[0]
    return args


def json_body(request):
    """request.data, except that an empty body is refused as /tools/invoke refuses it.

    DRF reads a body without content as {} and never calls the parser, so `PUT` with nothing
    would otherwise reset an agent to its defaults.
    """
    data = request.data
    if request.stream is None:
        raise ParseError("request body is empty; send a JSON object")
    return data


def no_query_args(request) -> None:
    """Endpoints without query parameters still refuse unknown ones, as the tools do."""
    Args(query_args(request), frozenset(), tool="this endpoint")


def _row(session, requester_settings) -> dict:
    children = list(
        type(session).objects.active().filter(spawned_by=session.key).values_list("key", flat=True)
    )
    return session_row(session, settings=requester_settings, children=children)


class SessionsView(APIView):
    @extend_schema(
        operation_id="sessions_list",
        parameters=[
            REQUESTER_HEADER,
            OpenApiParameter(
                "kinds", str, many=True, description="main|group|cron|hook|node|other"
            ),
            OpenApiParameter("limit", int, description="Default 100, at most 200"),
            OpenApiParameter("offset", int),
            OpenApiParameter("activeMinutes", int),
            OpenApiParameter("messageLimit", int, description="0–20"),
            OpenApiParameter("agentId", str),
            OpenApiParameter("label", str),
            OpenApiParameter("search", str),
            OpenApiParameter("archived", str, enum=["false", "true", "all"]),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERROR},
    )
    def get(self, request):
        return Response(
            sessions_list(
                requester=requester_of(request), args=query_args(request, list_names=("kinds",))
            )
        )

    @extend_schema(
        operation_id="sessions_ingest",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT, **ERROR},
        description="Create or update a session from a sessions.json entry plus its `key` (ingest scope).",
    )
    def post(self, request):
        session, created = store.upsert_session(api_key=request.auth, entry=json_body(request))
        settings = GatewayConfig.load().key_settings
        return Response(_row(session, settings), status=201 if created else 200)


class SessionDetailView(APIView):
    @extend_schema(
        parameters=[KEY_PARAM, REQUESTER_HEADER], responses={200: OpenApiTypes.OBJECT, **ERROR}
    )
    def get(self, request, key: str):
        no_query_args(request)
        requester = requester_of(request)
        session = resolve_session(requester, key, action="list")
        return Response(_row(session, requester.key_settings))

    @extend_schema(
        parameters=[KEY_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERROR},
        description="OpenClaw sessions.patch: label, displayName, model, thinkingLevel, verboseLevel, "
        'reasoningLevel, sendPolicy ("allow" | "deny" | "inherit" | null).',
    )
    def patch(self, request, key: str):
        session = store.patch_session(api_key=request.auth, key=key, changes=json_body(request))
        return Response(_row(session, GatewayConfig.load().key_settings))


class SessionHistoryView(APIView):
    ARGS = frozenset({"limit", "cursor", "includeTools", "follow"})
    renderer_classes = [FastJSONRenderer, sse.EventStreamRenderer]

    @extend_schema(
        operation_id="sessions_history_page",
        parameters=[
            KEY_PARAM,
            REQUESTER_HEADER,
            OpenApiParameter("limit", int, description="Default 200, at most 1000"),
            OpenApiParameter(
                "cursor", str, description='Messages with seq below this ("n" or "seq:n")'
            ),
            OpenApiParameter("includeTools", bool),
            OpenApiParameter(
                "follow",
                bool,
                description="Stream as Server-Sent Events: the page, then each appended message "
                "(also with `Accept: text/event-stream`; resume with `Last-Event-ID`).",
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERROR},
    )
    def get(self, request, key: str):
        a = Args(query_args(request), self.ARGS, tool="history")
        limit = min(a.integer("limit", minimum=1, default=200), MAX_LIMIT)
        include_tools = a.boolean("includeTools", default=False)
        before_seq = parse_cursor(a.string("cursor", max_length=40))
        stream = sse.wanted(request, a.boolean("follow", default=False))
        resume_after = sse.last_event_id(request) if stream else None
        requester = requester_of(request)
        session = resolve_session(requester, key, action="history")
        display = keys.display_key(session.key, requester.key_settings)
        if stream:
            followed = Followed.of(session, display, session.last_seq, include_tools)
            if resume_after is not None:
                followed.cursor = resume_after
                history = None
            else:
                # The page ends at the seq the stream starts after: no gap, no repeat.
                page = history_page(
                    session,
                    limit=limit,
                    include_tools=include_tools,
                    before_seq=min(before_seq or session.last_seq + 1, session.last_seq + 1),
                )
                history = self.body(display, page)
            return sse.history_stream(
                requester=requester, api_key_id=request.auth.pk, followed=followed, history=history
            )
        page = history_page(
            session, limit=limit, include_tools=include_tools, before_seq=before_seq
        )
        return Response(self.body(display, page))

    @staticmethod
    def body(display_key: str, page: dict) -> dict:
        body = {
            "sessionKey": display_key,
            "items": page["messages"],
            "messages": page["messages"],
            "hasMore": page["hasMore"],
            **page["flags"],
        }
        if page["hasMore"] and page["firstSeq"] is not None:
            body["nextCursor"] = str(page["firstSeq"])
        return body


_CURSOR = re.compile(r"[0-9]{1,16}")  # ASCII digits: str.isdigit() accepts "²", int() does not


def parse_cursor(raw: str | None) -> int | None:
    if raw is None:
        return None
    text = raw[4:] if raw.startswith("seq:") else raw
    if not _CURSOR.fullmatch(text) or int(text) < 1 or int(text) > 2**53 - 1:
        raise InvalidArgument("cursor must be a positive integer")
    return int(text)


class SessionMessagesView(APIView):
    @extend_schema(
        parameters=[KEY_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT, **ERROR},
        description='Append raw transcript messages: {"messages": [...]} (ingest scope).',
    )
    def post(self, request, key: str):
        return Response(
            store.append_messages(api_key=request.auth, key=key, body=json_body(request)),
            status=201,
        )


class TranscriptView(APIView):
    @extend_schema(
        parameters=[KEY_PARAM, REQUESTER_HEADER], responses={200: OpenApiTypes.STR, **ERROR}
    )
    def get(self, request, key: str):
        no_query_args(request)
        session = resolve_session(requester_of(request), key, action="history")
        response = StreamingHttpResponse(
            transcript.export_jsonl(session), content_type="application/x-ndjson; charset=utf-8"
        )
        response["Content-Disposition"] = f'inline; filename="{session.session_id}.jsonl"'
        return response


class SpawnView(APIView):
    @extend_schema(
        operation_id="sessions_spawn",
        parameters=[REQUESTER_HEADER],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERROR},
        description="sessions_spawn: the tool's arguments as the body; never blocks.",
    )
    def post(self, request):
        return Response(sessions_spawn(requester=requester_of(request), args=json_body(request)))


class AgentsView(APIView):
    @extend_schema(
        operation_id="agents_list",
        parameters=[REQUESTER_HEADER],
        responses={200: OpenApiTypes.OBJECT, **ERROR},
    )
    def get(self, request):
        return Response(agents_list(requester=requester_of(request), args=query_args(request)))


class AgentDetailView(APIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT, **ERROR},
    )
    def put(self, request, agent_id: str):
        agent, created = agents_mod.upsert_agent(
            api_key=request.auth, agent_id=agent_id, data=json_body(request)
        )
        return Response(agents_mod.agent_as_dict(agent), status=201 if created else 200)


class ConfigView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERROR})
    def get(self, request):
        store.require_scope(request.auth, "operator")
        no_query_args(request)
        return Response(config_mod.as_dict(GatewayConfig.load()))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, **ERROR})
    def patch(self, request):
        return Response(
            config_mod.as_dict(
                config_mod.update_config(api_key=request.auth, changes=json_body(request))
            )
        )
