"""The one rule for showing a time where a person reads (the browser and the admin alike): the
text says how long ago ("3 min ago"), hovering shows the absolute time in UTC
("2026-11-29 02:47:15 UTC"), and the `datetime` attribute carries it for machines. UTC because
the server's logs, the API's ISO strings and the admin's raw fields are UTC; a time in the
reader's locale beside a UTC panel was the confusion (issue 29.5). The browser's script keeps
the relative text fresh from `data-ms`; nothing rewrites the hover text.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils.html import format_html
from django.utils.safestring import SafeString

UNITS = ((86400 * 365, "y"), (86400, "d"), (3600, "h"), (60, "min"))


def to_ms(value: int | float | datetime | None) -> int | None:
    """Epoch milliseconds from ms or an aware datetime; None for anything else."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return ""


def absolute(ms: int | None) -> str:
    """ "2026-11-29 02:47:15 UTC" (the hover text)."""
    text = iso(ms)
    return text.replace("T", " ").replace("+00:00", " UTC") if text else ""


def relative(ms: int | None, now: int) -> str:
    """ "3 min ago", "just now" (a time ahead of `now` is "just now" too)."""
    if ms is None:
        return ""
    seconds = max(0, (now - ms) // 1000)
    for size, unit in UNITS:
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def now_ms() -> int:
    return int(datetime.now(tz=UTC).timestamp() * 1000)


def time_tag(value: int | float | datetime | None, *, now: int | None = None) -> SafeString:
    """`<time class="rel" …>3 min ago</time>` with the absolute time as its title; "" for none."""
    ms = to_ms(value)
    text = iso(ms)
    if ms is None or not text:
        return SafeString("")
    return format_html(
        '<time class="rel" datetime="{}" data-ms="{}" title="{}">{}</time>',
        text,
        ms,
        absolute(ms),
        relative(ms, now_ms() if now is None else now),
    )
