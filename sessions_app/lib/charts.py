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
# Room for the value axis's labels (left) and the time axis's (below) in bars().
AXIS_LEFT = 26
AXIS_BOTTOM = 11
AXIS_COLOUR = "#8a9099"
FONT_SIZE = 8
BAR_COLOUR = "#1f5fbf"
FAILED_COLOUR = "#b3261e"
EMPTY_COLOUR = "#c8ccd2"
STATUS_COLOURS = {
    "ok": "#1d7a3d",
    "error": FAILED_COLOUR,
    "timeout": "#a15c00",
    "aborted": "#a15c00",
    "running": "#1f5fbf",
    "queued": "#6b7280",
}


def short_number(value: int) -> str:
    """1234 → 1.2k (an axis label has room for a few characters)."""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + suffix
    return str(value)


def _axes(*, plot_width: int, plot_height: int, top: int, ticks: Sequence[str]) -> list[SafeString]:
    """The value axis (0 and the top value) and the time axis (`ticks` spread evenly under the
    bars, the first at the left edge, the last at the right)."""
    x0, bottom = AXIS_LEFT - 2, plot_height
    parts = [
        format_html(
            '<path class="axis" d="M{} 0V{}H{}" fill="none" stroke="{}" stroke-width="1"/>',
            x0,
            bottom,
            AXIS_LEFT + plot_width,
            AXIS_COLOUR,
        ),
        format_html(
            '<text class="tick" x="{}" y="{}" text-anchor="end" font-size="{}" fill="{}">{}</text>',
            x0 - 2,
            FONT_SIZE,
            FONT_SIZE,
            AXIS_COLOUR,
            short_number(top),
        ),
        format_html(
            '<text class="tick" x="{}" y="{}" text-anchor="end" font-size="{}" fill="{}">0</text>',
            x0 - 2,
            bottom,
            FONT_SIZE,
            AXIS_COLOUR,
        ),
    ]
    for index, tick in enumerate(ticks):
        share = index / (len(ticks) - 1) if len(ticks) > 1 else 0
        anchor = "start" if index == 0 else "end" if index == len(ticks) - 1 else "middle"
        parts.append(
            format_html(
                '<text class="tick time" x="{}" y="{}" text-anchor="{}" font-size="{}" '
                'fill="{}">{}</text>',
                f"{AXIS_LEFT + share * plot_width:.0f}",
                bottom + AXIS_BOTTOM - 1,
                anchor,
                FONT_SIZE,
                AXIS_COLOUR,
                tick,
            )
        )
    return parts


def bars(
    values: Sequence[int],
    *,
    labels: Sequence[str],
    unit: str,
    failed: Sequence[int] | None = None,
    ticks: Sequence[str] = (),
    title: str = "",
    height: int = 32,
    css: str = "",
) -> SafeString:
    """A bar per value (oldest first) on two axes: the value axis from 0 to the top value, the
    time axis under the bars labelled `ticks` (e.g. "24 h ago", "now"). `failed`: the part of
    each value that failed, drawn red at the top of its bar. Each bar's tooltip says
    `<label>: <value> <unit>` (and how many failed)."""
    top = max(values, default=0) or 1
    plot_width = len(values) * (BAR_WIDTH + BAR_GAP)
    rects = []
    for index, (value, label) in enumerate(zip(values, labels, strict=True)):
        bad = failed[index] if failed is not None else 0
        tall = round(value / top * (height - 2)) if value else 0
        x = AXIS_LEFT + index * (BAR_WIDTH + BAR_GAP)
        tip = f"{label}: {value:,} {unit}" + (f", {bad:,} failed" if failed is not None else "")
        # An empty bucket still gets a hairline and a tooltip, so the axis reads whole.
        rects.append(
            format_html(
                '<rect class="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">'
                "<title>{}</title></rect>",
                "bar" if value else "bar empty",
                x,
                height - max(tall, 1),
                BAR_WIDTH,
                max(tall, 1),
                BAR_COLOUR if value else EMPTY_COLOUR,
                tip,
            )
        )
        if bad and value:
            red = max(1, round(tall * bad / value))
            rects.append(
                format_html(
                    '<rect class="bar failed" x="{}" y="{}" width="{}" height="{}" fill="{}">'
                    "<title>{}</title></rect>",
                    x,
                    height - tall,
                    BAR_WIDTH,
                    red,
                    FAILED_COLOUR,
                    tip,
                )
            )
    axes = _axes(plot_width=plot_width, plot_height=height, top=top, ticks=ticks)
    width, full_height = AXIS_LEFT + plot_width + 2, height + AXIS_BOTTOM
    return format_html(
        '<svg class="chart {}" role="img" viewBox="0 0 {} {}" width="{}" height="{}" '
        'aria-label="{}">{}{}</svg>',
        css,
        width,
        full_height,
        width,
        full_height,
        title or f"{unit}, {len(values)} bars",
        mark_safe("".join(axes)),
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
