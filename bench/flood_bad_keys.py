#!/usr/bin/env python
"""A sustained flood of distinct bad API keys against a keyed client (issue 28 item 2).

    .venv/bin/python bench/flood_bad_keys.py [--configs sqlite,pg-redis] [--flood 300]
        [--seconds 25] [--keep-alive] [--env NAME=VALUE ...]

For each configuration (send_bench's: `sqlite`, `pg-redis`; its own database, never the
development one: set SEND_BENCH_DB / SEND_BENCH_REDIS_DB on a shared machine) it builds a fresh
database, starts `manage.py serve`'s uvicorn (one process, no worker) on a free localhost port,
and then, while a client with a valid API key (in a process of its own) lists sessions
(`GET /api/v1/sessions/`, a new connection each, every 50 ms), `--flood` clients each send
`GET /api/v1/sessions/` with a fresh well-formed key (`ocs_<12 hex>_<43 chars>`, never the same
twice), one after another, for `--seconds`. The keyed client has been served before the flood
starts (an existing client, as in the issue). Every request, the flood's and the keyed
client's, comes from 127.0.0.1: one source.

Reported: the flood's statuses and rate, the keyed client's statuses and p50 / p95 / max during
the flood, the load average. `--env` passes settings to the server (e.g.
`--env OPENCLAW_SOURCE_AUTH_FAILURES=0` turns the per-source limit off: before).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
import django  # noqa: E402

django.setup()

from bench.load_client import KEY, drain, flooder, keyed_client, keyed_figures  # noqa: E402
from bench.send_bench import (  # noqa: E402
    RESULTS,
    Processes,
    config_env,
    django_snippet,
    fresh_database,
    percentile,
    uptime,
)

PATH = "/api/v1/sessions/"


def bad_key() -> str:
    """Well-formed (prefix, 12 hex lookup, 43-character secret) and never seen before."""
    return f"ocs_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


async def flood(port: int, token: str, *, count: int, seconds: float, keep_alive: bool) -> dict:
    stop, out = multiprocessing.Event(), multiprocessing.Queue()
    other = multiprocessing.Process(target=keyed_client, args=(port, token, stop, out))
    other.start()
    await asyncio.sleep(1.5)  # served before the flood: an existing client
    statuses: Counter = Counter()
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(
        *(
            flooder(port, PATH, deadline, statuses, token=bad_key, keep_alive=keep_alive)
            for _ in range(count)
        )
    )
    ended = time.monotonic()
    stop.set()
    other.join(timeout=70)
    samples = drain(out)
    before = [t for begun, _, t in samples if begun < started]
    total = sum(statuses.values())
    return {
        "flood_statuses": dict(statuses),
        "flood_requests": total,
        "flood_per_second": round(total / (ended - started)),
        "flood_seconds": round(ended - started, 1),
        "keyed_before_p50": round(percentile(before, 0.50), 4) if before else None,
        **keyed_figures(samples, [(started, ended)], digits=4),
    }


def run(config: str, args) -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = config_env(config, 1, None)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    fresh_database(config, env)
    token = django_snippet(env, KEY)["token"]
    processes = Processes(env, f"badkeys-{config}", "openclaw_site.asgi:application", "uvicorn")
    processes.start(worker=False)
    try:
        result = asyncio.run(
            asyncio.wait_for(
                flood(
                    processes.port,
                    token,
                    count=args.flood,
                    seconds=args.seconds,
                    keep_alive=args.keep_alive,
                ),
                args.seconds + 120,
            )
        )
    finally:
        processes.stop()
    return {
        "config": config,
        "flood": args.flood,
        "keep_alive": args.keep_alive,
        "env": args.env,
        **result,
        "load": uptime(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="sqlite,pg-redis")
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--keep-alive", action="store_true")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    print(
        "| config | flood | flood statuses | flood req/s | keyed n: statuses | keyed p50 "
        "| p95 | max (s) | load |"
    )
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- |")
    for config in args.configs.split(","):
        r = run(config, args)
        print(
            f"| {config} {' '.join(args.env)} | {r['flood']} × {r['flood_seconds']} s"
            f"{' keep-alive' if r['keep_alive'] else ''} | {r['flood_statuses']} | "
            f"{r['flood_per_second']} | {r['keyed_requests']}: {r['keyed_statuses']} | "
            f"{r['keyed_p50']} | **{r['keyed_p95']}** | {r['keyed_max']} | "
            f"{r['load'].split('load average:')[-1].strip()} |",
            flush=True,
        )
        print(json.dumps(r), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
