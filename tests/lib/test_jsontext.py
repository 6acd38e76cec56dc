"""jsontext.loads reads a stored JSON column exactly as Django's JSONField does (json.loads),
though most texts go through orjson (issue 18: the history page's JSON decoding)."""

import json

import pytest

from sessions_app.lib import rawsql
from sessions_app.lib.jsontext import loads, loads_many

TEXTS = [
    '{"a": [1, 2.5, "x", true, null], "b": {"c": "d"}}',
    "123456789012345678901234567890",  # past 64 bits: orjson would read a float
    '{"n": -9223372036854775809, "t": "x"}',  # just below int64
    "18446744073709551615",  # the largest uint64, which orjson keeps
    '{"a": 1e400}',  # orjson refuses infinities; json reads inf
    '"' + "1" * 30 + '"',  # 30 digits in a string: still a string
    "[" + ",".join(["12"] * 30) + "]",  # many digits, no long run
    '"caf\\u00e9 \\ud83d\\ude00"',
]


@pytest.mark.parametrize("text", TEXTS)
def test_loads_reads_as_json_loads_does(text):
    assert repr(loads(text)) == repr(json.loads(text))


def test_text_that_is_not_json_stays_text():
    assert loads("not json") == "not json"


@pytest.mark.parametrize("fast", [True, False])
def test_loads_many_reads_each_text_as_loads_does(settings, fast):
    """A page's cells in one call (issue 26): the same values as one loads() each, with NULLs,
    long digit runs in some cells only, and a text orjson refuses (a lone surrogate's escape,
    which jsonb never holds, but json.loads reads)."""
    settings.OPENCLAW_FAST_ROWS = fast
    texts = [*TEXTS, None, '{"s": "\\ud800"}', "[]", "null", '"1234567890123456789"']
    expected = [None if t is None else loads(t) for t in texts]
    assert repr(loads_many(texts)) == repr(expected)
    clean = [t for t in texts if t is not None and "1" * 19 not in t and "e400" not in t]
    clean = [t for t in clean if "\\ud800" not in t]
    assert repr(loads_many(clean)) == repr([loads(t) for t in clean])
    assert loads_many([]) == []


def test_decode_json_decodes_the_columns_named_and_keeps_the_rest(settings):
    found = [(1, '{"a": 1}', "text", None), (2, None, "more", "[1, 2]")]
    assert rawsql.decode_json(found, (1, 3)) == [
        (1, {"a": 1}, "text", None),
        (2, None, "more", [1, 2]),
    ]
    assert rawsql.decode_json([], (1,)) == []
