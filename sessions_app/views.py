"""Browser pages. The transcript browser grows here; for now, the landing page."""

from django.shortcuts import render

from .models import Agent, Session


def home(request):
    return render(
        request,
        "home.html",
        {"sessions": Session.objects.count(), "agents": Agent.objects.count()},
    )
