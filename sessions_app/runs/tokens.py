"""The silent tokens (NO_REPLY, REPLY_SKIP, ANNOUNCE_SKIP) as OpenClaw 9.6 matches them (§1.5):
case-insensitively, tolerating repetition and edge punctuation. (A child's final ANNOUNCE_SKIP
is still an exact, trimmed match: completions.py.)"""

from __future__ import annotations

import re

_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def is_silent(text: str, token: str) -> bool:
    """`NO_REPLY`, `no_reply.`, `NO_REPLY NO_REPLY` … are the token; anything else is not."""
    words = [_EDGE.sub("", word) for word in text.split()]
    words = [w for w in words if w]
    return bool(words) and all(w.upper() == token for w in words)
