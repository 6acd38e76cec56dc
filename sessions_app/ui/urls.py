"""Browser URLs. Session keys contain colons (kept readable) and are percent-encoded otherwise;
the sub-resources of a transcript come after the key, so they are matched first."""

from django.urls import path

from . import views

app_name = "ui"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("ui/rows/", views.rows_fragment, name="rows"),
    path("sessions/<path:key>/messages/", views.messages_fragment, name="messages"),
    path("sessions/<path:key>/panel/", views.panel_fragment, name="panel"),
    path("sessions/<path:key>/transcript.jsonl", views.download, name="download"),
    path("sessions/<path:key>/send-policy/", views.send_policy, name="send-policy"),
    path("sessions/<path:key>/stop/", views.stop, name="stop"),
    path("sessions/<path:key>/images/<int:seq>/<int:index>/", views.image, name="image"),
    path("sessions/<path:key>/", views.transcript_page, name="transcript"),
]
