"""Issue 29.5: the agents' activity charts have axes, a range (24 h / 7 d / 30 d), the error
rate and the p95 run time, on the browser's list and the admin's index."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import Run
from sessions_app.reads import activity
from tests.conftest import finished_run, make_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def runs(agents):
    main = make_session("main")
    for i in range(19):
        finished_run(main, hours_ago=1, ms=100 + i)  # 100..118 ms
    finished_run(main, hours_ago=2, ms=5000, status=Run.ERROR)  # the slowest, failed
    finished_run(main, hours_ago=3 * 24, ms=300, status=Run.TIMEOUT)  # in 7 d and 30 d only
    finished_run(main, hours_ago=20 * 24, ms=300)  # in 30 d only
    return main


def test_each_range_counts_its_runs_error_rate_and_p95(runs):
    day, week, month = (
        {a.agent_id: a for a in activity.compute(range_name=name).agents}["main"]
        for name in ("24h", "7d", "30d")
    )
    assert (day.runs, day.failed, day.error_rate) == (20, 1, 1 / 20)
    assert day.p95_ms == 118 and day.median_ms == 109  # nearest rank: 19th of 20
    assert (week.runs, week.failed, len(week.runs_per_bucket)) == (21, 2, 28)
    assert (month.runs, month.failed, len(month.runs_per_bucket)) == (22, 2, 30)
    assert sum(month.runs_per_bucket) == 22


def activity_table(html: str) -> str:
    table = html[html.index('id="agent-activity"') :]
    return table[: table.index("</section>")]


def test_the_list_offers_the_ranges_and_shows_rate_and_p95(viewer, runs):
    table = activity_table(viewer.get("/").content.decode())
    assert 'data-range="24h"' in table and "Agents, last 24 hours" in table
    assert '<a href="?range=7d" data-range="7d">7 days</a>' in table
    assert '<a href="?range=30d" data-range="30d">30 days</a>' in table
    row = table[table.index('data-agent="main"') :]
    assert (
        '<td class="num error-rate" title="1 failed (error or timeout) of the runs that ended">5%</td>'
        in row
    )
    assert '<td class="num p95">118 ms</td>' in row
    # Axes: the value axis's top and 0, the time axis from 24 h ago to now.
    assert 'class="axis"' in row
    assert re.search(r'<text class="tick"[^>]*>19</text>', row)
    assert ">24 h ago</text>" in row and ">now</text>" in row

    month = activity_table(viewer.get("/?range=30d&kind=main").content.decode())
    assert "Agents, last 30 days" in month and ">30 d ago</text>" in month
    assert '<a href="?kind=main&amp;range=7d" data-range="7d">' in month  # filters kept
    assert re.search(r"<title>\w{3} \d\d \w{3} UTC: \d+ runs, \d+ failed</title>", month)


def test_a_bad_range_is_a_400_on_the_list(viewer, runs):
    response = viewer.get("/?range=1y")
    assert response.status_code == 400
    assert b"range" in response.content


def test_the_admin_index_takes_the_range_too(runs):
    client = Client()
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
    week = activity_table(client.get("/admin/?range=7d").content.decode())
    assert "Agents, last 7 days" in week and '<td class="num runs">21</td>' in week
    # Not a range: the default, not an error (the admin's index has no filters to report it).
    assert "Agents, last 24 hours" in activity_table(client.get("/admin/?range=x").content.decode())
