"""Per-agent run activity over a range (the last 24 hours, 7 days or 30 days), aggregated on the
server and cached.

For the admin's index and the browser's session list: per agent, runs per bucket (24 hours, 28
quarters of a day, 30 days) with the failed ones among them, the error rate, the median and
95th-percentile run time, and the tokens used. One query over the range's runs (index
`run_created`), summed in Python, kept in the Django cache for CACHE_SECONDS per range, so a
page load costs a cache read.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.cache import cache
from django.utils import timezone

from ..models import Agent, Run

CACHE_SECONDS = 60
CACHE_KEY = "sessions_app:agent-activity:v2:{}"
# Runs that count against the error rate: they ended without a reply (an abort is a person's
# or a parent's choice, not a failure).
FAILED = frozenset({Run.ERROR, Run.TIMEOUT})


@dataclass(frozen=True)
class Range:
    name: str  # as the URL says it: 24h, 7d, 30d
    title: str  # "24 hours"
    bucket: timedelta
    buckets: int
    label_format: str  # strftime of a bucket's start (and end) in its tooltip

    @property
    def span(self) -> timedelta:
        return self.bucket * self.buckets

    def start(self, now: datetime) -> datetime:
        """The start of the oldest bucket; the newest one holds `now`."""
        if self.bucket >= timedelta(days=1):
            top = now.replace(hour=0, minute=0, second=0, microsecond=0)
        else:
            hours = int(self.bucket.total_seconds() // 3600)
            top = now.replace(hour=now.hour - now.hour % hours, minute=0, second=0, microsecond=0)
        return top - self.bucket * (self.buckets - 1)


RANGES = {
    r.name: r
    for r in (
        Range("24h", "24 hours", timedelta(hours=1), 24, "%H:00"),
        Range("7d", "7 days", timedelta(hours=6), 28, "%a %d %b %H:00"),
        Range("30d", "30 days", timedelta(days=1), 30, "%a %d %b"),
    )
}
DEFAULT_RANGE = "24h"
HOURS = RANGES[DEFAULT_RANGE].buckets


@dataclass
class AgentActivity:
    agent_id: str
    buckets: int = HOURS
    runs_per_bucket: list[int] = field(default_factory=list)  # oldest bucket first
    failed_per_bucket: list[int] = field(default_factory=list)
    tokens_per_bucket: list[int] = field(default_factory=list)
    runtimes_ms: list[int] = field(default_factory=list)
    finished: int = 0  # runs that ended (any status), the error rate's denominator

    def __post_init__(self):
        for name in ("runs_per_bucket", "failed_per_bucket", "tokens_per_bucket"):
            if not getattr(self, name):
                setattr(self, name, [0] * self.buckets)

    @property
    def runs(self) -> int:
        return sum(self.runs_per_bucket)

    @property
    def failed(self) -> int:
        return sum(self.failed_per_bucket)

    @property
    def error_rate(self) -> float | None:
        """Failed runs (error, timeout) of the runs that ended; None when none ended."""
        return self.failed / self.finished if self.finished else None

    @property
    def tokens(self) -> int:
        return sum(self.tokens_per_bucket)

    @property
    def median_ms(self) -> int | None:
        return int(statistics.median(self.runtimes_ms)) if self.runtimes_ms else None

    @property
    def p95_ms(self) -> int | None:
        """The 95th percentile run time (nearest rank: a run time some run actually took)."""
        if not self.runtimes_ms:
            return None
        ordered = sorted(self.runtimes_ms)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass
class Activity:
    range: Range
    since: datetime  # the start of the oldest bucket
    agents: list[AgentActivity]

    def bucket_label(self, index: int) -> str:
        start = self.since + self.range.bucket * index
        end = start + self.range.bucket
        fmt = self.range.label_format
        if self.range.bucket >= timedelta(days=1):
            return f"{start:{fmt}} UTC"
        return f"{start:{fmt}}–{end:%H:00} UTC"


def run_tokens(usage) -> int:
    """A run's tokens: usage.totalTokens, else input + output (Session totals add the same)."""
    if not isinstance(usage, dict):
        return 0
    try:
        total = usage.get("totalTokens") or (usage.get("input") or 0) + (usage.get("output") or 0)
        return max(0, int(total))
    except (TypeError, ValueError):
        return 0


def compute(now: datetime | None = None, range_name: str = DEFAULT_RANGE) -> Activity:
    """The range's buckets up to the current one, every agent (those without runs show zeros)."""
    window = RANGES[range_name]
    now = now or timezone.now()
    since = window.start(now)
    agents = {
        a: AgentActivity(a, window.buckets)
        for a in Agent.objects.order_by("id").values_list("id", flat=True)
    }
    rows = Run.objects.filter(created_at__gte=since).values_list(
        "session__agent_id", "status", "created_at", "started_at", "finished_at", "usage"
    )
    for agent_id, status, created, started, finished, usage in rows.iterator(chunk_size=2000):
        stats = agents.get(agent_id)
        if stats is None:
            stats = agents[agent_id] = AgentActivity(agent_id, window.buckets)
        at = min(window.buckets - 1, int((created - since) / window.bucket))
        stats.runs_per_bucket[at] += 1
        stats.tokens_per_bucket[at] += run_tokens(usage)
        if finished:
            stats.finished += 1
            if status in FAILED:
                stats.failed_per_bucket[at] += 1
        if started and finished:
            stats.runtimes_ms.append(max(0, int((finished - started).total_seconds() * 1000)))
    return Activity(range=window, since=since, agents=list(agents.values()))


def agent_activity(range_name: str = DEFAULT_RANGE) -> Activity:
    """compute() for the range, at most CACHE_SECONDS old."""
    key = CACHE_KEY.format(range_name)
    found = cache.get(key)
    if found is None:
        found = compute(range_name=range_name)
        cache.set(key, found, CACHE_SECONDS)
    return found
