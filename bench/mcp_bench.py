#!/usr/bin/env python
"""MCP over streamable HTTP against `/tools/invoke`, and many MCP sessions on one web process.

    .venv/bin/python bench/mcp_bench.py [--requests 200] [--warmup 20] [--sessions 100]

Uses the database the environment selects (DATABASE_URL, else SQLite under OPENCLAW_VAR_DIR);
`manage.py seed_demo` is enough (it is run first; it is idempotent). Starts one web process
(`manage.py serve --no-worker`: uvicorn, as deployed), creates an agent key for `main`, then:

1. `sessions_list {limit: 20}`, sequentially, `--requests` times each way: `POST /tools/invoke`
   and a 2026-07-28 `tools/call` from a plain HTTP client over one keep-alive connection (with
   the web process's CPU per call: the server's side of the comparison), then `tools/call`
   with the SDK's own client in each protocol era (2026-07-28: one POST per call; 2025-11-25:
   a session, SSE responses). Every way is checked (the same rows). The SDK-client numbers
   include the client's own work (pydantic models, output-schema validation).
2. `--sessions` SDK clients (2025 era: each holds a session and its standalone GET stream)
   opened at once and held, each calling `agents_list`; then, while they are all open, the
   latency of `sessions_list` from one more client, and the web process's resident memory
   before and after.

Prints a Markdown table; writes bench/results/mcp-<backend>.json. The target: MCP within
1.5x of /tools/invoke for sessions_list.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
ARGS = {"limit": 20}


def backend_name() -> str:
    return "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"


def manage(*args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    log = log_path.open("w")
    server = subprocess.Popen(
        [PYTHON, "manage.py", "serve", "--no-worker", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "ACCESS_LOG": "0"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited; see {log_path}")
        with contextlib.suppress(httpx2.HTTPError):
            httpx2.get(f"http://127.0.0.1:{port}/tools/invoke", timeout=2)
            return server
        time.sleep(0.3)
    server.terminate()
    raise SystemExit(f"server did not answer; see {log_path}")


def web_pid(serve_pid: int) -> int:
    """The process that holds the MCP sessions: `serve --no-worker` becomes the server (exec),
    so it is the serve process itself; an older serve that forked uvicorn has it as a child."""
    children = Path(f"/proc/{serve_pid}/task/{serve_pid}/children").read_text().split()
    for pid in children:
        if "uvicorn" in Path(f"/proc/{pid}/cmdline").read_text():
            return int(pid)
    return serve_pid


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "n": len(samples),
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def time_post(
    url: str, headers: dict, body: dict, rows, requests: int, warmup: int, pid: int
) -> tuple[dict, list]:
    """One keep-alive connection, `requests` POSTs; latency and the server's CPU per request."""
    samples = []
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        for _ in range(warmup):
            await http.post(url, json=body)
        cpu = cpu_seconds(pid)
        for _ in range(requests):
            started = time.perf_counter()
            response = await http.post(url, json=body)
            samples.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
        cpu = cpu_seconds(pid) - cpu
    result = summary(samples)
    result["server_cpu_ms"] = round(cpu / requests * 1000, 2)
    return result, [row["key"] for row in rows(response.json())]


def time_invoke(url: str, token: str, requests: int, warmup: int, pid: int):
    return time_post(
        url + "/tools/invoke",
        {"Authorization": f"Bearer {token}"},
        {"tool": "sessions_list", "args": ARGS},
        lambda body: body["result"]["details"]["sessions"],
        requests,
        warmup,
        pid,
    )


def time_raw_mcp(url: str, token: str, requests: int, warmup: int, pid: int):
    """A 2026-07-28 tools/call as a plain HTTP client sends it (what the SDK client sends, without
    the SDK client's own work): the server's side of the comparison."""
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return time_post(
        url + "/mcp/",
        {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": version,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "sessions_list",
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "sessions_list", "arguments": ARGS, "_meta": meta},
        },
        lambda body: body["result"]["structuredContent"]["sessions"],
        requests,
        warmup,
        pid,
    )


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str, mode: str):
    auth = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=auth) as http:
        transport = streamable_http_client(url + "/mcp/", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


async def time_mcp(
    url: str, token: str, mode: str, requests: int, warmup: int
) -> tuple[dict, list]:
    samples = []
    async with mcp_client(url, token, mode) as client:
        for i in range(warmup + requests):
            started = time.perf_counter()
            result = await client.call_tool("sessions_list", ARGS)
            elapsed = time.perf_counter() - started
            assert not result.is_error, result.content
            keys = [row["key"] for row in result.structured_content["sessions"]]
            if i >= warmup:
                samples.append(elapsed)
    return summary(samples), keys


async def hold_sessions(url: str, token: str, count: int, pid: int, requests: int) -> dict:
    before = rss_mib(pid)
    opened = asyncio.Event()
    release = asyncio.Event()
    ready = 0
    failures: list[str] = []

    async def one() -> None:
        nonlocal ready
        try:
            async with mcp_client(url, token, "legacy") as client:
                result = await client.call_tool("agents_list", {})
                assert not result.is_error
                ready += 1
                if ready == count:
                    opened.set()
                await release.wait()
        except Exception as exc:  # counted, not fatal: the report says how many held
            failures.append(repr(exc)[:200])
            if ready + len(failures) == count:
                opened.set()

    started = time.perf_counter()
    tasks = [asyncio.create_task(one()) for _ in range(count)]
    await asyncio.wait_for(opened.wait(), 300)
    open_seconds = time.perf_counter() - started
    await asyncio.sleep(1)
    during = rss_mib(pid)
    latency, _ = await time_mcp(url, token, "auto", requests, warmup=5)
    release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "sessions": count,
        "held": ready,
        "failures": failures[:5],
        "open_all_seconds": round(open_seconds, 2),
        "rss_mib_before": round(before, 1),
        "rss_mib_with_sessions": round(during, 1),
        "rss_kib_per_session": round((during - before) * 1024 / max(ready, 1), 1),
        "sessions_list_while_held": latency,
    }


async def run(args) -> dict:
    port = args.port
    url = f"http://127.0.0.1:{port}"
    manage("seed_demo")
    token = manage("create_api_key", "--scope", "agent", "--agent", "main").strip().splitlines()[-1]
    RESULTS.mkdir(parents=True, exist_ok=True)
    server = start_server(port, RESULTS / f"mcp-server-{backend_name()}.log")
    try:
        pid = web_pid(server.pid)
        invoke, invoke_keys = await time_invoke(url, token, args.requests, args.warmup, pid)
        raw, raw_keys = await time_raw_mcp(url, token, args.requests, args.warmup, pid)
        modern, modern_keys = await time_mcp(url, token, "auto", args.requests, args.warmup)
        legacy, legacy_keys = await time_mcp(url, token, "legacy", args.requests, args.warmup)
        same = invoke_keys == raw_keys == modern_keys == legacy_keys
        assert same, "the four ways listed different rows"
        held = await hold_sessions(url, token, args.sessions, pid, min(args.requests, 50))
    finally:
        server.terminate()
        server.wait(timeout=15)
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "backend": backend_name(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
        "sessions_list": {
            "tools_invoke": invoke,
            "mcp_2026_plain_http": raw,
            "mcp_2026": modern,
            "mcp_2025": legacy,
            "ratio_plain_http": round(raw["median_ms"] / invoke["median_ms"], 2),
            "ratio_server_cpu": round(raw["server_cpu_ms"] / invoke["server_cpu_ms"], 2),
            "ratio_2026": round(modern["median_ms"] / invoke["median_ms"], 2),
            "ratio_2025": round(legacy["median_ms"] / invoke["median_ms"], 2),
        },
        "held_sessions": held,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    out = RESULTS / f"mcp-{result['backend']}.json"
    out.write_text(json.dumps(result, indent=2))
    s, h = result["sessions_list"], result["held_sessions"]
    print(
        f"| sessions_list limit 20 ({result['backend']}) | median ms | p95 ms | vs /tools/invoke |"
    )
    print("|---|---|---|---|")
    for name, key, ratio in (
        ("POST /tools/invoke", "tools_invoke", 1.0),
        (
            "MCP tools/call, 2026-07-28, plain HTTP client",
            "mcp_2026_plain_http",
            s["ratio_plain_http"],
        ),
        ("MCP tools/call, 2026-07-28, SDK client", "mcp_2026", s["ratio_2026"]),
        ("MCP tools/call, 2025-11-25 session, SDK client", "mcp_2025", s["ratio_2025"]),
    ):
        print(f"| {name} | {s[key]['median_ms']} | {s[key]['p95_ms']} | {ratio}x |")
    print(
        f"\nServer CPU per call: /tools/invoke {s['tools_invoke']['server_cpu_ms']} ms, "
        f"MCP {s['mcp_2026_plain_http']['server_cpu_ms']} ms ({s['ratio_server_cpu']}x)"
    )
    print()
    print(
        f"{h['held']}/{h['sessions']} MCP sessions held by one web process "
        f"(opened in {h['open_all_seconds']} s); RSS {h['rss_mib_before']} -> "
        f"{h['rss_mib_with_sessions']} MiB ({h['rss_kib_per_session']} KiB each); "
        f"sessions_list meanwhile: median {h['sessions_list_while_held']['median_ms']} ms, "
        f"p95 {h['sessions_list_while_held']['p95_ms']} ms"
    )
    print(f"written to {out}")


if __name__ == "__main__":
    main()
