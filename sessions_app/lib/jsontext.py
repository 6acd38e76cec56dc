"""JSON encoding on hot paths: orjson (C) with the standard library as the fallback.

orjson's output equals `json.dumps(..., ensure_ascii=False)` with the same separators, and is
several times faster; it refuses integers past 64 bits, which the standard encoder takes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson
from django.conf import settings


def dumps_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return _valid_unicode(text).encode()


def dumps_pretty(value: Any) -> str:
    """Two-space indented JSON, as OpenClaw puts the details in a tool result's text."""
    return dumps_pretty_bytes(value).decode()


def dumps_pretty_bytes(value: Any) -> bytes:
    """dumps_pretty() as UTF-8 bytes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except TypeError:
        return _valid_unicode(json.dumps(value, indent=2, ensure_ascii=False)).encode()


# A surrogate code point in a Python str is always unpaired (a pair decodes to one code point):
# it cannot be UTF-8. Only a row stored before store.check_storable refused them (an older
# version, an import) holds one, and SQLite's JSON text keeps it; it is read as U+FFFD, as
# transcript.jsonl and Node's Buffer write it, so the whole answer still goes out.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_unicode(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def without_surrogates(value: Any) -> Any:
    """`value` with every surrogate code point in its strings (keys too) as U+FFFD."""
    if isinstance(value, str):
        return _valid_unicode(value)
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value


def byte_size(value: Any) -> int:
    return len(dumps_bytes(value))


# An integer past 64 bits, which orjson reads as a float where the standard library keeps it
# exact (jsonb stores any number exactly), is a run of at least 19 digits. Counting a text's
# digits (bytes.translate, one pass in C) costs about what orjson does; the regular expression
# is ten times that, so it runs only on a text with 19 digits or more.
_LONG_NUMBER = re.compile(r"[0-9]{19}")
_DIGITS = b"0123456789"


def loads(text: str) -> Any:
    """A stored JSON column's text (jsonb as a plain cursor returns it) as Django's JSONField
    reads it (json.loads; text that is not JSON stays text), faster: orjson, unless the text
    holds a number orjson would read differently (or cannot read)."""
    if len(text) < 19 or _few_digits(text) or _LONG_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return text
    # (orjson refuses an unpaired surrogate's escape, which json takes: models/fields.py)
    return without_surrogates(decoded) if "\\u" in text else decoded


def _few_digits(text: str) -> bool:
    raw = text.encode()
    return len(raw) - len(raw.translate(None, _DIGITS)) < 19


def loads_many(texts: Sequence[str | None]) -> list[Any]:
    """[loads(t) for each text, None kept] for texts that are each one JSON value (jsonb as a
    plain PostgreSQL cursor returns it: never text that is not JSON), decoded in one orjson
    call: a page's few hundred cells cost one call instead of one each (issue 26). Equal to
    the cell-by-cell loads: orjson reads a value inside an array as it reads it alone, and a cell
    that loads() would give to json.loads (a run of 19 digits) is read by loads() again.
    settings.OPENCLAW_FAST_ROWS off: cell by cell (the plain path the tests compare with)."""
    if not texts:
        return []
    if not settings.OPENCLAW_FAST_ROWS:
        return _loads_each(texts)
    # One encode of the joined text: orjson reads bytes faster than a str with non-ASCII text.
    try:
        raw = ("[" + ",".join([t if t is not None else "null" for t in texts]) + "]").encode()
    except TypeError:  # a value that is not text (never from a jsonb column)
        return _loads_each(texts)
    try:
        values = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _loads_each(texts)
    if len(values) != len(texts):  # (cannot happen for one JSON value per text)
        return _loads_each(texts)
    if _RUN_OF_19 in raw.translate(_DIGITS_AS_ZERO):
        for i, text in enumerate(texts):
            if text is not None and _LONG_NUMBER.search(text):
                values[i] = loads(text)
    return values


# A run of 19 digits, found in C at memory speed: every digit as "0", everything else as " ",
# then a substring search (the regular expression takes ~30 ns a byte: 10 ms for a page).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_RUN_OF_19 = b"0" * 19


def _loads_each(texts: Sequence[str | None]) -> list[Any]:
    """Cell by cell; what is not text (None) is kept as it is."""
    return [loads(t) if isinstance(t, str) else t for t in texts]
