"""Waiting for a run in async code: one Redis subscription per event loop wakes every wait of
the process; without Redis (or with Redis down) waits poll the database."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings

from sessions_app.access.identity import requester_for
from sessions_app.models import ApiKey, Run
from sessions_app.runs import wait
from sessions_app.runs.engine import abort_run
from sessions_app.tools.sessions_send import start_send
from tests.conftest import make_agent, make_session, set_config

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
needs_redis = pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs REDIS_URL")


@pytest_asyncio.fixture(autouse=True)
async def _stop_hub():
    yield
    await wait.hint_hub().stop()


@pytest.fixture
def start(agents):
    """Starts a send (a queued run: no worker runs it) and returns its run id."""
    set_config(visibility="all", a2a_enabled=True)
    make_agent("research")
    make_session("main")
    make_session("agent:research:main")
    key, _ = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])

    def start_one() -> str:
        args = {"sessionKey": "agent:research:main", "message": "hi", "timeoutSeconds": 30}
        return start_send(requester=requester_for(key), args=args).run_id

    return sync_to_async(start_one)


@sync_to_async
def abort(run_id: str) -> None:
    assert abort_run(Run.objects.get(pk=run_id))


async def test_a_wait_returns_the_run_once_it_finishes(start):
    run_id = await start()
    waiting = asyncio.create_task(wait.wait_for_run(run_id, 30))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await abort(run_id)
    run = await asyncio.wait_for(waiting, 10)
    assert run.status == Run.ABORTED and run.session.key == "agent:research:main"


async def test_a_wait_that_runs_out_returns_the_run_as_it_stands(start):
    run = await wait.wait_for_run(await start(), 0.2)
    assert run.status == Run.QUEUED


@needs_redis
async def test_one_subscription_wakes_every_wait_of_the_loop(start, monkeypatch):
    # Reads without a hint only every 60 s: the waits below can only end through their hints.
    monkeypatch.setattr(wait, "HINTED_POLL_SECONDS", 60)
    runs = [await start() for _ in range(3)]
    waits = [asyncio.create_task(wait.wait_for_run(r, 30)) for r in runs]
    await asyncio.sleep(0.3)
    hub = wait.hint_hub()
    assert hub.alive and set(hub.waiters) == set(runs)
    task = hub.task
    for run_id in runs:
        await abort(run_id)
    done = await asyncio.wait_for(asyncio.gather(*waits), 10)
    assert [r.status for r in done] == [Run.ABORTED] * 3
    assert hub.waiters == {} and hub.task is task  # the same connection throughout


async def test_with_redis_unreachable_waits_poll(start, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    run_id = await start()
    waiting = asyncio.create_task(wait.wait_for_run(run_id, 30))
    # The hub gives up once redis-py's connect retries have failed (longer on a loaded machine).
    for _ in range(100):
        await asyncio.sleep(0.05)
        if not wait.hint_hub().alive:
            break
    assert not wait.hint_hub().alive
    await abort(run_id)
    assert (await asyncio.wait_for(waiting, 10)).status == Run.ABORTED


on_sqlite_without_redis = pytest.mark.skipif(
    bool(django_settings.REDIS_URL)
    or not django_settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"),
    reason="the version-file hint is SQLite's without Redis",
)


@on_sqlite_without_redis
async def test_without_redis_a_version_file_wakes_the_waits_at_once(start, monkeypatch):
    """Issue 26: no polling interval between a stored reply and its report: a finished run
    rewrites the version file beside the database, which the loop's TokenHub reads every 5 ms
    (the database is read only when it moved)."""
    monkeypatch.setattr(wait, "HINTED_POLL_SECONDS", 60)  # only the hint can end these waits
    monkeypatch.setattr(wait, "POLL_SECONDS", 60)
    runs = [await start() for _ in range(2)]
    waits = [asyncio.create_task(wait.wait_for_run(r, 30, just_started=True)) for r in runs]
    await asyncio.sleep(0.2)
    hub = wait.token_hub()
    assert hub.alive and len(hub.waiters) == 2
    for run_id in runs:
        await abort(run_id)  # in another thread, as a worker's finish would be
    done = await asyncio.wait_for(asyncio.gather(*waits), 10)
    assert [r.status for r in done] == [Run.ABORTED] * 2
    await asyncio.sleep(0.05)
    assert not hub.waiters and not hub.alive  # it stops when no wait is left
