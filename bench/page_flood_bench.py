#!/usr/bin/env python
"""A page flood against a keyed API client (issue 28 item 1): the pages' gate on and off.

    .venv/bin/python bench/page_flood_bench.py [--flood 1000] [--waves 5] [--seconds 0] [--limits 0,8]
        [--path /accounts/login/]

For each `OPENCLAW_PAGE_CONCURRENCY_LIMIT` in `--limits` (0 is the gate off: before) it builds a
fresh SQLite database (send_bench's var/sendbench, never the development one), starts
`manage.py serve`'s uvicorn (one process, no worker) on a free localhost port, and then, while a
client with an API key lists sessions (`GET /api/v1/sessions/`) every 50 ms, `--flood` anonymous
clients each send `GET --path` at once (one connection per request, no cookie, no key), in
`--waves` (5) waves 2 s apart; with `--seconds`, each flood client sends another as soon as one
is answered, until then. The other client runs in a process of its own; its requests that
started during a wave are the ones reported. Reported: the flood's statuses,
how long it took, the keyed client's p50/p95/max during it and the load
average. Each run is bounded (`--timeout`, 300 s). `flood s` is a wave's mean length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# send_bench imports `manage.py serve`'s command, which now imports models at its top.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
import django  # noqa: E402

django.setup()

from bench.load_client import KEY, drain, get, keyed_client, keyed_figures  # noqa: E402
from bench.send_bench import (  # noqa: E402
    RESULTS,
    Processes,
    config_env,
    django_snippet,
    fresh_database,
    uptime,
)


async def flood(
    port: int, token: str, *, count: int, path: str, seconds: float, waves: int
) -> dict:
    stop, out = multiprocessing.Event(), multiprocessing.Queue()
    other = multiprocessing.Process(target=keyed_client, args=(port, token, stop, out))
    other.start()
    await asyncio.sleep(1.0)  # its first requests before the flood
    results: list[tuple[int, float]] = []
    windows: list[tuple[float, float]] = []
    for wave in range(waves):
        if wave:
            await asyncio.sleep(2.0)  # the server empties between waves
        started = time.monotonic()
        deadline = started + seconds

        async def flooder(deadline=deadline):  # one of `count` anonymous clients
            while True:  # with --seconds, one request after another until then
                results.append(await get(port, path, None))
                if time.monotonic() >= deadline:
                    return

        await asyncio.gather(*(flooder() for _ in range(count)))
        windows.append((started, time.monotonic()))
    stop.set()
    other.join(timeout=70)
    return {
        "flood_statuses": dict(Counter(s for s, _ in results)),
        "flood_requests": len(results),
        "flood_seconds": round(sum(b - a for a, b in windows) / waves, 2),
        # The other client's requests that started during a wave.
        **keyed_figures(drain(out), windows),
    }


def run(limit: int, args) -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = config_env("sqlite", 1, None)
    env["OPENCLAW_PAGE_CONCURRENCY_LIMIT"] = str(limit)
    fresh_database("sqlite", env)
    token = django_snippet(env, KEY)["token"]
    processes = Processes(env, f"pageflood-{limit}", "openclaw_site.asgi:application", "uvicorn")
    processes.start(worker=False)
    try:
        result = asyncio.run(
            asyncio.wait_for(
                flood(
                    processes.port,
                    token,
                    count=args.flood,
                    path=args.path,
                    seconds=args.seconds,
                    waves=args.waves,
                ),
                args.timeout,
            )
        )
    finally:
        processes.stop()
    return {"limit": limit, "flood": args.flood, "path": args.path, **result, "load": uptime()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=1000)
    parser.add_argument("--limits", default="0,8")
    parser.add_argument("--path", default="/accounts/login/")
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--waves", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    print(
        "| page limit | flood | flood requests: statuses | flood s | keyed n | keyed p50 | p95 | max | load |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for limit in (int(x) for x in args.limits.split(",")):
        r = run(limit, args)
        print(
            f"| {limit or 'off'} | {r['flood']} × `{r['path']}` | {r['flood_requests']}: "
            f"{r['flood_statuses']} | "
            f"{r['flood_seconds']} | {r['keyed_requests']} {r['keyed_statuses']} | "
            f"{r['keyed_p50']} | **{r['keyed_p95']}** | {r['keyed_max']} | "
            f"{r['load'].split('load average:')[-1].strip()} |",
            flush=True,
        )
        print(json.dumps(r), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
