#!/usr/bin/env python
"""A soak (issue 28 item 4): steady traffic for half an hour; is memory flat, is p95 flat?

    .venv/bin/python bench/soak.py [--config pg-redis] [--minutes 30] [--sends-per-second 2]
        [--lists-per-second 4] [--sample-seconds 30]

One configuration of send_bench's (its database: set SEND_BENCH_DB / SEND_BENCH_REDIS_DB on a
shared machine; the database is made anew), `manage.py serve`'s uvicorn (one process) and a
worker cluster of 2 processes. For `--minutes`, three clients, each on one keep-alive
connection, at a fixed rate (a request late by more than its interval is not made up):
- sends: `sessions_send` to a scripted agent that answers at once, `timeoutSeconds: 30` (the
  answer waits for the run), each with an idempotency key;
- lists: `GET /api/v1/sessions/?limit=20`;
- history: `GET /api/v1/sessions/agent:echo:main/history/?limit=50` (the transcript the sends
  grow).
Every `--sample-seconds`, the resident memory (RSS, from /proc) of the server's process group
and of the worker's (each process, summed) and the load average are sampled.

Reported per 5-minute window: requests, p50 / p95 of each client, non-200 answers, the
memory at the window's end, the load; and the memory's slope over the run after the first 5
minutes (MB per 10 minutes, least squares). Writes bench/results/soak-<config>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
import django  # noqa: E402

django.setup()

from bench.http_bench import Client  # noqa: E402
from bench.send_bench import (  # noqa: E402
    ECHO_BACKEND,
    MAIN_BACKEND,
    RESULTS,
    SETUP,
    Processes,
    config_env,
    django_snippet,
    fresh_database,
    manage,
    percentile,
    uptime,
)

WINDOW_S = 300


def group_rss_mb(pgid: int) -> tuple[float, int]:
    """(the summed RSS in MB of every process in process group `pgid`, how many)."""
    total, count = 0, 0
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) != pgid:  # (state, ppid, pgrp, ...)
                continue
            total += int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * page
            count += 1
        except (OSError, ValueError, IndexError):
            continue
    return round(total / 1e6, 1), count


def database_sessions(env: dict) -> dict[str, int]:
    """The config's PostgreSQL sessions by state (and those waiting on a lock, or in a
    transaction for over 10 s): a pool that leaks or a lock that stays shows here first."""
    url = env.get("DATABASE_URL")
    if not url:
        return {}
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        rows = admin.execute(
            "SELECT coalesce(state, '?'), wait_event_type = 'Lock', "
            "coalesce(now() - xact_start > interval '10 seconds', false) "
            "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        ).fetchall()
    found: Counter = Counter()
    for state, waiting, long_xact in rows:
        found[state] += 1
        found["waiting on a lock"] += bool(waiting)
        found["transaction > 10 s"] += bool(long_xact)
    return dict(found)


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class Steady:
    """One client at a fixed rate: `make()` gives (method, path, body) for request i."""

    def __init__(self, name: str, port: int, token: str, rate: float, make):
        self.name, self.port, self.token, self.rate, self.make = name, port, token, rate, make
        self.samples: list[tuple[float, int, float]] = []  # (started, status, seconds)

    def run(self, until: float) -> None:
        client = Client(self.port, self.token)
        interval = 1 / self.rate
        next_at = time.monotonic()
        i = 0
        while time.monotonic() < until:
            method, path, body = self.make(i)
            started = time.monotonic()
            try:
                status, _ = client.request(method, path, body)
            except OSError:
                status = -1
                client = Client(self.port, self.token)
            self.samples.append((started, status, time.monotonic() - started))
            i += 1
            next_at += interval
            # Late by more than an interval: skip ahead rather than burst to catch up.
            next_at = max(next_at, time.monotonic() - interval)
            time.sleep(max(0.0, next_at - time.monotonic()))


def slope_mb_per_10min(points: list[tuple[float, float]]) -> float | None:
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if not var:
        return None
    return round(sum((t - mx) * (v - my) for t, v in points) / var * 600, 2)


def soak(args) -> dict:
    env = config_env(args.config, workers=2, settings=None)
    fresh_database(args.config, env)
    if "REDIS_URL" in env:
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    django_snippet(
        env,
        SETUP
        % {"main": json.dumps(MAIN_BACKEND), "echo": json.dumps(ECHO_BACKEND), "task_history": 0},
    )
    token = (
        manage(env, "create_api_key", "--scope", "agent", "--agent", "main")
        .strip()
        .splitlines()[-1]
    )
    procs = Processes(env, f"soak-{args.config}", "openclaw_site.asgi:application", "uvicorn")
    procs.start(worker=True)
    prefix = f"soak-{os.getpid()}"
    clients = [
        Steady(
            "send",
            procs.port,
            token,
            args.sends_per_second,
            lambda i: (
                "POST",
                "/tools/invoke",
                {
                    "tool": "sessions_send",
                    "args": {
                        "sessionKey": "agent:echo:main",
                        "message": f"ping {i}",
                        "timeoutSeconds": 30,
                    },
                    "idempotencyKey": f"{prefix}-{i}",
                },
            ),
        ),
        Steady(
            "list",
            procs.port,
            token,
            args.lists_per_second,
            lambda i: ("GET", "/api/v1/sessions/?limit=20", None),
        ),
        Steady(
            "history",
            procs.port,
            token,
            args.lists_per_second / 2,
            lambda i: ("GET", "/api/v1/sessions/agent:echo:main/history/?limit=50", None),
        ),
    ]
    memory: list[dict] = []
    try:
        started = time.monotonic()
        until = started + args.minutes * 60
        threads = [threading.Thread(target=c.run, args=(until,)) for c in clients]
        for thread in threads:
            thread.start()
        server, worker = procs.groups[0].pid, procs.groups[1].pid
        while time.monotonic() < until:
            s_mb, s_n = group_rss_mb(server)
            w_mb, w_n = group_rss_mb(worker)
            memory.append(
                {
                    "t": round(time.monotonic() - started, 1),
                    "server_mb": s_mb,
                    "server_processes": s_n,
                    "worker_mb": w_mb,
                    "worker_processes": w_n,
                    "load": load1(),
                    "database": database_sessions(env),
                }
            )
            print(json.dumps(memory[-1]), flush=True)
            time.sleep(min(args.sample_seconds, max(0.0, until - time.monotonic())))
        for thread in threads:
            thread.join()
    finally:
        procs.stop()
    return report(args, clients, memory, started)


def report(args, clients: list[Steady], memory: list[dict], started: float) -> dict:
    windows = []
    for w in range(int(args.minutes * 60 // WINDOW_S)):
        a, b = started + w * WINDOW_S, started + (w + 1) * WINDOW_S
        row: dict = {"minutes": f"{w * 5}–{(w + 1) * 5}"}
        for c in clients:
            inside = [(s, t) for begun, s, t in c.samples if a <= begun < b]
            times = [t for _, t in inside] or [0.0]
            row[c.name] = {
                "n": len(inside),
                "p50_ms": round(percentile(times, 0.5) * 1000, 1),
                "p95_ms": round(percentile(times, 0.95) * 1000, 1),
                "not_200": sum(1 for s, _ in inside if s != 200),
            }
        at_end = [m for m in memory if m["t"] <= (w + 1) * WINDOW_S]
        if at_end:
            row["server_mb"] = at_end[-1]["server_mb"]
            row["worker_mb"] = at_end[-1]["worker_mb"]
        loads = [m["load"] for m in memory if w * WINDOW_S <= m["t"] < (w + 1) * WINDOW_S]
        row["load"] = round(sum(loads) / len(loads), 1) if loads else None
        windows.append(row)
    settled = [m for m in memory if m["t"] >= WINDOW_S]
    statuses = Counter(s for c in clients for _, s, _ in c.samples)
    return {
        "config": args.config,
        "minutes": args.minutes,
        "rates": {c.name: c.rate for c in clients},
        "statuses": {str(k): v for k, v in statuses.items()},
        "windows": windows,
        "server_mb_first_last": [memory[0]["server_mb"], memory[-1]["server_mb"]] if memory else [],
        "worker_mb_first_last": [memory[0]["worker_mb"], memory[-1]["worker_mb"]] if memory else [],
        "server_slope_mb_per_10min": slope_mb_per_10min(
            [(m["t"], m["server_mb"]) for m in settled]
        ),
        "worker_slope_mb_per_10min": slope_mb_per_10min(
            [(m["t"], m["worker_mb"]) for m in settled]
        ),
        "memory": memory,
        "uptime": uptime(),
    }


def markdown(r: dict) -> str:
    lines = [
        "| minutes | sends: n, p50 / **p95** ms | lists: n, p50 / **p95** ms "
        "| history: n, p50 / **p95** ms | not 200 | server RSS MB | worker RSS MB | load |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for w in r["windows"]:
        cells = [
            f"{w[c]['n']}, {w[c]['p50_ms']} / **{w[c]['p95_ms']}**"
            for c in ("send", "list", "history")
        ]
        bad = sum(w[c]["not_200"] for c in ("send", "list", "history"))
        lines.append(
            f"| {w['minutes']} | {' | '.join(cells)} | {bad} | {w.get('server_mb')} | "
            f"{w.get('worker_mb')} | {w['load']} |"
        )
    lines.append(
        f"\nmemory slope after the first 5 minutes: server {r['server_slope_mb_per_10min']} MB, "
        f"worker {r['worker_slope_mb_per_10min']} MB per 10 minutes; statuses {r['statuses']}"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="pg-redis", choices=["sqlite", "pg-redis", "pg-orm"])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--sends-per-second", type=float, default=2)
    parser.add_argument("--lists-per-second", type=float, default=4)
    parser.add_argument("--sample-seconds", type=float, default=30)
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = soak(args)
    (RESULTS / f"soak-{args.config}.json").write_text(json.dumps(result, indent=2))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
