"""Managing sessions over REST (the `sessions` tool's operations, 9.6 §2.3/§2.4): the organisation
PATCH, reset, delete and the group catalog. Each view parses, calls session_admin, renders.

Unlike the tool, a REST caller is not "the session running this tool": it may reset its own
session, and archiving any session (its own included) needs `expectedSessionId`.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from openclaw_common.errors import InvalidArgument

from ..lib.args import Args, closed
from ..manage import patch_fields, session_admin
from .drf import json_body, no_query_args, query_args, requester_of
from .schema import (
    GROUP_NAME_PATH,
    GROUP_RENAME_BODY,
    GROUPS_PUT_BODY,
    REQUESTER_HEADER,
    RESET_BODY,
    SESSION_KEY_PATH,
    operation,
    ref,
)

# Nobody is "current" on REST: archiving always names the expected sessionId.
REST_CALLER = session_admin.Caller(current_key="")
PATCH_BODY_NAMES = frozenset(
    {
        *session_admin.PATCH_FIELDS,
        *patch_fields.FIELDS,
        *session_admin.PATCH_GUARDS,
        "expectedSessionId",
    }
)


def optional_string(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string")
    return value


def manage_patch(request, key: str, body: dict) -> Response:
    """PATCH with the sessions tool's fields (and sessions.patch's others, patch_fields.py):
    the tool's patch, the tool's result."""
    patch_fields.refuse_retired(body)
    closed(body, PATCH_BODY_NAMES)
    requester = requester_of(request)
    session = session_admin.find_managed(requester, key)
    changes = session_admin.read_client_patch(requester, body)
    return Response(
        session_admin.patch(
            session,
            changes,
            caller=REST_CALLER,
            expected_session_id=optional_string(body, "expectedSessionId"),
            settings=requester.key_settings,
            guards=session_admin.guards_of(body),
        )
    )


class SessionResetView(APIView):
    @extend_schema(
        **operation(
            "sessions_reset",
            "Reset a session: a new sessionId, the old transcript kept (sessions.reset)",
            description="The session starts over under a new sessionId. Its transcript and "
            "runs move to an archived session `<key>:reset:<8 hex>` that keeps the old "
            "sessionId, so /api/v1/transcripts/<previousSessionId>.jsonl still reads it. "
            "Refused (400) while a run of the session is queued or running: abort it first.",
            parameters=[SESSION_KEY_PATH, REQUESTER_HEADER],
            request=RESET_BODY,
            response=ref("SessionsResult"),
            errors=(403, 413, 415),
            tags=("sessions",),
        )
    )
    def post(self, request, key: str):
        body = request.data if request.stream is not None else {}
        Args(body, frozenset({"expectedSessionId", "reason"}), tool="reset")
        if body.get("reason") not in (None, "new", "reset"):
            raise InvalidArgument('reason must be "new" or "reset"')
        requester = requester_of(request)
        session = session_admin.find_managed(requester, key)
        return Response(
            session_admin.reset(
                session,
                expected_session_id=optional_string(body, "expectedSessionId"),
                settings=requester.key_settings,
            )
        )


EXPECTED_PARAM = OpenApiParameter(
    "expectedSessionId",
    str,
    required=True,
    description="The sessionId you expect (from the session's row): a stale one is refused.",
)


def delete_session(request, key: str) -> Response:
    """DELETE /api/v1/sessions/{key}/: archive (stopping its work), then delete."""
    args = query_args(request)
    Args(args, frozenset({"expectedSessionId"}), tool="delete")
    expected = args.get("expectedSessionId")
    if not expected:
        raise InvalidArgument("expectedSessionId required")
    requester = requester_of(request)
    session = session_admin.find_managed(requester, key)
    return Response(
        session_admin.archive_then_delete(
            session, expected_session_id=expected, settings=requester.key_settings
        )
    )


DELETE_SCHEMA = operation(
    "sessions_destroy",
    "Delete a session: archive it, then delete it (sessions.delete)",
    description="Archives the session (its queued and running runs are aborted first), then "
    "deletes it with its transcript and runs. Never a main session. Needs the session's "
    "current sessionId as `expectedSessionId`.",
    parameters=[SESSION_KEY_PATH, REQUESTER_HEADER, EXPECTED_PARAM],
    response=ref("SessionsResult"),
    errors=(403,),
    tags=("sessions",),
)


class GroupsView(APIView):
    @extend_schema(
        **operation(
            "groups_list",
            "The ordered group catalog (sessions.groups.list)",
            parameters=[REQUESTER_HEADER],
            response=ref("SessionsResult"),
            errors=(403,),
            tags=("groups",),
        )
    )
    def get(self, request):
        requester_of(request)
        no_query_args(request)
        return Response(session_admin.group_list())

    @extend_schema(
        **operation(
            "groups_put",
            "Replace the ordered group catalog (sessions.groups.put)",
            description="New names are created, omitted empty groups deleted; dropping a group "
            "that still has sessions is refused. Sessions never move.",
            parameters=[REQUESTER_HEADER],
            request=GROUPS_PUT_BODY,
            response=ref("SessionsResult"),
            errors=(403, 413, 415),
            tags=("groups",),
        )
    )
    def put(self, request):
        requester = requester_of(request)
        body = json_body(request)
        Args(body, frozenset({"names"}), tool="groups")
        return Response(session_admin.group_set(requester, body.get("names")))


class GroupRenameView(APIView):
    @extend_schema(
        **operation(
            "groups_rename",
            "Rename a group; its sessions follow (sessions.groups.rename)",
            parameters=[REQUESTER_HEADER],
            request=GROUP_RENAME_BODY,
            response=ref("SessionsResult"),
            errors=(403, 413, 415),
            tags=("groups",),
        )
    )
    def post(self, request):
        requester = requester_of(request)
        body = json_body(request)
        Args(body, frozenset({"name", "to"}), tool="groups")
        return Response(session_admin.group_rename(requester, body.get("name"), body.get("to")))


class GroupDetailView(APIView):
    @extend_schema(
        **operation(
            "groups_destroy",
            "Delete a group; its sessions become ungrouped (sessions.groups.delete)",
            parameters=[GROUP_NAME_PATH, REQUESTER_HEADER],
            response=ref("SessionsResult"),
            errors=(403,),
            tags=("groups",),
        )
    )
    def delete(self, request, name: str):
        return Response(session_admin.group_delete(requester_of(request), name))
