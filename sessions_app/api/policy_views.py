"""/api/v1/policies/: the send policy (`session.sendPolicy`), its rules one by one, and a dry run.

Operator keys only. Every write is send_policy_api's, which goes through policies_app's one write
(the admin's too), so the API and the admin edit the same rows and the same change history.
"""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from openclaw_common.errors import NotFound

from ..manage import send_policy_api as api
from ..store import require_scope
from .drf import json_body, no_query_args
from .schema import operation, ref

RULE_ID = OpenApiParameter(
    "rule_id", int, OpenApiParameter.PATH, description="The rule's id, as listed."
)
_RULE_ID = re.compile(r"[0-9]{1,18}")


def rule_id_of(raw: str) -> int:
    # Matched as text so that any other id is the API's 404, not Django's HTML one.
    if not _RULE_ID.fullmatch(raw):
        raise NotFound(f"No send-policy rule with id {raw[:40]}")
    return int(raw)


def _resource(saved) -> dict:
    return {**api.as_resource(saved.policy), "warnings": saved.warnings}


class PoliciesView(APIView):
    @extend_schema(
        **operation(
            "policies_retrieve",
            "Read the send policy and its rules (operator)",
            description="OpenClaw's session.sendPolicy as stored (the admin's Send policy "
            "page): enabled, the default action and the rules in evaluation order. A matching "
            "deny wins, then a matching allow, then the default; a session's own sendPolicy "
            "override wins over all of it.",
            response=ref("SendPolicy"),
            tags=("policies",),
        )
    )
    def get(self, request):
        require_scope(request.auth, "operator")
        no_query_args(request)
        return Response(api.as_resource())

    @extend_schema(
        **operation(
            "policies_rules_create",
            "Add a send-policy rule (operator)",
            description="After the other rules unless `position` says otherwise. Channels must "
            "be OpenClaw's or a configured channel's; chatType direct/dm, group/supergroup or "
            "channel. Does not switch the policy on: PATCH {enabled: true} does.",
            request=ref("SendPolicyRuleInput"),
            response=OpenApiResponse(ref("SendPolicyRule"), description="Created."),
            status=201,
            errors=(413, 415),
            tags=("policies",),
        )
    )
    def post(self, request):
        return Response(api.create_rule(api_key=request.auth, body=json_body(request)), status=201)

    @extend_schema(
        **operation(
            "policies_patch",
            "Change the send policy (operator)",
            description="Any of `enabled`, `default`, `rules` (the whole ordered list: rules "
            "with an id are updated, without are added, left out are deleted) and "
            "`changeNote` (why, for the history). All or nothing.",
            request=ref("SendPolicyPatch"),
            response=ref("SendPolicy"),
            errors=(413, 415),
            tags=("policies",),
        )
    )
    def patch(self, request):
        saved = api.update_policy(api_key=request.auth, body=json_body(request))
        return Response(_resource(saved))


class PolicyRuleView(APIView):
    @extend_schema(
        **operation(
            "policies_rule_retrieve",
            "Read one send-policy rule (operator)",
            parameters=[RULE_ID],
            response=ref("SendPolicyRule"),
            errors=(404,),
            tags=("policies",),
        )
    )
    def get(self, request, rule_id: str):
        no_query_args(request)
        return Response(api.get_rule(api_key=request.auth, rule_id=rule_id_of(rule_id)))

    @extend_schema(
        **operation(
            "policies_rule_patch",
            "Change one send-policy rule (operator)",
            description="The fields given; `match`, when given, replaces the rule's match.",
            parameters=[RULE_ID],
            request=ref("SendPolicyRuleInput"),
            response=ref("SendPolicyRule"),
            errors=(404, 413, 415),
            tags=("policies",),
        )
    )
    def patch(self, request, rule_id: str):
        body = json_body(request)
        changed = api.update_rule(api_key=request.auth, rule_id=rule_id_of(rule_id), body=body)
        return Response(changed)

    @extend_schema(
        **operation(
            "policies_rule_delete",
            "Delete one send-policy rule (operator)",
            parameters=[RULE_ID],
            response=OpenApiResponse(description="Deleted."),
            status=204,
            errors=(404,),
            tags=("policies",),
        )
    )
    def delete(self, request, rule_id: str):
        api.delete_rule(api_key=request.auth, rule_id=rule_id_of(rule_id))
        return Response(status=204)


class PolicyDryRunView(APIView):
    @extend_schema(
        **operation(
            "policies_dry_run",
            "Which sessions a send policy would block (operator)",
            description="Evaluates `enabled`, `default` and `rules` (each as in PATCH; what is "
            "left out is taken from the saved policy) against every active session, as the "
            "admin's preview does, and saves nothing. Lists the first `limit` blocked sessions "
            "by key (default 100, at most 1000) with the reason, and counts them all.",
            request=ref("SendPolicyDryRun"),
            response=ref("SendPolicyDryRunResult"),
            errors=(413, 415),
            tags=("policies",),
        )
    )
    def post(self, request):
        return Response(api.dry_run(api_key=request.auth, body=json_body(request)))
