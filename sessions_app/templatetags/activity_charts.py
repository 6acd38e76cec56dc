"""`{% agent_activity %}`: per agent, over the last 24 hours, 7 days or 30 days (`?range=`),
runs per bucket with the failed ones, the error rate, the median and p95 run time and the
tokens (sessions_app/reads/activity.py, cached), as a table of inline SVG charts with axes. The
admin's index and the browser's session list both show it."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template

from ..lib import charts
from ..reads import activity
from ..ui.present import compact_number, duration

register = template.Library()

# The time axis's labels per range: oldest, middle, now.
TICKS = {
    "24h": ("24 h ago", "12 h ago", "now"),
    "7d": ("7 d ago", "3½ d ago", "now"),
    "30d": ("30 d ago", "15 d ago", "now"),
}


def chosen_range(context) -> str:
    """The page's `activity_range` (the list's form checked it), else the request's `range`
    when it is one (the admin's index), else 24 hours."""
    chosen = context.get("activity_range")
    if not chosen:
        request = context.get("request")
        chosen = request.GET.get("range", "") if request is not None else ""
    return chosen if chosen in activity.RANGES else activity.DEFAULT_RANGE


def _rate(a: activity.AgentActivity) -> str:
    rate = a.error_rate
    if rate is None:
        return "—"
    return f"{rate:.0%}" if rate == 0 or rate >= 0.01 else "<1%"


@register.inclusion_tag("ui/_activity.html", takes_context=True)
def agent_activity(context, css: str = "", keep: str = "") -> dict:
    """`keep`: the page's other query parameters, which the range links carry along."""
    name = chosen_range(context)
    found = activity.agent_activity(name)
    window = found.range
    labels = [found.bucket_label(i) for i in range(window.buckets)]
    per = {"24h": "hour", "7d": "6 hours", "30d": "day"}[name]
    ticks = TICKS[name]
    prefix = f"{keep}&" if keep else ""
    return {
        "css": css,
        "range": window,
        "per": per,
        "ranges": [
            {
                "name": r.name,
                "title": r.title,
                "url": "?" + prefix + urlencode({"range": r.name}),
                "current": r.name == name,
            }
            for r in activity.RANGES.values()
        ],
        "agents": [
            {
                "id": a.agent_id,
                "runs": a.runs,
                "failed": a.failed,
                "error_rate": _rate(a),
                "runs_chart": charts.bars(
                    a.runs_per_bucket,
                    failed=a.failed_per_bucket,
                    labels=labels,
                    unit="runs",
                    ticks=ticks,
                    title=f"Runs per {per} (failed in red), last {window.title}",
                ),
                "median": duration(a.median_ms) or "—",
                "p95": duration(a.p95_ms) or "—",
                "tokens": compact_number(a.tokens) or "0",
                "tokens_chart": charts.bars(
                    a.tokens_per_bucket,
                    labels=labels,
                    unit="tokens",
                    ticks=ticks,
                    title=f"Tokens per {per}, last {window.title}",
                ),
            }
            for a in found.agents
        ],
    }
