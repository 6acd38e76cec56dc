"""Issue 17.7: per agent, runs per hour, median run time and tokens over the last day
(server-side, cached), on the browser's list and the admin's index; a session's run timeline."""

from __future__ import annotations

import re

import pytest

from sessions_app.reads import activity
from tests.conftest import finished_run, make_session

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture
def runs(agents):
    main = make_session("main")
    research = make_session("agent:research:main")
    finished_run(main, hours_ago=0, ms=100, tokens=50)
    finished_run(main, hours_ago=0, ms=300, tokens=70)
    finished_run(main, hours_ago=5, ms=200, tokens=30, status="error")
    finished_run(main, hours_ago=30, ms=9000, tokens=999)  # older than a day: left out
    finished_run(research, hours_ago=2, ms=1500, tokens=400)
    return {"main": main, "research": research}


def test_activity_is_aggregated_per_agent_and_hour(runs):
    found = {a.agent_id: a for a in activity.compute().agents}
    main, research = found["main"], found["research"]
    assert (main.runs, main.median_ms, main.tokens) == (3, 200, 150)
    assert main.runs_per_bucket[-1] == 2 and main.runs_per_bucket[-6] == 1
    assert main.tokens_per_bucket[-1] == 120
    assert (research.runs, research.median_ms, research.tokens) == (1, 1500, 400)
    assert len(main.runs_per_bucket) == activity.HOURS == 24


def test_activity_is_cached(runs, django_assert_num_queries):
    first = activity.agent_activity()
    finished_run(runs["main"], hours_ago=0, ms=1, tokens=1)
    with django_assert_num_queries(0):
        again = activity.agent_activity()
    assert [a.runs for a in again.agents] == [a.runs for a in first.agents]


def test_the_session_list_shows_the_charts(viewer, runs):
    html = viewer.get("/").content.decode()
    table = html[html.index('id="agent-activity"') :]
    table = table[: table.index("</section>")]
    row = table[table.index('data-agent="main"') :]
    row = row[: row.index("</tr>")]
    # A bar per hour in each chart, and the failed run's red part on its hour's bar.
    assert row.count("<svg") == 2 and row.count("<rect") == 48 + 1
    assert row.count('<rect class="bar failed"') == 1
    assert '<td class="num runs">3</td>' in row and '<td class="num median">200 ms</td>' in row
    assert '<td class="num tokens">150</td>' in row
    assert re.search(r"<title>\d\d:00–\d\d:00 UTC: 2 runs, 0 failed</title>", row)
    assert "http" not in table  # nothing from outside


def test_the_admin_index_shows_the_charts(runs):
    from django.contrib.auth.models import User
    from django.test import Client

    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", None))
    html = admin.get("/admin/").content.decode()
    assert 'id="agent-activity"' in html and 'data-agent="research"' in html
    assert '<td class="num median">1.5 s</td>' in html


def test_the_session_page_has_a_timeline_of_its_runs(viewer, runs):
    html = viewer.get("/sessions/agent:main:main/").content.decode()
    figure = html[html.index('id="run-timeline"') :]
    figure = figure[: figure.index("</figure>")]
    assert figure.count('<rect class="tl tl-') == 4
    assert 'class="tl tl-error"' in figure and "send error" in figure
