"""The silent tokens (NO_REPLY, REPLY_SKIP, ANNOUNCE_SKIP) as OpenClaw 9.6 matches them (§1.5):
case-insensitively, tolerating repetition and edge punctuation. (A child's final ANNOUNCE_SKIP
is still an exact, trimmed match: completions.py.)"""

from __future__ import annotations

import re

_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def is_silent(text: str, token: str) -> bool:
    """`NO_REPLY`, `no_reply.`, `NO_REPLY NO_REPLY` … are the token; anything else is not."""
    # Word by word, stopping at the first that is not the token: history asks this of every
    # assistant text, and nearly all of them fail on their first word.
    found = False
    for word in text.split():
        word = _EDGE.sub("", word)
        if not word:
            continue
        if word.upper() != token:
            return False
        found = True
    return found
