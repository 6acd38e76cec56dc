from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import async_views, views

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
    path("sessions/<str:key>/send/", async_views.session_send, name="session-send"),
    path("sessions/<str:key>/abort/", views.SessionAbortView.as_view(), name="session-abort"),
    path("runs/<str:run_id>/", async_views.run_detail, name="run-detail"),
    path("runs/<str:run_id>/wait/", async_views.run_wait, name="run-wait"),
    path("runs/<str:run_id>/abort/", async_views.run_abort, name="run-abort"),
    path("spawn/", views.SpawnView.as_view(), name="spawn"),
    path("agents/", views.AgentsView.as_view(), name="agents"),
    path("agents/<str:agent_id>/", views.AgentDetailView.as_view(), name="agent-detail"),
    path("config/", views.ConfigView.as_view(), name="config"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]
