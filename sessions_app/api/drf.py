"""DRF's hooks for the REST resources, each a thin call into the one edge (api/http.py): the same
key check, body rules and error envelope as /tools/invoke and the async views."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from openclaw_common.errors import InvalidArgument, Unauthenticated

from ..access.identity import Requester
from ..access.source_limit import source_of_request
from ..lib.args import Args
from ..lib.jsontext import dumps_bytes
from ..models import ApiKey
from . import gate, http, ratelimit


class KeyUser:
    """What `request.user` is for an API-key request: enough for DRF's IsAuthenticated."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def __str__(self):
        return str(self.api_key)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        scope = getattr(request._request, "scope", None)  # the ASGI door's ticket rides there
        authorization = request.META.get("HTTP_AUTHORIZATION")
        api_key = gate.admit(authorization, scope, source=source_of_request(request))
        return KeyUser(api_key), api_key

    def authenticate_header(self, request):
        return http.WWW_AUTHENTICATE


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key from create_api_key"}


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        # DRF reads the request as a stream, which skips Django's DATA_UPLOAD_MAX_MEMORY_SIZE
        # check on request.body; apply it here.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = b""
        if stream is not None:
            raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise RequestDataTooBig(http.TOO_LARGE)
        return http.decode_json_object(raw)


class FastJSONRenderer(JSONRenderer):
    """orjson: a 200-message history page renders in ~0.1 ms instead of ~0.9."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dumps_bytes(data)


def json_body(request):
    """request.data, except that an empty body is refused as everywhere else.

    DRF reads a body without content as {} and never calls the parser, so `PUT` with nothing
    would otherwise reset an agent to its defaults.
    """
    if request.stream is None:
        raise InvalidArgument("request body is empty; send a JSON object")
    return request.data


def exception_handler(exc, context):
    """The envelope for DRF's own errors; everything else as the edge maps it."""
    # Django's exceptions, as DRF's default handler maps them (`?format=xml` raises Http404
    # during content negotiation), so they get the envelope rather than an HTML page.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        exc = Unauthenticated()
    if isinstance(exc, ratelimit.RateLimited):
        return ratelimit.too_many(exc)
    response = http.error_response(exc)
    if response is not None:
        return response
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug: Django's 500
    headers = {}
    if isinstance(exc, exceptions.MethodNotAllowed) and context.get("view") is not None:
        headers["Allow"] = ", ".join(context["view"].allowed_methods)
    return http.error_json(exc.status_code, _message(exc.detail), headers=headers)


def _message(detail) -> str:
    if isinstance(detail, list):
        return "; ".join(_message(d) for d in detail)
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_message(v)}" for k, v in detail.items())
    return str(detail)


def query_args(request, *, list_names: tuple[str, ...] = ()) -> dict:
    """Query parameters as tool args: one value each, except list parameters (repeat or commas)."""
    args: dict = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        if name in list_names:
            args[name] = [part for v in values for part in v.split(",") if part.strip()]
        elif len(values) > 1:
            raise InvalidArgument(f"{name} must be given once")
        else:
            args[name] = values[0]
    return args


def no_query_args(request) -> None:
    """Endpoints without query parameters still refuse unknown ones, as the tools do."""
    Args(query_args(request), frozenset(), tool="this endpoint")


def requester_of(request) -> Requester:
    """The requester a DRF view's request speaks as (its key, and the session it names)."""
    return http.requester(request.auth, request)
