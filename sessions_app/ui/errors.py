"""Error pages for the browser: a clear message with the right status, never a 500."""

import sys

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.views import defaults

from ..api.http import is_unavailable

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    503: "Unavailable",
}
UNAVAILABLE_PAGE = "The database is busy or unreachable. Try again in a moment."


def error_page(request, status: int, message: str, *, retry_after: int = 1) -> HttpResponse:
    """The page for `status`; `request` None renders it without context processors."""
    context = {"status": status, "title": TITLES.get(status, "Error"), "message": message}
    response = HttpResponse(
        render_to_string("ui/error.html", context, request=request), status=status
    )
    if status == 503:  # as the API's: when to ask again
        response["Retry-After"] = str(retry_after)
    return response


def server_error(request) -> HttpResponse:
    """handler500. A page or admin view that failed because the database was unreachable (its
    session, its user or its own queries) is a 503 with Retry-After, as every API answer is;
    any other exception stays Django's plain 500. Rendered without the request: its context
    processors would read the user from the database again."""
    exc = sys.exc_info()[1]
    if exc is None or not is_unavailable(exc):
        return defaults.server_error(request)
    return error_page(None, 503, UNAVAILABLE_PAGE)
