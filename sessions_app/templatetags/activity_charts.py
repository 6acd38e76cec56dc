"""`{% agent_activity %}`: per agent, runs per hour, median run time and tokens over the last
day (sessions_app/reads/activity.py, cached), as a table of inline SVG charts. The admin's index and
the browser's session list both show it."""

from __future__ import annotations

from django import template

from ..lib import charts
from ..reads import activity
from ..ui.present import compact_number, duration

register = template.Library()


@register.inclusion_tag("ui/_activity.html")
def agent_activity(css: str = "") -> dict:
    found = activity.agent_activity()
    labels = [found.hour_label(i) for i in range(activity.HOURS)]
    return {
        "css": css,
        "hours": activity.HOURS,
        "agents": [
            {
                "id": a.agent_id,
                "runs": a.runs,
                "runs_chart": charts.bars(a.runs_per_hour, labels=labels, unit="runs"),
                "median": duration(a.median_ms) or "—",
                "tokens": compact_number(a.tokens) or "0",
                "tokens_chart": charts.bars(a.tokens_per_hour, labels=labels, unit="tokens"),
            }
            for a in found.agents
        ],
    }
