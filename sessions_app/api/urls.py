from django.urls import path
from drf_spectacular.views import SpectacularSwaggerView

from . import async_views, catalog_views, manage_views, policy_views, views
from .schema_view import CachedSchemaView

urlpatterns = [
    path("sessions/", views.SessionsView.as_view(), name="sessions"),
    path("sessions/<str:key>/", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<str:key>/history/", views.SessionHistoryView.as_view(), name="session-history"),
    path(
        "sessions/<str:key>/messages/", views.SessionMessagesView.as_view(), name="session-messages"
    ),
    path(
        "sessions/<str:key>/transcript.jsonl",
        views.TranscriptView.as_view(),
        name="session-transcript",
    ),
    path(
        "transcripts/<str:session_id>.jsonl",
        views.TranscriptBySessionIdView.as_view(),
        name="transcript-by-session-id",
    ),
    path("sessions/<str:key>/send/", async_views.session_send, name="session-send"),
    path("sessions/<str:key>/status/", views.SessionStatusView.as_view(), name="session-status"),
    path(
        "sessions/<str:key>/reset/",
        manage_views.SessionResetView.as_view(),
        name="session-reset",
    ),
    path("groups/", manage_views.GroupsView.as_view(), name="groups"),
    path("groups/rename/", manage_views.GroupRenameView.as_view(), name="groups-rename"),
    path("groups/<str:name>/", manage_views.GroupDetailView.as_view(), name="group-detail"),
    path("sessions/<str:key>/abort/", views.SessionAbortView.as_view(), name="session-abort"),
    path("runs/<str:run_id>/", async_views.run_detail, name="run-detail"),
    path("runs/<str:run_id>/wait/", async_views.run_wait, name="run-wait"),
    path("runs/<str:run_id>/abort/", async_views.run_abort, name="run-abort"),
    path("search/", views.SearchView.as_view(), name="search"),
    path("spawn/", views.SpawnView.as_view(), name="spawn"),
    path("agents/", views.AgentsView.as_view(), name="agents"),
    path("agents/<str:agent_id>/", views.AgentDetailView.as_view(), name="agent-detail"),
    path(
        "agents/<str:agent_id>/models/refresh/",
        catalog_views.AgentModelsRefreshView.as_view(),
        name="agent-models-refresh",
    ),
    path("config/", views.ConfigView.as_view(), name="config"),
    path("policies/", policy_views.PoliciesView.as_view(), name="policies"),
    path("policies/dry-run/", policy_views.PolicyDryRunView.as_view(), name="policies-dry-run"),
    path("policies/<str:rule_id>/", policy_views.PolicyRuleView.as_view(), name="policy-rule"),
    path("schema/", CachedSchemaView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]
