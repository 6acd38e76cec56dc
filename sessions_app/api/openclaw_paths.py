"""OpenClaw's documented HTTP path for a transcript, `GET /sessions/{sessionKey}/history`.

It is also where the transcript browser shows that session to a person, so one address serves
two audiences: an API client (an `Authorization` header, or an Accept header that prefers
`application/json` or `text/event-stream`) gets exactly what /api/v1/sessions/{key}/history/
answers (the same view: JSON pages, or SSE with `follow=1` / `Accept: text/event-stream` and
`Last-Event-ID` resume), and a browser gets the transcript page. A sessionId works in both.
"""

from __future__ import annotations

from django.shortcuts import redirect

from openclaw_common import keys

from ..models import Session
from ..ui import present
from ..ui.access import viewer_required
from ..ui.views import transcript_page
from .views import SessionHistoryView

API_TYPES = ("application/json", "text/event-stream")
_history_api = SessionHistoryView.as_view()


def wants_api(request) -> bool:
    if "Authorization" in request.headers:
        return True
    # A browser asks for text/html first; with no Accept header text/html wins too.
    return request.get_preferred_type(["text/html", *API_TYPES]) in API_TYPES


def session_history(request, sessionKey: str):  # noqa: N803 (OpenClaw's name for the path part)
    if wants_api(request):
        return _history_api(request, key=sessionKey)
    return _page(request, sessionKey)


@viewer_required
def _page(request, key: str):
    # The page is addressed by key; a sessionId (after the login check) leads to it.
    if keys.looks_like_session_id(key):
        session = Session.objects.filter(session_id=keys.normalize_session_id(key)).first()
        if session is not None:
            return redirect(present.session_url(session.key))
    return transcript_page(request, key=key)


# (the API schema test reads it). mypy cannot type an attribute set on a function.
session_history.allowed_methods = ["GET"]  # type: ignore[attr-defined]
