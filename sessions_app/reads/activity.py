"""Per-agent run activity over the last day, aggregated on the server and cached.

For the admin's index and the browser's session list: per agent, runs per hour (24 hourly
buckets), the median run time and the tokens used. One query over the day's runs (index
`run_created`), summed in Python, kept in the Django cache for CACHE_SECONDS, so a page load
costs a cache read.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.cache import cache
from django.utils import timezone

from ..models import Agent, Run

HOURS = 24
CACHE_SECONDS = 60
CACHE_KEY = "sessions_app:agent-activity:v1"


@dataclass
class AgentActivity:
    agent_id: str
    runs_per_hour: list[int] = field(default_factory=lambda: [0] * HOURS)  # oldest hour first
    tokens_per_hour: list[int] = field(default_factory=lambda: [0] * HOURS)
    runtimes_ms: list[int] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(self.runs_per_hour)

    @property
    def tokens(self) -> int:
        return sum(self.tokens_per_hour)

    @property
    def median_ms(self) -> int | None:
        return int(statistics.median(self.runtimes_ms)) if self.runtimes_ms else None


@dataclass
class Activity:
    since: datetime  # the start of the oldest hour
    agents: list[AgentActivity]

    def hour_label(self, index: int) -> str:
        start = self.since + timedelta(hours=index)
        return f"{start:%H}:00–{start + timedelta(hours=1):%H}:00 UTC"


def run_tokens(usage) -> int:
    """A run's tokens: usage.totalTokens, else input + output (Session totals add the same)."""
    if not isinstance(usage, dict):
        return 0
    try:
        total = usage.get("totalTokens") or (usage.get("input") or 0) + (usage.get("output") or 0)
        return max(0, int(total))
    except (TypeError, ValueError):
        return 0


def compute(now: datetime | None = None) -> Activity:
    """The last HOURS whole-and-current hours, every agent (those without runs show zeros)."""
    now = now or timezone.now()
    since = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS - 1)
    agents = {
        a: AgentActivity(a) for a in Agent.objects.order_by("id").values_list("id", flat=True)
    }
    rows = Run.objects.filter(created_at__gte=since).values_list(
        "session__agent_id", "created_at", "started_at", "finished_at", "usage"
    )
    for agent_id, created, started, finished, usage in rows.iterator(chunk_size=2000):
        stats = agents.setdefault(agent_id, AgentActivity(agent_id))
        hour = min(HOURS - 1, int((created - since).total_seconds() // 3600))
        stats.runs_per_hour[hour] += 1
        stats.tokens_per_hour[hour] += run_tokens(usage)
        if started and finished:
            stats.runtimes_ms.append(max(0, int((finished - started).total_seconds() * 1000)))
    return Activity(since=since, agents=list(agents.values()))


def agent_activity() -> Activity:
    """compute(), at most CACHE_SECONDS old."""
    found = cache.get(CACHE_KEY)
    if found is None:
        found = compute()
        cache.set(CACHE_KEY, found, CACHE_SECONDS)
    return found
