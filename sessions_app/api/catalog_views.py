"""POST /api/v1/agents/{agent_id}/models/refresh/: read an OpenAI-compatible agent's /v1/models
into its model catalog (model_catalog.py), as the admin's action and `manage.py refresh_models`
do. Operator keys only: it makes the service send a request of its own."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from openclaw_common.errors import InvalidArgument, NotFound

from .. import store
from ..models import Agent, GatewayConfig
from ..runs import model_catalog
from ..store import require_scope
from . import http
from .drf import no_query_args
from .schema import operation

MODELS = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "discovered": {
            "type": "array",
            "items": {"type": "string"},
            "description": "What /v1/models listed.",
        },
        "models": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The agent's catalog now (agents_list shows it too).",
        },
        "refreshedAt": {"type": "integer", "description": "Milliseconds."},
    },
    "required": ["id", "discovered", "models", "refreshedAt"],
}


class AgentModelsRefreshView(APIView):
    @extend_schema(
        **operation(
            "agents_models_refresh",
            "Refresh an agent's model catalog from its /v1/models (operator)",
            description="For an openai backend: GET <baseUrl>/models through the deployment's "
            "outbound policy. What it lists joins the catalog when the backend has "
            '"refreshModels": true. 502 when the backend could not be read (the catalog keeps '
            "its last list).",
            parameters=[
                OpenApiParameter("agent_id", str, OpenApiParameter.PATH, description="Agent id.")
            ],
            response=MODELS,
            errors=(404, 502),
            tags=("agents",),
        )
    )
    def post(self, request, agent_id: str):
        require_scope(request.auth, "operator")
        no_query_args(request)
        store.check_storable(agent_id, "agent id")  # from the path, which no body check saw
        agent = Agent.objects.filter(pk=agent_id).first()
        if agent is None:
            raise NotFound(f"No agent with id {agent_id[:64]}")
        if (agent.backend or {}).get("type") != "openai":
            raise InvalidArgument(f"agent {agent.id}: only an openai backend lists its models")
        try:
            discovered = model_catalog.refresh_models(agent)
        except model_catalog.RefreshFailed as exc:
            return http.error_json(502, str(exc))
        refreshed_at = agent.models_refreshed_at
        assert refreshed_at is not None  # refresh_models() set it
        return Response(
            {
                "id": agent.id,
                "discovered": discovered,
                "models": model_catalog.catalog(agent, GatewayConfig.load()),
                "refreshedAt": int(refreshed_at.timestamp() * 1000),
            }
        )
