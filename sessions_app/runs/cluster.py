"""The worker: django-q2's cluster, kept running (`manage.py worker`, what `manage.py serve` runs).

A bare `manage.py qcluster` ends for good when its sentinel (the process that forks and guards
the workers) dies. At start that happens whenever the broker cannot be reached: the ORM broker
reads the connection's autocommit flag as it is made, so a PostgreSQL that is down (restarting,
failing over, not up yet after a reboot) ends the sentinel with an `OperationalError`, and the
cluster stops with `failed to start: sentinel exited with code 1`; the Redis broker pings Redis
and ends it the same way. Later a sentinel can be killed (the OOM killer, an operator). Either
way nothing is left to take the queued runs (a fault run lost 302 sends so, issue 28).

`Supervisor.run()`:
- before each start, waits until the database (and Redis, with the Redis broker) answers,
  trying again with backoff (`FIRST_DELAY` doubling to `MAX_DELAY`) and saying what it waits
  for once per reason;
- starts the cluster; when its sentinel exits without being asked to stop (at start or later),
  ends what the dead sentinel left running (its workers, pusher and monitor, which become this
  process's children: it is their subreaper on Linux) and starts a new cluster after the
  backoff, which starts over once a cluster has run for `STABLE_SECONDS`;
- on SIGTERM or SIGINT stops the cluster as qcluster does (running tasks finish) and returns.

Runs a dead cluster had taken are not lost: the watchdog of the new cluster's workers ends the
ones that were running (no heartbeat) and enqueues the queued ones again (runs/watchdog.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import time
from pathlib import Path

from django.db import DatabaseError, connections
from django_q.brokers import get_broker
from django_q.cluster import Cluster
from django_q.conf import Conf

log = logging.getLogger("openclaw.worker")

FIRST_DELAY = 0.5
MAX_DELAY = 10.0
# A cluster that ran this long was healthy: the next failure starts the backoff over.
STABLE_SECONDS = 60.0
POLL_SECONDS = 0.5
PR_SET_CHILD_SUBREAPER = 36


def unreachable() -> str | None:
    """What the cluster needs and cannot reach now (None: everything answers). The database
    always (a worker without it can only fail its tasks), the broker's Redis with the Redis
    broker. Closes what it opened: nothing of it may be shared with the processes forked next."""
    try:
        for alias in {"default", Conf.ORM or "default"}:
            connections[alias].ensure_connection()
    except DatabaseError as exc:
        return f"the database: {first_line(exc)}"
    finally:
        connections.close_all()
    if Conf.ORM:
        return None
    broker = get_broker()
    try:
        broker.connection.ping()
    except Exception as exc:  # noqa: BLE001 (any client error means: not reachable yet)
        return f"the broker's Redis: {first_line(exc)}"
    finally:
        with contextlib.suppress(Exception):
            broker.connection.close()
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def become_subreaper() -> bool:
    """Let the processes of a sentinel that dies become this process's children (Linux), so
    that they can be ended rather than left working beside the next cluster."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """The ids of `pid`'s child processes (from /proc; empty where there is none)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def end_leftovers() -> int:
    """Kill and reap the processes a dead sentinel left (called when no cluster runs, so every
    child of this process is one); how many there were."""
    leftovers = children(os.getpid())
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in leftovers:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return len(leftovers)


class Supervisor:
    def __init__(
        self,
        *,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
        stable_seconds: float = STABLE_SECONDS,
    ):
        self.first_delay, self.max_delay = first_delay, max_delay
        self.stable_seconds = stable_seconds
        self.stopping = False
        self.starts = 0

    def ask_to_stop(self, signum: int | None = None, _frame: object = None) -> None:
        self.stopping = True

    def take_signals(self) -> None:
        # django-q2's Cluster() installs handlers that stop it from inside the handler; here a
        # handler only says so, and the loop stops the cluster (or stops waiting).
        signal.signal(signal.SIGTERM, self.ask_to_stop)
        signal.signal(signal.SIGINT, self.ask_to_stop)

    def pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def wait_for_services(self) -> bool:
        """Until the database and the broker answer (True), or until asked to stop (False)."""
        delay, said = self.first_delay, None
        while not self.stopping:
            problem = unreachable()
            if problem is None:
                if said:
                    log.warning("worker: reachable again; starting the cluster")
                return True
            if problem != said:
                log.warning(
                    "worker: waiting for %s (trying again with backoff, up to every %.0f s)",
                    problem,
                    self.max_delay,
                )
                said = problem
            self.pause(delay)
            delay = min(delay * 2, self.max_delay)
        return False

    def run(self) -> int:
        become_subreaper()
        self.take_signals()
        delay = self.first_delay
        while not self.stopping and self.wait_for_services():
            began = time.monotonic()
            cluster = Cluster()
            self.take_signals()
            self.starts += 1
            try:
                cluster.start()
            except RuntimeError as exc:  # its sentinel exited while starting
                problem = str(exc)
            else:
                while not self.stopping and cluster.sentinel.is_alive():
                    time.sleep(POLL_SECONDS)
                if cluster.sentinel.is_alive():  # asked to stop: as qcluster's own handler does
                    cluster.stop()
                    break
                problem = f"the cluster's sentinel exited with code {cluster.sentinel.exitcode}"
            if time.monotonic() - began >= self.stable_seconds:
                delay = self.first_delay
            if not self.stopping:
                log.error("worker: %s; starting a new cluster in %.1f s", problem, delay)
            left = end_leftovers()
            if left:
                log.warning("worker: ended %s processes the dead cluster left running", left)
            self.pause(delay)
            delay = min(delay * 2, self.max_delay)
        return 0
