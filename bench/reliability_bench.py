#!/usr/bin/env python
"""Reliability figures (docs/reliability.md, issue 16): bursts that must not 500, and a worker
killed with runs in flight.

    .venv/bin/python bench/reliability_bench.py [--only pg-redis] [--waits 10000] [--bad-keys 3000]
        [--distinct-keys 3000] [--ungated 3000] [--burst-only]

For each configuration (send_bench's databases: `sendbench` / var/sendbench, Redis db 7; never
the development ones) it builds a fresh database with a scripted agent and starts the server
(`manage.py serve`'s uvicorn, one process).

1. **Bursts**, one after the other (raw asyncio sockets, one connection per request), each while
   another client (a key of its own) lists sessions (`GET /api/v1/sessions/?limit=5`) every
   50 ms. Reported: the statuses of every burst request (no 5xx allowed) and the other
   client's latency p50/p95/max during the burst.
   - One run stays queued (no worker yet); `--waits` clients open
     `GET /api/v1/runs/{id}/wait/?timeout=N` on it at once and `--bad-keys` clients send
     `POST /tools/invoke` with one wrong key.
   - `--distinct-keys` clients send `POST /tools/invoke`, each with a different well-formed
     key (each one a key lookup if it reached Django).
   - `--ungated` clients list sessions with one valid key (`GET /api/v1/sessions/?limit=5`, an
     endpoint that does not wait).
2. **Worker killed.** A worker cluster (2 processes) starts; `--sends` sends of a turn that takes
   2 s are started at once (timeoutSeconds 0). When some are running, the worker process
   running one is killed with SIGKILL (django-q2 starts a new one). Reported: how each run
   ended (ok, or error with its reason), the time from the kill to each killed run's end and to
   the last run's end (tasks it had taken but not started are re-enqueued by the watchdog),
   runs lost (still queued or running at the end) and
   duplicated (more than one reply message, or attempts > 1 for an ok run).

Prints Markdown tables; writes bench/results/reliability-<config>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import platform
import signal
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_bench import Client  # noqa: E402
from bench.send_bench import (  # noqa: E402
    CONFIGS,
    RESULTS,
    BenchError,
    Processes,
    config_env,
    django_snippet,
    fresh_database,
    manage,
    percentile,
)
from bench.services import Postgres, Redis  # noqa: E402

SLOW = {
    "type": "scripted",
    "rules": [
        {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
        {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
        {"match": ".*", "delayMs": 2000, "reply": "done"},
    ],
}

QUICK = {
    "type": "scripted",
    "rules": [*SLOW["rules"][:2], {"match": ".*", "delayMs": 500, "reply": "quick"}],
}

SETUP = """
import json
from sessions_app.manage.agents import upsert_agent
from sessions_app.manage.config import update_config
from sessions_app.store import upsert_session
upsert_agent(api_key=None, agent_id="main", data={"name": "main"})
upsert_agent(api_key=None, agent_id="echo", data={"name": "echo", "backend": %(slow)s})
upsert_session(api_key=None, key="agent:main:main", entry={})
upsert_session(api_key=None, key="agent:echo:main", entry={})
upsert_agent(api_key=None, agent_id="quick", data={"name": "quick", "backend": %(quick)s})
upsert_session(api_key=None, key="agent:quick:main", entry={})
update_config(api_key=None, changes={
    "tools.sessions.visibility": "all", "tools.agentToAgent.enabled": True,
    "session.agentToAgent.maxPingPongTurns": 0})
from sessions_app.runs.sweeper import ensure_schedule
ensure_schedule()
print(json.dumps({"ok": True}))
"""

RUNS = """
import json
from sessions_app.models import Message, Run
stamp = lambda t: t.timestamp() if t else None
rows = [{"id": str(r.pk), "status": r.status, "error": r.error, "attempts": r.attempts,
         "worker": r.worker, "created": stamp(r.created_at), "started": stamp(r.started_at),
         "finished": stamp(r.finished_at)}
        for r in Run.objects.filter(kind="send")]
replies = Message.objects.filter(session__key="agent:echo:main", role="assistant").count()
print(json.dumps({"runs": rows, "assistant_messages": replies}))
"""


# --- raw asyncio HTTP, one connection per request (10,000 at once) -----------------------------


async def raw_request(
    port: int, method: str, path: str, token: str, body: bytes = b""
) -> tuple[int, float]:
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return -1, time.monotonic() - started
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        status_line = await reader.readline()
        await reader.read()  # to the close
        status = int(status_line.split()[1]) if status_line else -2
    except (OSError, ValueError, IndexError):
        status = -3
    finally:
        writer.close()
    return status, time.monotonic() - started


def probe_process(port: int, token: str, mode: str, stop, out) -> None:
    """Another client, in a process of its own (the burst's 13,000 coroutines would otherwise
    delay its own loop and bill the server for it): lists sessions every 50 ms until `stop`,
    on one keep-alive connection (as a runtime's HTTP pool does) or a new connection per
    request. Puts (mode, its (status, seconds) pairs) on `out`."""
    samples = []
    client = Client(port, token) if mode == "keep_alive" else None
    while not stop.is_set():
        started = time.monotonic()
        c = client or Client(port, token)
        try:
            status, _ = c.request("GET", "/api/v1/sessions/?limit=5")
        except (OSError, http.client.HTTPException):
            status = -1  # (a timeout leaves the connection half-used: start a new one)
            c.conn.close()
            client = Client(port, token) if client is not None else None
        if client is None:
            c.conn.close()
        samples.append((status, time.monotonic() - started, started))
        time.sleep(0.05)
    out.put((mode, samples))


def probe_figures(samples: list[tuple[int, float, float]], burst_started: float) -> dict:
    latencies = [seconds for _, seconds, _ in samples] or [0.0]
    slowest = sorted(samples, key=lambda s: -s[1])[:5]
    return {
        "requests": len(samples),
        "statuses": dict(Counter(status for status, _, _ in samples)),
        # (status, seconds, when it started relative to the burst's start)
        "slowest": [(s, round(t, 2), round(at - burst_started, 1)) for s, t, at in slowest],
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
    }


async def burst(port: int, probe_token: str, groups: dict[str, list]) -> dict:
    """Send every request of `groups` (name → coroutines, one connection each) at once, while
    the probe processes measure another client. Statuses per group; no 5xx allowed."""
    ctx = multiprocessing.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    probes = {
        mode: ctx.Process(target=probe_process, args=(port, probe_token, mode, stop, out))
        for mode in ("keep_alive", "new_connection")
    }
    for process in probes.values():
        process.start()
    await asyncio.sleep(2)
    started = time.monotonic()
    results = await asyncio.gather(*(r for requests in groups.values() for r in requests))
    elapsed = time.monotonic() - started
    stop.set()
    collected = dict(out.get(timeout=60) for _ in probes)
    for process in probes.values():
        process.join(10)
    statuses, at = {}, 0
    for name, requests in groups.items():
        statuses[name] = Counter(s for s, _ in results[at : at + len(requests)])
        at += len(requests)
    return {
        "requests": {name: len(requests) for name, requests in groups.items()},
        "burst_s": round(elapsed, 1),
        "statuses": {name: dict(counts) for name, counts in statuses.items()},
        "server_errors": sum(n for c in statuses.values() for s, n in c.items() if s >= 500),
        "probe": {mode: probe_figures(samples, started) for mode, samples in collected.items()},
    }


def waits_and_bad_keys(port: int, token: str, run_id: str, args) -> dict[str, list]:
    """10,000 waits on one run and 3,000 requests of one bad credential (issue 16)."""
    body = json.dumps({"tool": "sessions_list", "args": {}}).encode()
    wait = f"/api/v1/runs/{run_id}/wait/?timeout={args.wait_seconds}"
    return {
        "waits": [raw_request(port, "GET", wait, token) for _ in range(args.waits)],
        "bad keys": [
            raw_request(port, "POST", "/tools/invoke", "not-a-key", body)
            for _ in range(args.bad_keys)
        ],
    }


def distinct_bad_keys(port: int, count: int) -> dict[str, list]:
    """`count` requests each with a different well-formed key (each would cost a lookup)."""
    body = json.dumps({"tool": "sessions_list", "args": {}}).encode()
    keys = [f"ocs_{os.urandom(6).hex()}_{os.urandom(24).hex()}" for _ in range(count)]
    return {
        "distinct bad keys": [raw_request(port, "POST", "/tools/invoke", k, body) for k in keys]
    }


def ungated(port: int, token: str, count: int) -> dict[str, list]:
    """`count` requests of one valid key at an endpoint that cannot wait (a list)."""
    return {
        "lists, one key": [
            raw_request(port, "GET", "/api/v1/sessions/?limit=5", token) for _ in range(count)
        ]
    }


def start_send(port: int, token: str, text: str) -> str:
    status, payload = Client(port, token).request(
        "POST",
        "/tools/invoke",
        {
            "tool": "sessions_send",
            "args": {"sessionKey": "agent:echo:main", "message": text, "timeoutSeconds": 0},
        },
    )
    if status != 200:
        raise BenchError(f"send: {status} {payload[:200]!r}")
    return json.loads(payload)["result"]["details"]["runId"]


def killed_worker(env: dict, procs: Processes, token: str, sends: int) -> dict:
    run_ids = [start_send(procs.port, token, f"job {i}") for i in range(sends)]
    mine = set(run_ids)
    deadline = time.monotonic() + 60
    victim = None
    while time.monotonic() < deadline and victim is None:
        report = django_snippet(env, RUNS)
        running = [r for r in report["runs"] if r["status"] == "running" and r["worker"]]
        if running:
            victim = running[0]
        else:
            time.sleep(0.2)
    if victim is None:
        raise BenchError("no run started")
    pid = int(victim["worker"].rsplit(":", 1)[1])
    held = [
        r["id"]
        for r in report["runs"]
        if r["status"] == "running" and r["worker"] == victim["worker"]
    ]
    os.kill(pid, signal.SIGKILL)
    killed_at = time.time()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        report = django_snippet(env, RUNS)
        if all(r["status"] not in ("queued", "running") for r in report["runs"]):
            break
        time.sleep(0.5)
    everything = {r["id"]: r for r in report["runs"]}
    runs = {i: r for i, r in everything.items() if i in mine}
    ended = Counter(
        (r["status"], r["error"].split(";")[0] if r["error"] else "") for r in runs.values()
    )
    killed_end_s = [
        round(everything[i]["finished"] - killed_at, 1) for i in held if everything[i]["finished"]
    ]
    ok = [r for r in runs.values() if r["status"] == "ok"]
    return {
        "sends": len(run_ids),
        "killed_pid": pid,
        "runs_in_flight_on_it": len(held),
        "ended": {f"{s}: {e}" if e else s: n for (s, e), n in ended.items()},
        "killed_runs_ended_after_s": killed_end_s,
        "all_done_after_s": round(max(r["finished"] or 0 for r in runs.values()) - killed_at, 1),
        "lost": sum(1 for r in runs.values() if r["status"] in ("queued", "running")),
        "duplicated": sum(1 for r in ok if r["attempts"] > 1),
        "ok_runs": len(ok),
    }


QUICK_RUNS = """
import json
from sessions_app.models import Message, Run
runs = Run.objects.filter(kind="send", session__key="agent:quick:main")
by_status = {}
for status in runs.values_list("status", flat=True):
    by_status[status] = by_status.get(status, 0) + 1
errors = sorted({e for e in runs.exclude(error="").values_list("error", flat=True)})[:5]
replies = Message.objects.filter(session__key="agent:quick:main", role="assistant").count()
print(json.dumps({"ids": [str(i) for i in runs.values_list("id", flat=True)],
                  "by_status": by_status, "errors": errors, "replies": replies}))
"""


def restarts(env: dict, procs: Processes, token: str, seconds: float) -> dict:
    """Sends to `quick` at 2 a second (each waits up to 5 s for its reply) while PostgreSQL
    and then Redis restart; afterwards every run must have ended ok, none lost."""
    statuses: Counter = Counter()
    results: Counter = Counter()
    started_ids: list[str] = []
    stop = threading.Event()

    def client() -> None:
        http_client = Client(procs.port, token)
        i = 0
        while not stop.is_set():
            i += 1
            body = {
                "tool": "sessions_send",
                "args": {"sessionKey": "agent:quick:main", "message": f"q{i}", "timeoutSeconds": 5},
            }
            try:
                status, payload = http_client.request("POST", "/tools/invoke", body)
            except OSError:
                statuses["connection error"] += 1
                time.sleep(0.5)
                continue
            statuses[status] += 1
            if status == 200:
                details = json.loads(payload)["result"]["details"]
                results[details["status"]] += 1
                if details.get("runId"):
                    started_ids.append(details["runId"])
            elif status == 503 and b"runId" in payload:
                started_ids.append(json.loads(payload)["runId"])
            time.sleep(0.5)

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(seconds / 6)
    t0 = time.monotonic()
    Postgres.machine().restart()
    pg_s = time.monotonic() - t0
    time.sleep(seconds / 3)
    t0 = time.monotonic()
    Redis(6379).restart()
    redis_s = time.monotonic() - t0
    time.sleep(seconds / 3)
    stop.set()
    thread.join(timeout=30)
    deadline = time.monotonic() + 90
    while True:
        report = django_snippet(env, QUICK_RUNS)
        pending = sum(report["by_status"].get(s, 0) for s in ("queued", "running"))
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(1)
    stored = set(report["ids"])
    return {
        "pg_restart_s": round(pg_s, 1),
        "redis_restart_s": round(redis_s, 1),
        "http": {str(k): v for k, v in statuses.items()},
        "send_results": dict(results),
        "runs": report["by_status"],
        "errors": report["errors"],
        "server_errors": sum(
            v for k, v in statuses.items() if isinstance(k, int) and k >= 500 and k != 503
        ),
        "lost": len([i for i in started_ids if i not in stored]) + pending,
        "replies": report["replies"],
    }


def bench(name: str, args) -> dict:
    env = config_env(name, workers=2, settings=None)
    fresh_database(name, env)
    django_snippet(env, SETUP % {"slow": json.dumps(SLOW), "quick": json.dumps(QUICK)})
    token = (
        manage(env, "create_api_key", "--scope", "agent", "--agent", "main")
        .strip()
        .splitlines()[-1]
    )
    # Another client: the probe has a key of its own.
    probe_token = manage(env, "create_api_key", "--scope", "operator").strip().splitlines()[-1]
    procs = Processes(env, f"reliability-{name}", "openclaw_site.asgi:application", "uvicorn")
    result: dict = {"config": name, "title": CONFIGS[name]["title"]}
    try:
        procs.start(worker=False)
        run_id = start_send(procs.port, token, "wait for me")  # no worker: it stays queued
        port = procs.port
        phases = {
            "waits + bad keys": lambda: waits_and_bad_keys(port, token, run_id, args),
            "distinct bad keys": lambda: distinct_bad_keys(port, args.distinct_keys),
            "ungated endpoint": lambda: ungated(port, token, args.ungated),
        }
        result["bursts"] = {}
        for name, groups in phases.items():
            made = groups()
            if not any(made.values()):
                continue
            result["bursts"][name] = asyncio.run(burst(port, probe_token, made))
            print(name, json.dumps(result["bursts"][name]), flush=True)
            time.sleep(args.wait_seconds if name == "waits + bad keys" else 2)  # let it drain
        if args.burst_only:
            return result
        procs.start_worker()
        time.sleep(2)
        result["killed_worker"] = killed_worker(env, procs, token, args.sends)
        if args.restarts and name != "sqlite":
            result["restarts"] = restarts(env, procs, token, args.restart_seconds)
    finally:
        procs.stop()
    return result


def markdown(results: list[dict]) -> str:
    lines = [
        "| configuration | burst | requests | 5xx | statuses "
        "| another client, keep-alive: p50 / p95 / max | ... new connection each request |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for r in results:
        for name, b in r.get("bursts", {}).items():
            lines.append(
                f"| {r['title']} | {name} | "
                + " + ".join(str(n) for n in b["requests"].values())
                + f" | **{b['server_errors']}** | {b['statuses']} | "
                + " | ".join(
                    f"{p['p50_ms']} / **{p['p95_ms']}** / {p['max_ms']} ms"
                    for p in (b["probe"]["keep_alive"], b["probe"]["new_connection"])
                )
                + " |"
            )
    killed = [r for r in results if "killed_worker" in r]
    if killed:
        lines += [
            "",
            "| configuration | sends | in flight on the killed worker | ended | killed runs ended after | lost | duplicated |",
            "|---|---:|---:|---|---|---:|---:|",
        ]
    for r in killed:
        k = r["killed_worker"]
        lines.append(
            f"| {r['title']} | {k['sends']} | {k['runs_in_flight_on_it']} | {k['ended']} | "
            f"{k['killed_runs_ended_after_s']} s | {k['lost']} | {k['duplicated']} |"
        )
    restarted = [r for r in results if "restarts" in r]
    if restarted:
        lines += [
            "",
            "| configuration | PostgreSQL restart | Redis restart | HTTP statuses | send results | runs | 500s | lost |",
            "|---|---:|---:|---|---|---|---:|---:|",
        ]
        for r in restarted:
            x = r["restarts"]
            lines.append(
                f"| {r['title']} | {x['pg_restart_s']} s | {x['redis_restart_s']} s | {x['http']} | "
                f"{x['send_results']} | {x['runs']} | **{x['server_errors']}** | **{x['lost']}** |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CONFIGS))
    parser.add_argument("--waits", type=int, default=10000)
    parser.add_argument("--bad-keys", type=int, default=3000)
    parser.add_argument(
        "--distinct-keys", type=int, default=3000, help="a burst of different bad keys (0: skip)"
    )
    parser.add_argument(
        "--ungated", type=int, default=3000, help="a burst of one key at a list (0: skip)"
    )
    parser.add_argument("--wait-seconds", type=int, default=20)
    parser.add_argument("--sends", type=int, default=12)
    parser.add_argument(
        "--restarts",
        action="store_true",
        help="also restart PostgreSQL and Redis under load (the machine's own services!)",
    )
    parser.add_argument("--restart-seconds", type=float, default=36)
    parser.add_argument("--burst-only", action="store_true", help="skip the killed worker")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    names = [args.only] if args.only else ["sqlite", "pg-redis"]
    results = []
    for name in names:
        print(f"== {CONFIGS[name]['title']}", flush=True)
        result = bench(name, args)
        result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
        result["at"] = datetime.now(UTC).isoformat()
        (RESULTS / f"reliability-{name}.json").write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=1)[:3000], flush=True)
        results.append(result)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
