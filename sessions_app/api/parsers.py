"""A JSON parser whose errors say what is wrong with the body (never a 500)."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from ..errors import InvalidArgument
from ..store import check_storable


def decode_json_body(raw: bytes):
    """Strict UTF-8 + JSON; raises ValueError with a client-facing message."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("request body is not valid UTF-8") from None
    if not text.strip():
        raise ValueError("request body is empty; send a JSON object")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        # ValueError also covers integers past int()'s 4300-digit limit.
        raise ValueError(f"request body is not valid JSON: {exc}") from None
    check_text(data)
    return data


class _Rejected(ValueError):
    pass


def _reject_constant(name):
    raise _Rejected(f"{name} is not JSON")


def check_text(data) -> None:
    """Refuse strings no column can hold (see store.check_storable), as a ValueError."""
    try:
        check_storable(data)
    except InvalidArgument as exc:
        raise ValueError(exc.message) from None


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        # DRF reads the request as a stream, which skips Django's DATA_UPLOAD_MAX_MEMORY_SIZE
        # check on request.body; apply it here (the exception handler turns it into 413).
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = b""
        if stream is not None:
            raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise RequestDataTooBig("request body is larger than the limit")
        try:
            return decode_json_body(raw)
        except ValueError as exc:
            raise ParseError(str(exc)) from None
