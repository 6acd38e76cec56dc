from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from sessions_app.access.login_throttle import throttled
from sessions_app.api.openclaw_paths import session_history
from sessions_app.api.tools_invoke import tools_invoke

# Both login forms count failed attempts (sessions_app/access/login_throttle.py).
admin.site.login = throttled(admin.site.login)

# A page that failed because the database was unreachable is a 503 with Retry-After, not a 500.
handler500 = "sessions_app.ui.errors.server_error"

urlpatterns = [
    path("tools/invoke", tools_invoke, name="tools-invoke"),
    path("api/v1/", include("sessions_app.api.urls")),
    # Channels and deliveries moved with their models from policies_app to sessions_app; links
    # and bookmarks to the old admin pages still arrive.
    re_path(
        r"^admin/policies_app/(?P<model>channelconfig|delivery)/(?P<rest>.*)$",
        RedirectView.as_view(
            url="/admin/sessions_app/%(model)s/%(rest)s", permanent=True, query_string=True
        ),
    ),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        throttled(auth_views.LoginView.as_view(redirect_authenticated_user=True)),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # OpenClaw's history path: the API's history for an API client, the transcript page for a
    # browser (sessions_app/api/openclaw_paths.py).
    path("sessions/<path:sessionKey>/history", session_history, name="openclaw-history"),
    # The transcript browser: the session list at /, transcripts at /sessions/<key>/.
    path("", include("sessions_app.ui.urls")),
]
