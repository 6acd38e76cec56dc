"""Error pages for the browser: a clear message with the right status, never a 500."""

from django.shortcuts import render

TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found", 405: "Method not allowed"}


def error_page(request, status: int, message: str, *, retry_after: int = 1):
    response = render(
        request,
        "ui/error.html",
        {"status": status, "title": TITLES.get(status, "Error"), "message": message},
        status=status,
    )
    if status == 503:  # as the API's: when to ask again
        response["Retry-After"] = str(retry_after)
    return response
