"""REST resources under /api/v1/ (api.md §3): parse → call one sessions_app function → render."""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from openclaw_common import keys
from openclaw_common.errors import Forbidden, InvalidArgument

from .. import store
from ..access.resolve import resolve_session, resolve_session_id
from ..lib.args import Args
from ..live import sse
from ..live.subscribers import Followed
from ..manage import agents as agents_mod
from ..manage import config as config_mod
from ..manage import patch_fields
from ..models import ApiKey, GatewayConfig
from ..reads import history_read, internal_rows
from ..reads.jsonl_export import jsonl_response
from ..rows import row_of
from ..runs import control, ingest
from ..storage import cold_storage
from ..tools import agents_list as agents_list_tool
from ..tools import session_status as session_status_tool
from ..tools import sessions_list as sessions_list_tool
from ..tools import sessions_search as sessions_search_tool
from ..tools import sessions_spawn as sessions_spawn_tool
from . import manage_views
from .drf import FastJSONRenderer, json_body, no_query_args, query_args, requester_of
from .schema import (
    ABORT_BODY,
    APPEND_BODY,
    INGEST_ENTRY,
    REQUESTER_HEADER,
    SESSION_KEY_PATH,
    SESSION_MANAGE_PATCH,
    SESSION_PATCH,
    operation,
    query_parameters,
    ref,
)

RAW_PARAM = OpenApiParameter(
    "raw",
    bool,
    description="Export credential-like text unmasked (API keys of operator scope only).",
)


def _row(session, requester_settings) -> dict:
    return row_of(session, settings=requester_settings)


class SessionsView(APIView):
    @extend_schema(
        **operation(
            "sessions_list",
            "List the sessions you can see (sessions_list)",
            description=sessions_list_tool.DECLARATION.description
            + " Query parameters are the tool's arguments; kinds may repeat or be comma-separated.",
            parameters=[REQUESTER_HEADER, *query_parameters(sessions_list_tool.DECLARATION)],
            response=ref("SessionsListResult"),
            tags=("sessions",),
        )
    )
    def get(self, request):
        return Response(
            sessions_list_tool.TOOL.call_closed(
                requester=requester_of(request), args=query_args(request, list_names=("kinds",))
            )
        )

    @extend_schema(
        **operation(
            "sessions_ingest",
            "Create or update a session (ingest)",
            description="A sessions.json entry plus its `key` (api.md §3; ingest or operator "
            "scope). 201 when it created the session, 200 when it updated it.",
            request=INGEST_ENTRY,
            response=OpenApiResponse(ref("SessionRow"), description="Updated."),
            also={201: OpenApiResponse(ref("SessionRow"), description="Created.")},
            errors=(413, 415),
            tags=("sessions",),
        )
    )
    def post(self, request):
        session, created = store.upsert_session(api_key=request.auth, entry=json_body(request))
        settings = GatewayConfig.load().key_settings
        return Response(_row(session, settings), status=201 if created else 200)


class SessionDetailView(APIView):
    @extend_schema(
        **operation(
            "sessions_retrieve",
            "Read one session's row",
            description="The sessions_list row, with the preferences a PATCH stored (icon, "
            "color, an active statusNote and its attention, toolOverrides, unread, …), as the "
            "sessions.patch RPC's `entry`.",
            parameters=[SESSION_KEY_PATH, REQUESTER_HEADER],
            response=ref("SessionRow"),
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request, key: str):
        no_query_args(request)
        requester = requester_of(request)
        session = resolve_session(requester, key, action="list")
        # With the preferences a PATCH stored (icon, statusNote, toolOverrides, …): what was
        # written reads back here, as in the sessions.patch RPC's `entry`.
        return Response(patch_fields.entry_of(session, requester.key_settings))

    @extend_schema(
        **operation(
            "sessions_patch",
            "Change a session (sessions.patch)",
            description="OpenClaw sessions.patch. Two bodies: (1) label, displayName, model, "
            "thinkingLevel, verboseLevel, reasoningLevel, sendPolicy "
            '("allow" | "deny" | "inherit" | null) with an ingest or operator key, answered '
            "with the session's row; (2) any of the sessions tool's fields (icon, color, group, "
            "statusNote, attention, ttlMinutes, pinned, archived, expectedSessionId, with label, "
            "model, thinkingLevel, sendPolicy) with an operator or agent key that may manage "
            "the session, answered with the tool's patch result. Archiving or restoring needs "
            "expectedSessionId.",
            parameters=[SESSION_KEY_PATH, REQUESTER_HEADER],
            request={"oneOf": [SESSION_PATCH, SESSION_MANAGE_PATCH]},
            response=OpenApiResponse(
                {"oneOf": [ref("SessionRow"), ref("SessionsResult")]},
                description="The row (body 1) or the patch result (body 2).",
            ),
            errors=(403, 404, 413, 415),
            tags=("sessions",),
        )
    )
    def patch(self, request, key: str):
        body = json_body(request)
        if isinstance(body, dict) and any(name in MANAGE_ONLY for name in body):
            return manage_views.manage_patch(request, key, body)
        session = store.patch_session(api_key=request.auth, key=key, changes=body)
        return Response(_row(session, GatewayConfig.load().key_settings))

    @extend_schema(**manage_views.DELETE_SCHEMA)
    def delete(self, request, key: str):
        return manage_views.delete_session(request, key)


# Fields only the sessions tool's patch knows: a body with any of them takes that path (the
# ingest PATCH's own fields stay with it, for ingest keys).
# 9.6's retired and lineage fields go there too, for their own texts.
MANAGE_ONLY = frozenset(
    (*manage_views.PATCH_BODY_NAMES, *patch_fields.RETIRED, *patch_fields.LINEAGE)
) - {*store.PATCH_FIELDS, "sendPolicy"}


class SessionHistoryView(APIView):
    ARGS = frozenset({"limit", "cursor", "includeTools", "follow"})
    renderer_classes = [FastJSONRenderer, sse.EventStreamRenderer]

    @extend_schema(
        **operation(
            "sessions_history_page",
            "Read a page of a session's transcript (or follow it live)",
            description="Newest `limit` messages before `cursor`, oldest first, bounded and "
            "sanitised like sessions_history. With follow=1 or `Accept: text/event-stream`: "
            "Server-Sent Events (`event: history` with this page, then `event: message` per "
            "appended message with `id: <seq>`; resume with Last-Event-ID). docs/live.md.",
            parameters=[
                SESSION_KEY_PATH,
                REQUESTER_HEADER,
                OpenApiParameter(
                    "limit",
                    {"type": "integer", "minimum": 1},
                    description="Default 200, at most 1000.",
                ),
                OpenApiParameter(
                    "cursor",
                    {"type": "string", "maxLength": 40},
                    description='Messages with seq below this ("n" or "seq:n"; see nextCursor).',
                ),
                OpenApiParameter("includeTools", bool, description="Include toolResult messages."),
                OpenApiParameter("follow", bool, description="Stream as Server-Sent Events."),
            ],
            response={
                (200, "application/json"): ref("HistoryPage"),
                (200, "text/event-stream"): {"type": "string"},
            },
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request, key: str):
        a = Args(query_args(request), self.ARGS, tool="history")
        limit = min(a.integer("limit", minimum=1, default=200), history_read.MAX_LIMIT)
        include_tools = a.boolean("includeTools", default=False)
        before_seq = parse_cursor(a.string("cursor", max_length=40))
        stream = sse.wanted(request, a.boolean("follow", default=False))
        resume_after = sse.last_event_id(request) if stream else None
        requester = requester_of(request)
        session = cold_storage.ensure_hot(resolve_session(requester, key, action="history"))
        display = keys.display_key(session.key, requester.key_settings)
        if stream:
            followed = Followed.of(session, display, session.last_seq, include_tools)
            if resume_after is not None:
                followed.cursor = resume_after
                history = None
            else:
                # The page ends at the seq the stream starts after: no gap, no repeat.
                page = history_read.history_page(
                    session,
                    limit=limit,
                    include_tools=include_tools,
                    before_seq=min(before_seq or session.last_seq + 1, session.last_seq + 1),
                )
                history = self.body(display, page)
            return sse.history_stream(
                requester=requester, api_key_id=request.auth.pk, followed=followed, history=history
            )
        page = history_read.history_page(
            session, limit=limit, include_tools=include_tools, before_seq=before_seq
        )
        return Response(self.body(display, page))

    @staticmethod
    def body(display_key: str, page: dict) -> dict:
        body = {
            "sessionKey": display_key,
            # One list, under the name the sessions_history tool and chat.history use (the
            # reference's gateway endpoint also repeats it as `items`; ours does not).
            # Internal rows (a completion prompt, a REPLY_SKIP…) say so (docs/rest.md, "Internal rows").
            "messages": [internal_rows.mark(m) for m in page["messages"]],
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


class SessionAbortView(APIView):
    BODY = frozenset({"clearQueued", "cascade"})

    @extend_schema(
        **operation(
            "sessions_abort",
            "Stop a session's work, and its sub-agents'",
            description="The session's running runs end as aborted (queued ones too with "
            "clearQueued); with cascade (the default) every sub-agent below it is cancelled "
            "and their results are not announced. A sub-agent's own requester still hears "
            "that it was cancelled. Any key that may send to the session may stop it.",
            parameters=[SESSION_KEY_PATH, REQUESTER_HEADER],
            request=ABORT_BODY,
            response=ref("AbortResult"),
            errors=(404, 413, 415),
            tags=("sessions",),
        )
    )
    def post(self, request, key: str):
        body = request.data if request.stream is not None else {}
        a = Args(body, self.BODY, tool="abort")
        clear_queued = a.boolean("clearQueued", default=False)
        cascade = a.boolean("cascade", default=True)
        requester = requester_of(request)
        session = resolve_session(requester, key, action="send")
        stopped = control.stop_session(
            session,
            reason=f"stopped by {requester.session_key} (sessions abort)",
            clear_queued=clear_queued,
            cascade=cascade,
        )
        return Response(
            {
                "ok": True,
                "key": keys.display_key(session.key, requester.key_settings),
                "status": "aborted" if stopped.own else "no-active-run",
                "abortedRunIds": stopped.aborted_run_ids,
                "endedTasks": stopped.ended_tasks,
                "cancelledDescendants": stopped.descendants,
            }
        )


class SessionMessagesView(APIView):
    @extend_schema(
        **operation(
            "sessions_messages_append",
            "Append messages to a transcript (ingest)",
            description='{"messages": [<transcript message>, …], "run"?: false} (ingest or '
            'operator scope). With "run": true the agent\'s reply run starts, subject to the '
            "send policy; an owner's standalone /send on|off|inherit sets the session's override.",
            parameters=[SESSION_KEY_PATH],
            request=APPEND_BODY,
            response=ref("Appended"),
            status=201,
            errors=(404, 413, 415),
            tags=("sessions",),
        )
    )
    def post(self, request, key: str):
        return Response(
            ingest.append_messages(api_key=request.auth, key=key, body=json_body(request)),
            status=201,
        )


class TranscriptView(APIView):
    @extend_schema(
        **operation(
            "sessions_transcript",
            "Download a transcript as JSONL",
            description="OpenClaw's transcript file: a session header line, then one line per "
            "message (what transcriptPath points to), streamed. Credential-like text is masked "
            "as in sessions_history; `raw=1` (operator keys only, else 403) exports it as stored.",
            parameters=[SESSION_KEY_PATH, REQUESTER_HEADER, RAW_PARAM],
            response={(200, "application/x-ndjson"): {"type": "string"}},
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request, key: str = "", session_id: str = ""):
        raw = Args(query_args(request), {"raw"}, tool="this endpoint").boolean("raw")
        if raw and request.auth.scope != ApiKey.OPERATOR:
            raise Forbidden(
                "raw=1 needs an API key of operator scope; without it credential-like text is "
                "masked, as in sessions_history"
            )
        requester = requester_of(request)
        if session_id:  # /api/v1/transcripts/<sessionId>.jsonl, where transcriptPath points
            session = resolve_session_id(requester, session_id, action="history")
        else:
            session = resolve_session(requester, key, action="history")
        return jsonl_response(
            request, session, raw=raw, filename=str(session.session_id), attachment=False
        )


class TranscriptBySessionIdView(TranscriptView):
    @extend_schema(
        **operation(
            "transcripts_retrieve",
            "Download a transcript as JSONL, by sessionId (transcriptPath)",
            description="The same export as /api/v1/sessions/{key}/transcript.jsonl, named as "
            "OpenClaw names the file: `<sessionId>.jsonl`. A session row's transcriptPath.",
            parameters=[
                OpenApiParameter(
                    "session_id", str, OpenApiParameter.PATH, description="The sessionId."
                ),
                REQUESTER_HEADER,
                RAW_PARAM,
            ],
            response={(200, "application/x-ndjson"): {"type": "string"}},
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request, key: str = "", session_id: str = ""):
        # The parent's signature; this route gives only session_id.
        return super().get(request, key=key, session_id=session_id)


class SpawnView(APIView):
    @extend_schema(
        **operation(
            "sessions_spawn",
            "Start a sub-agent (sessions_spawn)",
            description="The tool's arguments as the body; never blocks. A refusal is a 200 "
            "with {status: error|forbidden, error}.",
            parameters=[REQUESTER_HEADER],
            request=ref("SessionsSpawnArgs"),
            response=ref("SessionsSpawnResult"),
            errors=(413, 415),
            tags=("sessions",),
        )
    )
    def post(self, request):
        return Response(
            sessions_spawn_tool.TOOL.call_closed(
                requester=requester_of(request), args=json_body(request)
            )
        )


STATUS_ARGS = frozenset({"changesSince"})


class SessionStatusView(APIView):
    @extend_schema(
        **operation(
            "session_status",
            "A session's status card and state version (session_status)",
            description="session_status for the session in the path; changesSince lists the "
            "state events after that version. (Setting the model is a PATCH of the session.)",
            parameters=[
                SESSION_KEY_PATH,
                REQUESTER_HEADER,
                *[
                    p
                    for p in query_parameters(session_status_tool.DECLARATION)
                    if p.name in STATUS_ARGS
                ],
            ],
            response=ref("SessionStatusResult"),
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request, key: str):
        args = query_args(request)
        Args(args, STATUS_ARGS | {"changes_since"}, tool="session status")  # 9.6 §0
        args = session_status_tool.DECLARATION.camel(args)
        return Response(
            session_status_tool.TOOL.call_closed(
                requester=requester_of(request), args={**args, "sessionKey": key}
            )
        )


class SearchView(APIView):
    @extend_schema(
        **operation(
            "sessions_search",
            "Search the transcripts you can see (sessions_search)",
            description=sessions_search_tool.DECLARATION.description
            + " Query parameters are the tool's arguments (q is query). A session you may not"
            " see is a 403, one that does not exist a 404.",
            parameters=[
                REQUESTER_HEADER,
                *query_parameters(sessions_search_tool.DECLARATION, rename={"query": "q"}),
            ],
            response=ref("SessionsSearchResult"),
            errors=(404,),
            tags=("sessions",),
        )
    )
    def get(self, request):
        args = query_args(request)
        if "q" in args:
            if "query" in args:
                raise InvalidArgument("q and query cannot be used together")
            args["query"] = args.pop("q")
        return Response(
            sessions_search_tool.TOOL.call_closed(requester=requester_of(request), args=args)
        )


class AgentsView(APIView):
    @extend_schema(
        **operation(
            "agents_list",
            "List the agents you may spawn under (agents_list)",
            description=agents_list_tool.DECLARATION.description,
            parameters=[REQUESTER_HEADER],
            response=ref("AgentsListResult"),
            tags=("agents",),
        )
    )
    def get(self, request):
        return Response(
            agents_list_tool.TOOL.call_closed(
                requester=requester_of(request), args=query_args(request)
            )
        )


class AgentDetailView(APIView):
    @extend_schema(
        **operation(
            "agents_put",
            "Create or replace an agent (operator)",
            description="Its name, description, model, backend, subagents.allowAgents, "
            "sandboxed and tools {allow, deny}; fields left out take their defaults.",
            parameters=[
                OpenApiParameter("agent_id", str, OpenApiParameter.PATH, description="Agent id.")
            ],
            request=ref("Agent"),
            response=OpenApiResponse(ref("Agent"), description="Replaced."),
            also={201: OpenApiResponse(ref("Agent"), description="Created.")},
            errors=(413, 415),
            tags=("agents",),
        )
    )
    def put(self, request, agent_id: str):
        agent, created = agents_mod.upsert_agent(
            api_key=request.auth, agent_id=agent_id, data=json_body(request)
        )
        return Response(agents_mod.agent_as_dict(agent), status=201 if created else 200)


class ConfigView(APIView):
    @extend_schema(
        **operation(
            "config_retrieve",
            "Read the gateway settings (operator)",
            response=ref("Config"),
            tags=("config",),
        )
    )
    def get(self, request):
        store.require_scope(request.auth, "operator")
        no_query_args(request)
        return Response(config_mod.as_dict(GatewayConfig.load()))

    @extend_schema(
        **operation(
            "config_patch",
            "Change gateway settings (operator)",
            description="Any subset of the settings by their OpenClaw path; null resets one to "
            "its default. Unknown paths and out-of-range values are a 400 and nothing is "
            "changed. session.sendPolicy edits the rows of /api/v1/policies/.",
            request=ref("Config"),
            response=ref("Config"),
            errors=(413, 415),
            tags=("config",),
        )
    )
    def patch(self, request):
        return Response(
            config_mod.as_dict(
                config_mod.update_config(api_key=request.auth, changes=json_body(request))
            )
        )
