"""`Authorization: Bearer <api key>` for DRF views and for the plain /tools/invoke view."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from ..models import ApiKey


class KeyUser:
    """What `request.user` is for an API-key request: enough for DRF's IsAuthenticated."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def __str__(self):
        return str(self.api_key)


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or "\x00" in token:
        return None
    return token.strip()


def api_key_from_header(header: str | None) -> ApiKey | None:
    token = bearer_token(header)
    return ApiKey.authenticate(token) if token else None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if not header:
            return None
        api_key = api_key_from_header(header)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key")
        return KeyUser(api_key), api_key

    def authenticate_header(self, request):
        return 'Bearer realm="openclaw-sessions"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key from create_api_key"}
