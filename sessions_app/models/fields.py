"""A transcript's JSON columns, read so that every page can encode them.

store.check_storable refuses an unpaired UTF-16 surrogate ("\\ud800") on every way in, but a row
stored before it did (an older version, a hand-written import) keeps one in SQLite's JSON text
(jsonb never could). Decoded, it is a Python str no UTF-8 encoder takes: the REST history, the
browser and the admin answered 500. Read here it is U+FFFD, as transcript.jsonl and Node's
Buffer write it, once for every reader.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models

from ..lib.jsontext import without_surrogates

# The JSON escape of a high surrogate not followed by a low one, or of a low one not preceded by
# a high one (a pair is one character, an emoji). A literal backslash before "u" can match too:
# that costs a walk that changes nothing. Stored non-ASCII text is all escapes on SQLite
# (json.dumps' default), so the test is on the escapes, and a regular expression keeps it in C.
_LONE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class TranscriptJSONField(models.JSONField):
    """models.JSONField whose stored text, should it hold an unpaired surrogate, reads as U+FFFD."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        decoded = super().from_db_value(value, expression, connection)
        if isinstance(value, str) and "\\u" in value and _LONE_ESCAPE.search(value):
            return without_surrogates(decoded)
        return decoded
