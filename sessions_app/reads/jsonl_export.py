"""The transcript.jsonl download, one response for the API, the browser and the admin.

Under the ASGI server the body is an async iterator (transcript.export_jsonl_async): Django 5.2
serves a sync iterator there by running `list()` over it in a thread first, which holds the
whole transcript in memory before the first byte and warns on every request. Under WSGI (and
Django's test client) the plain generator is the streaming one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse

from .. import transcript
from ..models import Session
from ..storage import cold_storage

CONTENT_TYPE = "application/x-ndjson; charset=utf-8"


def jsonl_response(
    request, session: Session, *, raw: bool, filename: str, attachment: bool = True
) -> StreamingHttpResponse:
    cold_storage.ensure_hot(session)  # before the response: a missing archive is an error page
    django_request = getattr(request, "_request", request)  # DRF wraps Django's request
    content: Iterator[str] | AsyncIterator[str]
    if isinstance(django_request, ASGIRequest):
        content = transcript.export_jsonl_async(session, raw=raw)
    else:
        content = transcript.export_jsonl(session, raw=raw)
    response = StreamingHttpResponse(content, content_type=CONTENT_TYPE)
    disposition = "attachment" if attachment else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}.jsonl"'
    return response
