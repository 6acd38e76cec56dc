"""The worker keeps a cluster running (issue 28): `manage.py worker` (what `serve` runs) waits for
a database that is away when it starts instead of exiting, and starts a new cluster when its
sentinel dies, on both brokers; `serve` starts a worker that died again. Real processes on the
test database. Before, `qcluster` with the ORM broker exited at once with the database away
(`failed to start: sentinel exited with code 1`), and a cluster whose sentinel was killed was
gone, with every queued run left queued (a fault run lost 302 sends so)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from sessions_app.management.commands.serve import accepts
from sessions_app.models import Run
from sessions_app.runs.cluster import children
from tests.servers import (
    ROOT,
    LiveServer,
    child_env,
    database_refuses_connections,
    free_port,
    start_worker,
    wait_until,
)
from tests.worlds import ANNOUNCE_SKIP, send_to_research

pytestmark = pytest.mark.django_db(transaction=True)

BROKERS = ["orm", *(["redis"] if settings.REDIS_URL else [])]


@pytest.fixture(params=BROKERS)
def broker(request) -> str:
    return request.param


@pytest.fixture
def server_env(broker) -> dict[str, str]:
    # The server enqueues on the broker the worker reads.
    return {"Q_BROKER": broker}


@pytest.fixture
def research_rules() -> list[dict]:
    return [ANNOUNCE_SKIP, {"match": ".*", "reply": "here"}]


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def sentinel_with_processes(supervisor: int, at_least: int) -> tuple[int, list[int]] | None:
    """The supervisor's running cluster: (the sentinel, its processes) once it has `at_least`."""
    for pid in children(supervisor):
        processes = [p for p in children(pid) if alive(p)]
        if alive(pid) and len(processes) >= at_least:
            return pid, processes
    return None


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="an outage of a database server (SQLite has none)"
)
def test_a_worker_started_while_the_database_is_away_waits_and_then_runs_the_queued_run(
    two_agents, running_server, main_token, broker, tmp_path
):
    run_id = send_to_research(running_server, main_token, "hello")["runId"]  # queued: no worker
    log = tmp_path / "worker.log"
    with database_refuses_connections():
        worker = start_worker(workers=1, env={"Q_BROKER": broker}, log=log)
        try:
            wait_until(lambda: "waiting for the database" in log.read_text(), timeout=90)
        except AssertionError:
            worker.stop()
            raise
        assert worker.process.poll() is None, log.read_text()  # (qcluster had exited)
        assert Run.objects.get(pk=run_id).status == Run.QUEUED
    try:
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.OK).exists(), timeout=90)
        assert Run.objects.get(pk=run_id).attempts == 1
        assert "reachable again; starting the cluster" in log.read_text()
    finally:
        worker.stop()


def test_a_cluster_whose_sentinel_dies_is_started_again(
    two_agents, running_server, main_token, broker, tmp_path
):
    log = tmp_path / "worker.log"
    worker = start_worker(workers=1, env={"Q_BROKER": broker}, log=log)
    try:
        # One worker, the monitor and the pusher.
        sentinel, processes = wait_until(
            lambda: sentinel_with_processes(worker.process.pid, 3), timeout=90
        )
        os.kill(sentinel, signal.SIGKILL)
        replacement, _ = wait_until(
            lambda: sentinel_with_processes(worker.process.pid, 3), timeout=90
        )
        assert replacement != sentinel
        assert worker.process.poll() is None
        # What the dead sentinel left working was ended, not left beside the new cluster.
        assert not [p for p in processes if alive(p)]
        assert "processes the dead cluster left running" in log.read_text()
        run_id = send_to_research(running_server, main_token, "after the restart")["runId"]
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.OK).exists(), timeout=60)
        # SIGTERM stops it as qcluster stops: the cluster first, then the command, with 0.
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(timeout=60) == 0
        assert not alive(replacement)
    finally:
        worker.stop()


@pytest.mark.parametrize("broker", ["orm"])
def test_serve_starts_a_worker_that_died_again(two_agents, main_token, broker, tmp_path):
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=child_env(Q_BROKER=broker),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()

    def worker_process() -> int | None:
        for pid in children(serve.pid):
            if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return pid if alive(pid) else None
        return None

    try:
        first = wait_until(worker_process, timeout=90)
        _, cluster = wait_until(lambda: sentinel_with_processes(first, 3), timeout=90)
        os.kill(first, signal.SIGKILL)  # the worker command itself, not its cluster
        second = wait_until(
            lambda: (pid := worker_process()) not in (None, first) and pid, timeout=90
        )
        assert serve.poll() is None
        assert (
            "The worker exited (code -9); starting it again in 1 s"
            in (tmp_path / "serve.log").read_text()
        )
        # The dead worker's cluster was ended, not left working beside the new one (a SIGKILL
        # lands at once, but a loaded machine may take a moment to reap).
        wait_until(lambda: not [p for p in cluster if alive(p)], timeout=30)
        wait_until(lambda: sentinel_with_processes(second, 3), timeout=90)
        server = LiveServer(f"http://127.0.0.1:{port}", serve)
        wait_until(lambda: accepts("127.0.0.1", port), timeout=60)
        run_id = send_to_research(server, main_token, "to the new worker")["runId"]
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.OK).exists(), timeout=60)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        assert not alive(second)
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(serve.pid, signal.SIGKILL)
