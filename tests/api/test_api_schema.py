"""The API documentation is complete: every public route and method is in /api/v1/schema/,
every operation has a summary, and every error status is documented with the envelope."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

# Routes that are not API operations, and why.
NOT_OPERATIONS = {
    "/api/v1/schema/": "the schema itself",
    "/api/v1/docs/": "the schema rendered for people (Swagger UI)",
}
PUBLIC_PREFIXES = ("/api/", "/tools/")
# API operations outside those prefixes: OpenClaw's own paths (a browser gets a page there).
OPENCLAW_PATHS = ("/sessions/{sessionKey}/history",)
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def routes(resolver=None, prefix="/"):
    """(OpenAPI path, view callback) for every URL pattern, nested includes included."""
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry, route)
        elif isinstance(entry, URLPattern):
            yield re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route), entry.callback


def methods_of(callback) -> set[str]:
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view_class is not None and issubclass(view_class, APIView):
        return {m for m in HTTP_METHODS if hasattr(view_class, m)}
    return {m.lower() for m in callback.allowed_methods}


@pytest.fixture
def schema(db):
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def test_every_public_route_and_method_is_documented(schema):
    public = [(p, cb) for p, cb in routes() if p.startswith(PUBLIC_PREFIXES) or p in OPENCLAW_PATHS]
    assert len(public) >= 16  # the walk found the API (a broken walk would pass vacuously)
    missing = []
    for path, callback in public:
        if path in NOT_OPERATIONS:
            continue
        documented = set(schema["paths"].get(path, {})) & set(HTTP_METHODS)
        if documented != methods_of(callback):
            missing.append((path, sorted(methods_of(callback)), sorted(documented)))
    assert not missing, missing
    assert set(schema["paths"]) <= {p for p, _ in public}, "a documented path that is not routed"


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield f"{method.upper()} {path}", operation


def test_every_operation_has_a_summary_and_documented_errors(schema):
    problems = []
    for name, operation in operations(schema):
        if not operation.get("summary") or not operation.get("operationId"):
            problems.append((name, "no summary or operationId"))
        if not operation.get("security"):
            problems.append((name, "no security (every operation takes an API key)"))
        statuses = set(operation["responses"])
        for status in ("401", "403", "503"):
            if status not in statuses:
                problems.append((name, f"{status} not documented"))
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                media = response["content"]["application/json"]["schema"]
                if media != {"$ref": "#/components/schemas/ErrorEnvelope"}:
                    problems.append((name, f"{status} without the error envelope"))
            elif not response.get("content") and status != "204":
                problems.append((name, f"{status} without a body schema"))
    assert not problems, problems


def test_tools_invoke_documents_one_body_per_tool(schema):
    from sessions_app.tools import TOOLS

    body = schema["paths"]["/tools/invoke"]["post"]["requestBody"]["content"]["application/json"]
    request = schema["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]
    assert set(request["discriminator"]["mapping"]) == set(TOOLS.names)
    assert len(request["oneOf"]) == len(TOOLS.names)


def test_the_docs_page_renders(db):
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200 and b"swagger" in response.content.lower()
