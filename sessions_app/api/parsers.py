"""A JSON parser whose errors say what is wrong with the body (never a 500)."""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


def decode_json_body(raw: bytes):
    """Strict UTF-8 + JSON; raises ValueError with a client-facing message."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("request body is not valid UTF-8") from None
    if not text.strip():
        raise ValueError("request body is empty; send a JSON object")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, RecursionError, _Rejected) as exc:
        raise ValueError(f"request body is not valid JSON: {exc}") from None


class _Rejected(ValueError):
    pass


def _reject_constant(name):
    raise _Rejected(f"{name} is not JSON")


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return decode_json_body(raw)
        except ValueError as exc:
            raise ParseError(str(exc)) from None
