#!/usr/bin/env python
"""The fault run (issue 28 item 4): sends with idempotency keys and completion webhooks while a
worker cluster is killed with SIGKILL, PostgreSQL restarts, a worker starts while PostgreSQL is
down, and Redis restarts; then everything
is counted: lost and duplicated runs, replies and webhooks.

    .venv/bin/python bench/fault_run.py --broker orm|redis [--sends 330] [--rate 8]
        [--pg-port 9170] [--redis-port 9171] [--database-url URL --pg-data DIR]
        [--redis-url URL]

PostgreSQL and Redis are restarted, so they must be the run's own: by default the script starts
a private PostgreSQL cluster (`initdb` into a temporary directory, as the `postgres` user when
run as root, on `--pg-port`) and a private `redis-server` (`--redis-port`, no persistence) and
removes them at the end. `--database-url` with `--pg-data` (the data directory `pg_ctl` restarts)
and `--redis-url` (its port is restarted with `redis-cli shutdown` and `redis-server`) use
running ones instead: never the machine's shared services.

What runs: `manage.py serve --no-worker`'s uvicorn (one process) and `manage.py worker` (what
`serve` runs: a supervised django-q2 cluster) of 2 worker processes with `Q_BROKER`; a scripted agent `echo` (a 300 ms turn); an agent `main` whose key
sends `sessions_send` to `agent:echo:main` (`timeoutSeconds: 0`) with an `idempotencyKey` each,
`--rate` a second, and whose completion webhook points at a receiver in this script. A send that
fails (connection refused, 5xx) is sent again with the same key until it is accepted. During the
sends, at fixed points: the worker's process group (the worker and its cluster) is killed
with SIGKILL (and started again 3 s later); PostgreSQL is restarted (`pg_ctl restart -m
fast`); PostgreSQL is stopped, the worker killed and started again while it is down, and
PostgreSQL started `--outage` (8) seconds later (what lost 302 sends once: a cluster that
could not reach the database at its start exited); then Redis restarts (shutdown nosave,
start). Then it waits for every run and delivery to settle and counts:

- accepted: idempotency keys answered with a runId; **lost** = keys whose run is not in the
  database, or a run that never finished; **duplicated** = keys answered with two runIds, runs
  with the same idempotency key, a reply stored twice, or an ok run that ran twice (attempts);
- webhooks: runs that finished whose event never arrived (**lost**), runs whose event arrived
  under two delivery ids (**duplicated**); the same delivery id arriving twice is an
  at-least-once redelivery (receivers drop it by `deliveryId`) and is counted apart;
- HTTP statuses of every send attempt (no 500 allowed; 503 with Retry-After is the outage's).

Prints one Markdown row and writes bench/results/fault-<broker>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
import django  # noqa: E402

django.setup()

from bench.send_bench import (  # noqa: E402
    RESULTS,
    Processes,
    django_snippet,
    manage,
    uptime,
)
from bench.services import Postgres, Redis  # noqa: E402

ECHO = {
    "type": "scripted",
    "rules": [
        {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
        {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
        {"match": ".*", "delayMs": 300, "reply": "pong"},
    ],
}
SETUP = """
import json
from sessions_app.manage.agents import upsert_agent
from sessions_app.manage.config import update_config
from sessions_app.models import ApiKey
from sessions_app.store import upsert_session
upsert_agent(api_key=None, agent_id="main", data={"name": "main", "webhook": {"url": %(hook)s}})
upsert_agent(api_key=None, agent_id="echo", data={"name": "echo", "backend": %(echo)s})
upsert_session(api_key=None, key="agent:main:main", entry={})
upsert_session(api_key=None, key="agent:echo:main", entry={})
update_config(api_key=None, changes={
    "tools.sessions.visibility": "all", "tools.agentToAgent.enabled": True,
    "session.agentToAgent.maxPingPongTurns": 0})
from sessions_app.runs.sweeper import ensure_schedule
ensure_schedule()
_, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
print(json.dumps({"token": token}))
"""
COUNT = """
import json
from django.db.models import Count
from sessions_app.models import Delivery, Message, Run
runs = Run.objects.filter(kind="send", session__key="agent:echo:main")
rows = [{"id": str(r.pk), "status": r.status, "error": r.error[:200], "attempts": r.attempts,
         "idem": r.idempotency_key} for r in runs]
same_key = runs.exclude(idempotency_key="").values("idempotency_key").annotate(
    n=Count("id")).filter(n__gt=1).count()
# The turn's reply ("pong"); the announce step stores its ANNOUNCE_SKIP beside it.
replies = sum(1 for c in Message.objects.filter(
    session__key="agent:echo:main", role="assistant").values_list("content", flat=True)
    if "pong" in json.dumps(c))
deliveries = {}
for status in Delivery.objects.values_list("status", flat=True):
    deliveries[status] = deliveries.get(status, 0) + 1
# Why a delivery is still pending: its attempts, its last error, when it is due (seconds from
# now), and the tasks still in the ORM broker's queue (leased ones: taken by a cluster).
from django.utils import timezone
from django_q.models import OrmQ
now = timezone.now()
pending = [{"attempts": d.attempts, "error": d.last_error[:120],
            "due_in_s": round((d.next_attempt_at - now).total_seconds()) if d.next_attempt_at else None,
            "age_s": round((now - d.created_at).total_seconds())}
           for d in Delivery.objects.filter(status="pending")]
queue = {"tasks": OrmQ.objects.count(), "leased": OrmQ.objects.filter(lock__gt=now).count()}
print(json.dumps({"runs": rows, "same_key": same_key, "replies": replies,
                  "deliveries": deliveries, "pending_deliveries": pending, "orm_queue": queue}))
"""


# --- the webhook receiver -------------------------------------------------------------------


class Receiver:
    """Records every completion webhook: runId → the delivery ids it came under, and how often
    each came."""

    def __init__(self):
        self.by_run: dict[str, Counter] = defaultdict(Counter)
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with contextlib.suppress(ValueError, KeyError):
                    event = json.loads(body)
                    with receiver.lock:
                        receiver.by_run[event["runId"]][event["deliveryId"]] += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# --- the sends ------------------------------------------------------------------------------


class Sender:
    """Sends `count` sends at `rate` a second, each retried with its idempotency key until it is
    accepted (a runId); records every attempt's status."""

    def __init__(self, port: int, token: str, count: int, rate: float, prefix: str):
        self.port, self.token, self.count, self.rate = port, token, count, rate
        self.prefix = prefix
        self.statuses: Counter = Counter()
        self.run_ids: dict[str, set[str]] = defaultdict(set)
        self.errors: Counter = Counter()
        self.done = threading.Event()
        self.sent = 0

    def attempt(self, key: str) -> str | None:
        body = json.dumps(
            {
                "tool": "sessions_send",
                "args": {"sessionKey": "agent:echo:main", "message": key, "timeoutSeconds": 0},
                "idempotencyKey": key,
            }
        )
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            connection.request(
                "POST",
                "/tools/invoke",
                body,
                {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            )
            response = connection.getresponse()
            payload = response.read()
            connection.close()
        except OSError as exc:
            self.statuses["connection error"] += 1
            self.errors[type(exc).__name__] += 1
            return None
        self.statuses[response.status] += 1
        if response.status != 200:
            self.errors[f"HTTP {response.status}: {payload[:120]!r}"] += 1
            return None
        details = json.loads(payload)["result"]["details"]
        run_id = details.get("runId")
        if not run_id:
            self.errors[f"no runId: {str(details)[:120]}"] += 1
        return run_id

    def one(self, i: int) -> None:
        key = f"{self.prefix}-{i}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            run_id = self.attempt(key)
            if run_id:
                self.run_ids[key].add(run_id)
                # Once more with the same key, as a client that lost the answer would.
                if i % 10 == 0:
                    again = self.attempt(key)
                    if again:
                        self.run_ids[key].add(again)
                return
            time.sleep(0.5)

    def run(self) -> None:
        threads = []
        for i in range(self.count):
            thread = threading.Thread(target=self.one, args=(i,))
            thread.start()
            threads.append(thread)
            self.sent = i + 1
            time.sleep(1 / self.rate)
        for thread in threads:
            thread.join()
        self.done.set()


# --- the run --------------------------------------------------------------------------------


def fault_run(args) -> dict:
    private = args.database_url is None
    base = Path(tempfile.mkdtemp(prefix="fault-run-"))
    base.chmod(0o755)  # (the postgres user's cluster lives under it)
    pg = Postgres(Path(args.pg_data) if args.pg_data else base / "pg" / "data", args.pg_port)
    redis = Redis(urlsplit(args.redis_url).port if args.redis_url else args.redis_port)
    database_url = args.database_url or f"postgres://postgres@127.0.0.1:{args.pg_port}/faultrun"
    redis_url = args.redis_url or f"redis://127.0.0.1:{args.redis_port}/0"
    receiver = Receiver()
    procs = None
    try:
        if private:
            pg.init()
            pg.start()
            pg.createdb("faultrun")
        if not args.redis_url:
            redis.start()
        env = os.environ.copy()
        env.update(
            {
                "DATABASE_URL": database_url,
                "REDIS_URL": redis_url,
                "Q_BROKER": args.broker,
                "Q_WORKERS": "2",
                "OPENCLAW_VAR_DIR": str(base / "var"),
                "OPENCLAW_OUTBOUND_ALLOW": "127.0.0.1",
                "SECRET_KEY": "fault-run-" + os.urandom(16).hex(),
            }
        )
        manage(env, "migrate", "--noinput")
        hook = f"http://127.0.0.1:{receiver.port}/hook"
        token = django_snippet(env, SETUP % {"hook": json.dumps(hook), "echo": json.dumps(ECHO)})[
            "token"
        ]
        RESULTS.mkdir(parents=True, exist_ok=True)
        procs = Processes(env, f"fault-{args.broker}", "openclaw_site.asgi:application", "uvicorn")
        procs.start(worker=True)
        sender = Sender(procs.port, token, args.sends, args.rate, f"fault-{args.broker}")
        thread = threading.Thread(target=sender.run)
        started = time.monotonic()
        thread.start()
        faults: dict[str, float] = {}

        def at(fraction: float) -> None:
            while sender.sent < args.sends * fraction and thread.is_alive():
                time.sleep(0.1)

        at(0.2)
        procs.kill_worker()  # the worker and its cluster, every process at once
        faults["worker cluster killed at s"] = round(time.monotonic() - started, 1)
        time.sleep(3)
        procs.start_worker()
        at(0.4)
        t0 = time.monotonic()
        pg.restart()
        faults["postgres restart s"] = round(time.monotonic() - t0, 1)
        at(0.55)
        # What lost 302 sends once: a worker starting while PostgreSQL is down.
        t0 = time.monotonic()
        pg.stop(mode="fast")
        procs.kill_worker()
        procs.start_worker()
        # PostgreSQL stays down until the new worker has found it down (a loaded machine takes
        # seconds to start a Python with Django), and `--outage` seconds at least.
        log = RESULTS / f"send-{procs.label}-worker.log"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "waiting for the database" not in log.read_text():
            time.sleep(0.2)
        faults["worker waited for the database"] = "waiting for the database" in log.read_text()
        time.sleep(max(0.0, args.outage - (time.monotonic() - t0)))
        pg.start()
        faults["worker started during a postgres outage of s"] = round(time.monotonic() - t0, 1)
        at(0.7)
        t0 = time.monotonic()
        redis.restart()
        faults["redis restart s"] = round(time.monotonic() - t0, 1)
        thread.join()
        sends_s = round(time.monotonic() - started, 1)
        # Settle: every run finished, every delivery sent (or failed for good).
        deadline = time.monotonic() + args.settle
        while True:
            report = django_snippet(env, COUNT)
            open_runs = [r for r in report["runs"] if r["status"] in ("queued", "running")]
            pending = report["deliveries"].get("pending", 0)
            if (not open_runs and not pending) or time.monotonic() > deadline:
                break
            time.sleep(2)
        return count(args, sender, receiver, report, faults, sends_s)
    finally:
        if procs is not None:
            procs.stop()
        receiver.server.shutdown()
        if not args.redis_url:
            redis.stop()
        if private:
            pg.stop()
            shutil.rmtree(base, ignore_errors=True)


def count(args, sender: Sender, receiver: Receiver, report: dict, faults: dict, sends_s) -> dict:
    runs = {r["id"]: r for r in report["runs"]}
    accepted = {k: ids for k, ids in sender.run_ids.items() if ids}
    never_accepted = args.sends - len(accepted)
    missing = [k for k, ids in accepted.items() if not any(i in runs for i in ids)]
    unfinished = [r for r in runs.values() if r["status"] in ("queued", "running")]
    two_ids = [k for k, ids in accepted.items() if len(ids) > 1]
    ok = [r for r in runs.values() if r["status"] == "ok"]
    ran_twice = [r for r in ok if r["attempts"] > 1]
    finished = [r for r in runs.values() if r["status"] not in ("queued", "running")]
    hooks_missing = [r["id"] for r in finished if r["id"] not in receiver.by_run]
    hooks_duplicated = [i for i, ids in receiver.by_run.items() if len(ids) > 1]
    redelivered = sum(n - 1 for ids in receiver.by_run.values() for n in ids.values() if n > 1)
    server_errors = sum(
        v for k, v in sender.statuses.items() if isinstance(k, int) and k >= 500 and k != 503
    )
    return {
        "broker": args.broker,
        "sends": args.sends,
        "sends_s": sends_s,
        "faults": faults,
        "http": {str(k): v for k, v in sender.statuses.items()},
        "send_errors": dict(sender.errors.most_common(5)),
        "accepted": len(accepted),
        "never_accepted": never_accepted,
        "runs": dict(Counter(r["status"] for r in runs.values())),
        "run_errors": sorted({r["error"] for r in runs.values() if r["error"]})[:5],
        "runs_lost": len(missing) + len(unfinished),
        "runs_duplicated": len(two_ids)
        + report["same_key"]
        + len(ran_twice)
        + max(0, report["replies"] - len(ok)),
        "replies": report["replies"],
        "ok_runs": len(ok),
        "deliveries": report["deliveries"],
        "pending_deliveries": Counter(
            (d["attempts"], d["error"][:60], d["due_in_s"] is not None and d["due_in_s"] > 0)
            for d in report["pending_deliveries"]
        ).most_common(5),
        "orm_queue": report["orm_queue"],
        "webhooks_received": len(receiver.by_run),
        "webhooks_lost": len(hooks_missing),
        "webhooks_duplicated": len(hooks_duplicated),
        "webhooks_redelivered": redelivered,
        "server_errors": server_errors,
        "load": uptime(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", choices=["orm", "redis"], required=True)
    parser.add_argument("--sends", type=int, default=330)
    parser.add_argument("--rate", type=float, default=8.0)
    parser.add_argument("--pg-port", type=int, default=9170)
    parser.add_argument("--redis-port", type=int, default=9171)
    parser.add_argument("--database-url")
    parser.add_argument("--pg-data", help="the data directory of --database-url's cluster")
    parser.add_argument("--redis-url")
    parser.add_argument("--settle", type=float, default=180)
    parser.add_argument(
        "--outage", type=float, default=8, help="seconds PostgreSQL stays down as a worker starts"
    )
    args = parser.parse_args(argv)
    if args.database_url and not args.pg_data:
        parser.error("--database-url needs --pg-data (the cluster the run restarts)")
    result = fault_run(args)
    (RESULTS / f"fault-{args.broker}.json").write_text(json.dumps(result, indent=2))
    print(
        "| broker | sends (s) | faults | HTTP | runs | runs lost / duplicated | webhooks "
        "received | lost / duplicated (redelivered) | 500s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    r = result
    print(
        f"| {r['broker']} | {r['accepted']}/{r['sends']} ({r['sends_s']} s) | {r['faults']} | "
        f"{r['http']} | {r['runs']} | **{r['runs_lost']} / {r['runs_duplicated']}** | "
        f"{r['webhooks_received']} | **{r['webhooks_lost']} / {r['webhooks_duplicated']}** "
        f"({r['webhooks_redelivered']}) | {r['server_errors']} |"
    )
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
