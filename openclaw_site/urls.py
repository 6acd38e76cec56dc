from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from sessions_app.api.tools_invoke import tools_invoke

urlpatterns = [
    path("tools/invoke", tools_invoke, name="tools-invoke"),
    path("api/v1/", include("sessions_app.api.urls")),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The transcript browser: the session list at /, transcripts at /sessions/<key>/.
    path("", include("sessions_app.ui.urls")),
]
