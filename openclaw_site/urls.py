from django.contrib import admin
from django.urls import include, path

from sessions_app.api.tools_invoke import tools_invoke
from sessions_app.views import home

urlpatterns = [
    path("", home, name="home"),
    path("tools/invoke", tools_invoke, name="tools-invoke"),
    path("api/v1/", include("sessions_app.api.urls")),
    path("admin/", admin.site.urls),
]
