"""jsontext.loads reads a stored JSON column exactly as Django's JSONField does (json.loads),
though most texts go through orjson (issue 18: the history page's JSON decoding)."""

import json

import pytest

from sessions_app.lib.jsontext import loads


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, "x", true, null], "b": {"c": "d"}}',
        "123456789012345678901234567890",  # past 64 bits: orjson would read a float
        '{"n": -9223372036854775809, "t": "x"}',  # just below int64
        "18446744073709551615",  # the largest uint64, which orjson keeps
        '{"a": 1e400}',  # orjson refuses infinities; json reads inf
        '"' + "1" * 30 + '"',  # 30 digits in a string: still a string
        "[" + ",".join(["12"] * 30) + "]",  # many digits, no long run
        '"caf\\u00e9 \\ud83d\\ude00"',
    ],
)
def test_loads_reads_as_json_loads_does(text):
    assert repr(loads(text)) == repr(json.loads(text))


def test_text_that_is_not_json_stays_text():
    assert loads("not json") == "not json"
