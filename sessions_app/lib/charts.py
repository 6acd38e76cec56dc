"""Small inline SVG charts, rendered on the server: no script, no external asset, nothing the
page CSP has to allow (colours are presentation attributes, which the browser's stylesheet may
override with classes; no `style` attributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

BAR_WIDTH = 6
BAR_GAP = 1
STATUS_COLOURS = {
    "ok": "#1d7a3d",
    "error": "#b3261e",
    "timeout": "#a15c00",
    "aborted": "#a15c00",
    "running": "#1f5fbf",
    "queued": "#6b7280",
}


def bars(
    values: Sequence[int], *, labels: Sequence[str], unit: str, height: int = 28, css: str = ""
) -> SafeString:
    """A bar per value (oldest first), each with a tooltip `<label>: <value> <unit>`."""
    top = max(values, default=0) or 1
    width = len(values) * (BAR_WIDTH + BAR_GAP)
    rects = []
    for index, (value, label) in enumerate(zip(values, labels, strict=True)):
        tall = round(value / top * (height - 2)) if value else 0
        x = index * (BAR_WIDTH + BAR_GAP)
        # An empty hour still gets a hairline and a tooltip, so the axis reads as 24 hours.
        rects.append(
            format_html(
                '<rect class="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">'
                "<title>{}: {} {}</title></rect>",
                "bar" if value else "bar empty",
                x,
                height - max(tall, 1),
                BAR_WIDTH,
                max(tall, 1),
                "#1f5fbf" if value else "#c8ccd2",
                label,
                f"{value:,}",
                unit,
            )
        )
    return format_html(
        '<svg class="chart {}" role="img" viewBox="0 0 {} {}" width="{}" height="{}" '
        'aria-label="{}">{}</svg>',
        css,
        width,
        height,
        width,
        height,
        f"{unit} per hour, last {len(values)} hours",
        mark_safe("".join(rects)),
    )


def run_timeline(runs: Sequence, *, now: datetime, width: int = 280, height: int = 22) -> str:
    """The given runs on one time axis, from the first start to now: a bar per run from its
    start (or creation) to its end (or now), coloured by status, with a tooltip."""
    if not runs:
        return ""
    starts = [r.started_at or r.created_at for r in runs]
    first = min(starts)
    span = max(1.0, (now - first).total_seconds())
    rects = []
    for run, start in sorted(zip(runs, starts, strict=True), key=lambda pair: pair[1]):
        end = run.finished_at or now
        x = (start - first).total_seconds() / span * (width - 2)
        w = max(2.0, (end - start).total_seconds() / span * (width - 2))
        runtime = run.runtime_ms
        took = f"{runtime:,} ms" if runtime is not None else "not finished"
        rects.append(
            format_html(
                '<rect class="tl tl-{}" x="{}" y="3" width="{}" height="{}" rx="1" '
                'fill="{}"><title>{} {} · {} UTC · {}</title></rect>',
                run.status,
                f"{x:.1f}",
                f"{min(w, width - x):.1f}",
                height - 6,
                STATUS_COLOURS.get(run.status, "#6b7280"),
                run.kind,
                run.status,
                f"{start:%Y-%m-%d %H:%M:%S}",
                took,
            )
        )
    return format_html(
        '<svg class="chart timeline" role="img" viewBox="0 0 {} {}" width="{}" height="{}" '
        'aria-label="{}"><line x1="0" y1="{}" x2="{}" y2="{}" stroke="#c8ccd2"/>{}</svg>',
        width,
        height,
        width,
        height,
        escape(f"Timeline of the latest {len(runs)} runs"),
        height - 1,
        width,
        height - 1,
        mark_safe("".join(rects)),
    )
