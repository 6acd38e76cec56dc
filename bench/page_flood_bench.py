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

from bench.send_bench import (  # noqa: E402
    RESULTS,
    Processes,
    config_env,
    django_snippet,
    fresh_database,
    percentile,
    uptime,
)

KEY = """
import json
from sessions_app.manage.agents import upsert_agent
from sessions_app.models import ApiKey
from sessions_app.store import upsert_session
upsert_agent(api_key=None, agent_id="main", data={"name": "main"})
upsert_session(api_key=None, key="agent:main:main", entry={})
_, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
print(json.dumps({"token": token}))
"""


async def get(port: int, path: str, token: str | None) -> tuple[int, float]:
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return -1, time.monotonic() - started
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    try:
        writer.write(head.encode())
        await writer.drain()
        line = await reader.readline()
        await reader.read()
        status = int(line.split()[1]) if line else -2
    except (OSError, ValueError, IndexError):
        status = -3
    finally:
        writer.close()
    return status, time.monotonic() - started


def keyed_client(port: int, token: str, stop, out) -> None:
    """The other client, in a process of its own so that the flood's client loop does not
    delay it: `GET /api/v1/sessions/` every 50 ms until `stop`; (start, status, seconds) to
    `out` (time.monotonic is the machine's clock, the same in both processes)."""
    import http.client

    while not stop.is_set():
        started = time.monotonic()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request(
                "GET", "/api/v1/sessions/", headers={"Authorization": f"Bearer {token}"}
            )
            response = connection.getresponse()
            response.read()
            status = response.status
            connection.close()
        except OSError:
            status = -1
        out.put((started, status, time.monotonic() - started))
        time.sleep(0.05)


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
    samples = []
    while not out.empty():
        samples.append(out.get())
    # The other client's requests that started during a wave.
    keyed = [(s, t) for begun, s, t in samples if any(a <= begun <= b for a, b in windows)]
    latencies = [t for _, t in keyed]
    return {
        "flood_statuses": dict(Counter(s for s, _ in results)),
        "flood_requests": len(results),
        "flood_seconds": round(sum(b - a for a, b in windows) / waves, 2),
        "keyed_requests": len(keyed),
        "keyed_statuses": dict(Counter(s for s, _ in keyed)),
        "keyed_p50": round(percentile(latencies, 0.50), 3) if latencies else None,
        "keyed_p95": round(percentile(latencies, 0.95), 3) if latencies else None,
        "keyed_max": round(max(latencies), 3) if latencies else None,
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
