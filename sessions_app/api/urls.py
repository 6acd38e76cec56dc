from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views

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
    path("agents/", views.AgentsView.as_view(), name="agents"),
    path("agents/<str:agent_id>/", views.AgentDetailView.as_view(), name="agent-detail"),
    path("config/", views.ConfigView.as_view(), name="config"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]
