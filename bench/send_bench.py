#!/usr/bin/env python
"""Round trip of sessions_send to an agent that answers instantly, over HTTP, under concurrency.

    .venv/bin/python bench/send_bench.py [--sends 200] [--clients 4] [--only pg-redis]

For each configuration (embedded SQLite + ORM broker; PostgreSQL + Redis with the Redis broker;
PostgreSQL + Redis with the ORM broker) it builds a fresh database of its own (SQLite under
var/sendbench, PostgreSQL database `sendbench`, Redis database 7: never the dev or the `bench`
database), creates a requester agent `main` and a scripted target `echo` that replies "pong" at
once, and starts the server (uvicorn, as `manage.py serve --no-worker` does) and one worker cluster
(`manage.py qcluster`, Q_WORKERS=2), each in its own process group. Then, for each ping-pong
setting (the default 5, which ends at turn 1 because `main` answers REPLY_SKIP: 3 runs per send;
and 0: 2 runs per send), `--clients` threads with a keep-alive connection each share `--sends`
`sessions_send` calls with timeoutSeconds=30 through POST /tools/invoke, after `--warmup` untimed
ones. Every response is checked (HTTP 200, details.status "ok", reply "pong"); failures are
counted, not fatal.

Besides the round trip it reports, per send: where the time went (the client's clock against the
send run's created/started/finished stamps, by runId), the CPU each component used (from /proc),
and the runs in the database by kind and status once the follow-up runs have drained.

Prints Markdown tables; writes bench/results/send-<label>.json, and the server's and worker's
output to send-<label>-server.log and send-<label>-worker.log.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
import django  # noqa: E402

django.setup()  # (the serve command's module imports the app's modules at its top)

from bench.http_bench import Client, free_port  # noqa: E402
from sessions_app.management.commands.serve import server_command  # noqa: E402

RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
SQLITE_DIR = ROOT / "var" / "sendbench"
# SEND_BENCH_DB / SEND_BENCH_REDIS_DB name others (several people on one machine).
PG_DB = os.environ.get("SEND_BENCH_DB", "sendbench")
PG_URL = f"postgres://postgres@127.0.0.1:5432/{PG_DB}"
# A Redis database number of its own, so emptying the task queue touches nobody else's keys.
REDIS_URL = f"redis://127.0.0.1:6379/{int(os.environ.get('SEND_BENCH_REDIS_DB', '7'))}"
TARGET = "agent:echo:main"

SKIP_RULES = [
    {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
]
ECHO_BACKEND = {"type": "scripted", "rules": [*SKIP_RULES, {"match": ".*", "reply": "pong"}]}
MAIN_BACKEND = {"type": "scripted", "rules": SKIP_RULES}

CONFIGS = {
    "sqlite": {
        "title": "embedded default (SQLite, ORM broker, no Redis)",
        "env": {"OPENCLAW_VAR_DIR": str(SQLITE_DIR), "Q_BROKER": "orm"},
        "unset": ("DATABASE_URL", "REDIS_URL"),
    },
    "pg-redis": {
        "title": "PostgreSQL + Redis, Redis broker",
        "env": {"DATABASE_URL": PG_URL, "REDIS_URL": REDIS_URL, "Q_BROKER": "redis"},
        "unset": (),
    },
    "pg-orm": {
        "title": "PostgreSQL + Redis, ORM broker",
        "env": {"DATABASE_URL": PG_URL, "REDIS_URL": REDIS_URL, "Q_BROKER": "orm"},
        "unset": (),
    },
}
VARIANTS = {"pingpong5": 5, "pingpong0": 0}


class BenchError(RuntimeError):
    pass


# --- processes and databases ----------------------------------------------------------------


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def config_env(name: str, workers: int, settings: str | None) -> dict:
    env = os.environ.copy()
    for key in CONFIGS[name]["unset"]:
        env.pop(key, None)
    env.update(CONFIGS[name]["env"])
    env["Q_WORKERS"] = str(workers)
    # Production mode needs one; a throwaway one does for a benchmark's own databases.
    env.setdefault("SECRET_KEY", "bench-only-" + os.urandom(16).hex())
    if settings:
        env["DJANGO_SETTINGS_MODULE"] = settings
    return env


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise BenchError(f"manage.py {' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def django_snippet(env: dict, code: str) -> dict:
    """Run `code` in `manage.py shell -c`; it must print one JSON object on its last line."""
    out = manage(env, "shell", "-c", code)
    return json.loads(out.strip().splitlines()[-1])


def fresh_database(name: str, env: dict) -> None:
    if name == "sqlite":
        shutil.rmtree(SQLITE_DIR, ignore_errors=True)
        SQLITE_DIR.mkdir(parents=True)
    else:
        pg = ["-h", "127.0.0.1", "-U", "postgres"]
        subprocess.run(
            ["psql", *pg, "-q", "-c", f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)"],
            check=True,
            capture_output=True,
        )
        subprocess.run(["createdb", *pg, PG_DB], check=True, capture_output=True)
        import redis

        # Tasks left by an interrupted earlier run would name runs this database never had.
        redis.Redis.from_url(REDIS_URL).delete("django_q:openclaw:q")
    manage(env, "migrate", "--noinput")


SETUP = """
import json
from sessions_app.manage.agents import upsert_agent
from sessions_app.manage.config import update_config
from sessions_app.store import upsert_session
upsert_agent(api_key=None, agent_id="main", data={"name": "main", "backend": %(main)s})
upsert_agent(api_key=None, agent_id="echo", data={"name": "echo", "backend": %(echo)s})
upsert_session(api_key=None, key="agent:main:main", entry={})
upsert_session(api_key=None, key="agent:echo:main", entry={})
update_config(api_key=None, changes={
    "tools.sessions.visibility": "all", "tools.agentToAgent.enabled": True})
from sessions_app.runs.sweeper import ensure_schedule
ensure_schedule()  # what `manage.py serve` does before starting the server
# A server that has been up a while: the task history is as full as Q_CLUSTER["save_limit"]
# lets it get, so every task pays the pruning that django-q does from then on.
import uuid
from django.conf import settings
from django.utils import timezone
from django_q.models import Task
n = min(%(task_history)d, max(settings.Q_CLUSTER.get("save_limit", 0), 0))
now = timezone.now()
Task.objects.bulk_create(
    Task(id=uuid.uuid4().hex, name=f"run-history-{i}", func="sessions_app.runs.tasks.execute_run",
         args=(str(uuid.uuid4()),), kwargs={}, result="ok", started=now, stopped=now,
         success=True, attempt_count=1, cluster="openclaw")
    for i in range(n)
)
print(json.dumps({"ok": True, "task_history": n}))
"""

SET_TURNS = """
import json
from sessions_app.manage.config import update_config
c = update_config(api_key=None, changes={"session.agentToAgent.maxPingPongTurns": %d})
print(json.dumps({"maxPingPongTurns": c.max_ping_pong_turns}))
"""

# Runs created since `since`: counts by kind and status, and each send run's timeline (epoch
# seconds), which the client joins with its own request times by runId.
RUN_REPORT = """
import json
from datetime import datetime
from django.db.models import Count
from sessions_app.models import Run
since = datetime.fromisoformat(%(since)r)
runs = Run.objects.filter(created_at__gte=since)
counts = {f"{r['kind']}/{r['status']}": r["n"]
          for r in runs.values("kind", "status").annotate(n=Count("id")).order_by("kind", "status")}
pending = Run.objects.filter(status__in=[Run.QUEUED, Run.RUNNING]).count()
stamp = lambda t: t.timestamp() if t else None
timeline = {str(i): [stamp(c), stamp(s), stamp(f)] for i, c, s, f in
            runs.filter(kind="send").values_list("id", "created_at", "started_at", "finished_at")}
print(json.dumps({"counts": counts, "pending": pending, "timeline": timeline}))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(q * len(ordered)) - 1)]


def summary(values: list[float]) -> dict | None:
    if not values:
        return None
    return {
        "p50": round(statistics.median(values), 1),
        "p95": round(percentile(values, 0.95), 1),
        "max": round(max(values), 1),
    }


def phases(requests: list[dict], timeline: dict) -> dict:
    """Where each round trip went, from the client's clock and the send run's row (same host):
    web = request sent → run row created (auth, checks, the start transaction);
    queue = created → claimed by a worker (commit, enqueue, broker, pickup);
    exec = claimed → finished (the turn and the finishing transaction, follow-ups included);
    back = finished → response read (commit, finish hint, the waiter's reload, the response)."""
    out: dict[str, list[float]] = {"web": [], "queue": [], "exec": [], "back": []}
    for r in requests:
        row = timeline.get(r.get("run_id") or "")
        if not row or None in row:
            continue
        created, started, finished = row
        out["web"].append((created - r["t0"]) * 1000)
        out["queue"].append((started - created) * 1000)
        out["exec"].append((finished - started) * 1000)
        out["back"].append((r["t1"] - finished) * 1000)
    return {name: summary(values) for name, values in out.items()}


# --- CPU by component -------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(server_group: int, worker_group: int) -> dict:
    """CPU time (user + system, ticks) of the server's and the worker's process groups, of the
    PostgreSQL backends connected to the benchmark's database, of PostgreSQL's shared processes
    (postmaster, WAL writer, checkpointer, …; the postmaster's reaped children count into it as
    cutime, so a backend that exited during the measurement shows up there), of Redis, and of
    this client. Backends of other databases (other people's tests on a shared machine) are not
    ours: they end up in "other"."""
    totals = {"server": 0, "worker": 0, "postgres": 0, "pg_shared": 0, "redis": 0}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        group = int(fields[2])
        ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        if group == server_group:
            totals["server"] += ticks
        elif group == worker_group:
            totals["worker"] += ticks
        elif comm.startswith("postgres"):
            bucket = postgres_bucket(entry)
            if bucket:
                totals[bucket] += ticks
        elif comm.startswith("redis-server"):
            totals["redis"] += ticks
    mine = os.times()
    totals["client"] = round((mine.user + mine.system) * TICK)
    totals["machine"] = machine_ticks()
    return totals


def postgres_bucket(pid: str) -> str | None:
    """The bucket of a PostgreSQL process: "postgres" for a backend of the benchmark's database,
    None for a backend of another database, "pg_shared" for the postmaster and the background
    processes. A backend's title is `postgres: <cluster>: <user> <database> <host(port)> …`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            title = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if not title.startswith("postgres: "):
        return "pg_shared"  # the postmaster: its command line is the binary's path
    words = title.split()
    if len(words) >= 5 and "(" in words[4]:
        return "postgres" if words[3] == PG_DB else None
    return "pg_shared"


def machine_ticks() -> int:
    """Busy CPU time of the whole machine (every core), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal


def cpu_per_send(before: dict, after: dict, sends: int) -> dict:
    """ms of CPU per send by component; `other` is the rest of the machine (anything else
    running during the measurement, which should be close to 0)."""
    out = {k: round((after[k] - before[k]) / TICK * 1000 / sends, 1) for k in before}
    ours = sum(v for k, v in out.items() if k != "machine")
    out["other"] = round(max(0.0, out.pop("machine") - ours), 1)
    return out


class Processes:
    """The server and the worker cluster, each in its own process group; stop() kills both."""

    def __init__(self, env: dict, label: str, app: str, server: str):
        self.env = env
        self.label = label
        self.app = app
        self.server = server
        self.port = free_port()
        self.groups: list[subprocess.Popen] = []
        self.worker: subprocess.Popen  # (start_worker's)

    def _spawn(self, args: list[str], log_name: str) -> subprocess.Popen:
        log = (RESULTS / log_name).open("w")
        process = subprocess.Popen(
            [PYTHON, *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.groups.append(process)
        return process

    def start(self, *, worker: bool = True) -> None:
        # The server command line of `manage.py serve` (its ensure_schedule() is in SETUP),
        # with --app swapped in, so that a patched application can be tried without editing.
        command = server_command(self.server, "127.0.0.1", self.port)
        command[command.index("openclaw_site.asgi:application")] = self.app
        server = self._spawn(command[1:], f"send-{self.label}-server.log")
        if worker:
            self.start_worker()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise BenchError(f"server exited with {server.returncode}")
            try:
                status, _ = Client(self.port).request("GET", "/tools/invoke")
                if status:
                    return
            except OSError:
                time.sleep(0.3)
        raise BenchError("server did not answer within 60 s")

    def start_worker(self) -> None:
        self.worker = self._spawn(["manage.py", "worker"], f"send-{self.label}-worker.log")

    def kill_worker(self) -> None:
        """SIGKILL the worker's process group: the worker and its whole cluster at once, as a
        machine losing it would (start_worker starts another)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait()
        self.groups.remove(self.worker)

    def stop(self) -> None:
        for process in self.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.groups:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            # The group, not just the leader: the server and the qcluster workers are children.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.groups = []


# --- the client -----------------------------------------------------------------------------


def send_body(i: int, timeout_seconds: int) -> dict:
    return {
        "tool": "sessions_send",
        "args": {"sessionKey": TARGET, "message": f"ping {i}", "timeoutSeconds": timeout_seconds},
    }


def check(status: int, payload: bytes) -> tuple[str | None, str | None]:
    """(None when the send came back ok with "pong", else what was wrong; the runId)."""
    if status != 200:
        return f"HTTP {status}: {payload[:200]!r}", None
    try:
        details = json.loads(payload)["result"]["details"]
    except (ValueError, KeyError, TypeError):
        return f"unreadable body: {payload[:200]!r}", None
    run_id = details.get("runId")
    if details.get("status") != "ok":
        return f"status {details.get('status')}: {str(details.get('error'))[:200]}", run_id
    if details.get("reply") != "pong":
        return f"reply {details.get('reply')!r}", run_id
    return None, run_id


def run_sends(port: int, token: str, *, sends: int, clients: int, timeout_seconds: int) -> dict:
    """`sends` sends shared out among `clients` threads, one keep-alive connection each."""
    numbers = itertools.count()
    lock = threading.Lock()
    timings: list[float] = []
    requests: list[dict] = []
    failures: list[str] = []
    reconnects = [0]

    def worker():
        client = Client(port, token)
        while True:
            with lock:
                i = next(numbers)
            if i >= sends:
                break
            t0 = time.time()
            t = time.perf_counter()
            try:
                status, payload = client.request(
                    "POST", "/tools/invoke", send_body(i, timeout_seconds)
                )
            except OSError as exc:
                status, payload = 0, repr(exc).encode()
            elapsed = (time.perf_counter() - t) * 1000
            t1 = time.time()
            problem, run_id = check(status, payload)
            with lock:
                timings.append(elapsed)
                requests.append({"t0": t0, "t1": t1, "run_id": run_id})
                if problem:
                    failures.append(problem)
        with lock:
            reconnects[0] += client.reconnects

    threads = [threading.Thread(target=worker, name=f"client-{n}") for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(timings)
    return {
        "requests": requests,
        "sends": sends,
        "clients": clients,
        "wall_s": round(wall, 2),
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(percentile(ordered, 0.95), 1),
        "mean_ms": round(statistics.fmean(ordered), 1),
        "min_ms": round(ordered[0], 1),
        "max_ms": round(ordered[-1], 1),
        "sends_per_s": round(sends / wall, 1),
        "failures": len(failures),
        # "HTTP 503", "status timeout", ...: what kind of failure, how many times
        "failure_kinds": dict(Counter(f.split(":")[0] for f in failures).most_common()),
        "failure_samples": sorted(set(failures))[:10],
        "reconnects": reconnects[0],
    }


def wait_drained(env: dict, since: str, timeout: float) -> dict:
    """The follow-up runs (reply step, announce) outlive the send: wait until none is pending.

    A run whose finishing transaction failed stays `running` until the sweeper ends it (a
    minute or more later); past `timeout` it is reported as it stands."""
    deadline = time.monotonic() + timeout
    while True:
        report = django_snippet(env, RUN_REPORT % {"since": since})
        if report["pending"] == 0 or time.monotonic() > deadline:
            return report
        time.sleep(1)


# --- one configuration ----------------------------------------------------------------------


def bench_config(name: str, args) -> list[dict]:
    env = config_env(name, args.workers, args.settings)
    print(f"\n== {CONFIGS[name]['title']}", flush=True)
    t = time.monotonic()
    fresh_database(name, env)
    setup = django_snippet(
        env,
        SETUP
        % {
            "main": repr(MAIN_BACKEND),
            "echo": repr(ECHO_BACKEND),
            "task_history": args.task_history,
        },
    )
    token = manage(env, "create_api_key", "--scope", "agent", "--agent", "main",
                   "--name", "send_bench").strip().splitlines()[-1]  # fmt: skip
    print(
        f"  database ready in {time.monotonic() - t:.1f} s "
        f"({setup['task_history']} saved tasks in the history)",
        flush=True,
    )
    results = []
    for variant, turns in VARIANTS.items():
        if args.variant and args.variant != variant:
            continue
        label = f"{name}-{variant}" + (f"-{args.label}" if args.label else "")
        django_snippet(env, SET_TURNS % turns)
        processes = Processes(env, label, args.app, args.server)
        try:
            processes.start()
            warm = run_sends(processes.port, token, sends=args.warmup, clients=args.clients,
                             timeout_seconds=args.timeout_seconds)  # fmt: skip
            wait_drained(env, since="1970-01-01T00:00:00+00:00", timeout=15)
            since = datetime.now(tz=UTC).isoformat()
            load_before, uptime_before = os.getloadavg(), uptime()
            groups = processes.groups[0].pid, processes.groups[1].pid
            cpu_before = cpu_ticks(*groups)
            result = run_sends(processes.port, token, sends=args.sends, clients=args.clients,
                               timeout_seconds=args.timeout_seconds)  # fmt: skip
            cpu_after = cpu_ticks(*groups)
            load_after, uptime_after = os.getloadavg(), uptime()
            drain_started = time.monotonic()
            runs = wait_drained(env, since, timeout=60)
            drain_s = time.monotonic() - drain_started
        finally:
            processes.stop()
        timeline = runs.pop("timeline")
        requests = result.pop("requests")
        cpu = cpu_per_send(cpu_before, cpu_after, args.sends)
        result.update(
            phases_ms=phases(requests, timeline),
            cpu_ms_per_send=cpu,
            cpu_utilisation=round(
                sum(v for k, v in cpu.items() if k != "other")
                * args.sends
                / 1000
                / result["wall_s"]
                / os.cpu_count(),
                2,
            ),
            label=label,
            config=name,
            title=CONFIGS[name]["title"],
            max_ping_pong_turns=turns,
            warmup={"sends": args.warmup, "failures": warm["failures"]},
            task_history_at_start=setup["task_history"],
            runs=runs,
            drain_after_s=round(drain_s, 1),
            loadavg_before=[round(x, 2) for x in load_before],
            loadavg_after=[round(x, 2) for x in load_after],
            uptime=[uptime_before, uptime_after],
            workers=args.workers,
            timeout_seconds=args.timeout_seconds,
            measured_at=datetime.now(tz=UTC).isoformat(),
            machine={"nproc": os.cpu_count(), "python": platform.python_version()},
        )
        (RESULTS / f"send-{label}.json").write_text(json.dumps(result, indent=2) + "\n")
        print(
            f"  {variant}: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, "
            f"{result['sends_per_s']} sends/s, failures {result['failure_kinds'] or 0}, "
            f"runs {runs['counts']}, load {load_after[0]:.2f}\n"
            f"    phases p50 ms { ({k: v and v['p50'] for k, v in result['phases_ms'].items()}) }\n"
            f"    CPU ms per send {cpu} (ours: {result['cpu_utilisation']:.0%} of the machine)"
            + ("" if runs["pending"] == 0 else f"\n    {runs['pending']} runs still pending"),
            flush=True,
        )
        for sample in result["failure_samples"][:3]:
            print(f"    e.g. {sample}", flush=True)
        results.append(result)
    return results


def run_counts(counts: dict) -> str:
    """{"send/ok": 200, "step/error": 8, ...} -> "send 200 ok · step 192 ok, 8 error"."""
    by_kind: dict[str, list[str]] = {}
    for key, n in counts.items():
        kind, status = key.split("/")
        by_kind.setdefault(kind, []).append(f"{n} {status}")
    order = ["send", "step", "announce"]
    kinds = sorted(by_kind, key=lambda k: order.index(k) if k in order else len(order))
    return " · ".join(f"{k} {', '.join(by_kind[k])}" for k in kinds)


def failures(result: dict) -> str:
    kinds = result["failure_kinds"]
    return ", ".join(f"{n} {kind}" for kind, n in kinds.items()) if kinds else "0"


def markdown(results: list[dict]) -> str:
    lines = [
        "| configuration | maxPingPongTurns | p50 ms | p95 ms | mean ms | max ms | sends/s "
        "| failures | runs afterwards |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['title']} | {r['max_ping_pong_turns']} "
            f"| {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['mean_ms']:.1f} | {r['max_ms']:.0f} "
            f"| {r['sends_per_s']:.1f} | {failures(r)} | {run_counts(r['runs']['counts'])} |"
        )
    lines += [
        "",
        "| configuration | maxPingPongTurns | web p50 | queue p50 | exec p50 | back p50 "
        "| CPU ms/send: server / worker / postgres / pg shared / redis / client / other "
        "| load avg |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in results:
        p, c = r["phases_ms"], r["cpu_ms_per_send"]
        cells = " | ".join(
            f"{p[k]['p50']:.1f}" if p[k] else "–" for k in ("web", "queue", "exec", "back")
        )
        cpu = " / ".join(
            str(c.get(k, "–"))
            for k in ("server", "worker", "postgres", "pg_shared", "redis", "client", "other")
        )
        lines.append(
            f"| {r['title']} | {r['max_ping_pong_turns']} | {cells} | {cpu} "
            f"| {r['loadavg_before'][0]:.2f} → {r['loadavg_after'][0]:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2, help="Q_WORKERS of the cluster")
    parser.add_argument("--timeout-seconds", type=int, default=30)
    parser.add_argument(
        "--task-history",
        type=int,
        default=1000,
        help="successful django-q tasks to store first, up to Q_CLUSTER save_limit (the steady "
        "state of a server that has run that many tasks); 0 starts empty",
    )
    parser.add_argument("--only", choices=sorted(CONFIGS), help="one configuration")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="one ping-pong setting")
    parser.add_argument(
        "--app",
        default="openclaw_site.asgi:application",
        help="ASGI application for the server (to try a change without editing the app)",
    )
    parser.add_argument(
        "--server",
        choices=["uvicorn", "daphne"],
        default="uvicorn",
        help="ASGI server, started as `manage.py serve --server NAME` starts it",
    )
    parser.add_argument(
        "--settings",
        help="DJANGO_SETTINGS_MODULE for every process (to try a settings change; put its "
        "directory on PYTHONPATH)",
    )
    parser.add_argument("--label", default="", help="suffix for the result and log file names")
    args = parser.parse_args(argv)

    RESULTS.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    started = time.monotonic()
    results = []
    for name in CONFIGS:
        if args.only and args.only != name:
            continue
        results.extend(bench_config(name, args))
    print()
    print(markdown(results))
    print(f"\nwhole matrix: {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
