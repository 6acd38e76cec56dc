#!/usr/bin/env python
"""Latency of the read endpoints over HTTP, measured from a separate client process.

    .venv/bin/python bench/http_bench.py [--requests 200] [--warmup 20] [--port 8765]

Uses the database the environment selects (DATABASE_URL, else SQLite under OPENCLAW_VAR_DIR),
which bench/generate.py must have filled. Starts the server as `manage.py serve` does (uvicorn,
one process; `--server daphne` for the earlier rounds' server) in a subprocess with the same
environment (REDIS_URL included), creates an operator API key, sets the visibility
(`--visibility`, default all) with agent-to-agent on, then times each case with one keep-alive
connection, the operator acting as `--requester` (default agent:main:main). Every response is
checked (status 200, expected row count: 200, or under self/tree what the first response
listed, which must be the same every time). `uptime` is recorded around each case.

Prints a Markdown table; writes bench/results/http-<backend>.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
DEPTH = 1_000_000
PAGE = 200


class BenchError(RuntimeError):
    pass


def backend_name() -> str:
    return "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"


def uptime() -> str:
    """`uptime`'s line (the load averages with the time), recorded with every figure."""
    done = subprocess.run(["uptime"], capture_output=True, text=True)
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects (and counts it) if the server closes."""

    def __init__(self, port: int, token: str | None = None):
        self.port = port
        self.token = token
        self.reconnects = 0
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                payload = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self._reconnect()
                return response.status, payload
            except (http.client.RemoteDisconnected, ConnectionError, http.client.BadStatusLine):
                if attempt == 2:
                    raise
                self._reconnect()
        raise AssertionError("unreachable")

    def _reconnect(self) -> None:
        self.conn.close()
        self.reconnects += 1
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)


def start_server(port: int, log_path: Path, app: str, server_name: str) -> subprocess.Popen:
    # serve.py imports the models (its retention step): Django first.
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()
    from sessions_app.management.commands.serve import server_command

    command = [
        app if part == "openclaw_site.asgi:application" else part
        for part in server_command(server_name, "127.0.0.1", port)
    ]
    log = log_path.open("w")
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise BenchError(f"server exited with {server.returncode}; see {log_path}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/tools/invoke")
            conn.getresponse().read()
            conn.close()
            return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise BenchError(f"server did not answer within 60 s; see {log_path}")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def create_operator_key() -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", "create_api_key", "--scope", "operator", "--name", "http_bench"],
        cwd=ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def decode(status: int, payload: bytes, case: str) -> dict:
    if status != 200:
        raise BenchError(f"{case}: HTTP {status}: {payload[:500]!r}")
    return json.loads(payload)


# --- the cases ------------------------------------------------------------------------------


def seqs(messages: list[dict]) -> list[int]:
    return [m["__openclaw"]["seq"] for m in messages]


def check_list(message_limit: int, rows: int = PAGE):
    def check(body: dict, case: str) -> None:
        details = body["result"]["details"]
        if details["count"] != rows or len(details["sessions"]) != rows:
            raise BenchError(f"{case}: expected {rows} sessions, got {details['count']}")
        if message_limit:
            with_messages = sum(1 for s in details["sessions"] if s.get("messages"))
            if "messages" not in details["sessions"][0] or with_messages < rows // 2:
                raise BenchError(f"{case}: only {with_messages} sessions carry messages")
            if any(len(s["messages"]) > message_limit for s in details["sessions"]):
                raise BenchError(f"{case}: more than {message_limit} messages on a row")

    return check


def check_agents(body: dict, case: str) -> None:
    if not body.get("ok") or not body["result"]["details"].get("agents"):
        raise BenchError(f"{case}: no agents in {str(body)[:300]}")


def check_page(*, below: int | None):
    def check(body: dict, case: str) -> None:
        # REST history and the tool both say `messages` (REST's `items` went in issue 17).
        messages = body.get("messages") or body.get("result", {}).get("details", {}).get("messages")
        if messages is None or len(messages) != PAGE:
            raise BenchError(
                f"{case}: expected {PAGE} messages, got {len(messages or [])} "
                f"(truncated={body.get('truncated')}, bytes={body.get('bytes')})"
            )
        got = seqs(messages)
        if got != sorted(got):
            raise BenchError(f"{case}: messages are not oldest-first")
        if below is not None and got[-1] >= below:
            raise BenchError(f"{case}: newest seq {got[-1]} is not below {below}")

    return check


def build_cases(deep_key: str, last_seq: int, requester: str, list_rows: int) -> list[dict]:
    cursor = last_seq - DEPTH
    path = f"/api/v1/sessions/{quote(deep_key, safe=':')}/history/"
    invoke = "/tools/invoke"
    return [
        {
            "name": "sessions_list limit 200, messageLimit 0",
            "method": "POST",
            "path": invoke,
            "body": {
                "tool": "sessions_list",
                "args": {"limit": PAGE, "messageLimit": 0},
                "sessionKey": requester,
            },
            "check": check_list(0, list_rows),
        },
        {
            "name": "sessions_list limit 200, messageLimit 5",
            "method": "POST",
            "path": invoke,
            "body": {
                "tool": "sessions_list",
                "args": {"limit": PAGE, "messageLimit": 5},
                "sessionKey": requester,
            },
            "check": check_list(5, list_rows),
        },
        {
            "name": "agents_list",
            "method": "POST",
            "path": invoke,
            "body": {"tool": "agents_list", "args": {}},
            "check": check_agents,
        },
        {
            "name": "history REST limit 200, first page",
            "method": "GET",
            "path": f"{path}?limit={PAGE}",
            "check": check_page(below=None),
        },
        {
            "name": f"history REST limit 200, cursor {DEPTH:,} deep",
            "method": "GET",
            "path": f"{path}?limit={PAGE}&cursor={cursor}",
            "check": check_page(below=cursor),
        },
        {
            "name": f"sessions_history tool, includeTools, offset {DEPTH:,}",
            "method": "POST",
            "path": invoke,
            "body": {
                "tool": "sessions_history",
                "args": {
                    "sessionKey": deep_key,
                    "limit": PAGE,
                    "includeTools": True,
                    "offset": DEPTH,
                },
            },
            "check": check_page(below=cursor + 1),
        },
    ]


def run_case(client: Client, case: dict, *, requests: int, warmup: int) -> dict:
    body = case.get("body")
    sizes = []
    for _ in range(warmup):
        status, payload = client.request(case["method"], case["path"], body)
        case["check"](decode(status, payload, case["name"]), case["name"])
    timings = []
    started = time.perf_counter()
    for _ in range(requests):
        t = time.perf_counter()
        status, payload = client.request(case["method"], case["path"], body)
        timings.append((time.perf_counter() - t) * 1000)
        sizes.append(len(payload))
        # Checked outside the timed span: parsing is the client's cost, not the server's.
        case["check"](decode(status, payload, case["name"]), case["name"])
    wall = time.perf_counter() - started
    ordered = sorted(timings)
    return {
        "case": case["name"],
        "requests": requests,
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[max(0, int(round(0.95 * len(ordered))) - 1)], 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
        "min_ms": round(ordered[0], 2),
        "max_ms": round(ordered[-1], 2),
        "req_per_s": round(requests / wall, 1),
        "response_bytes": round(statistics.fmean(sizes)),
    }


def markdown(results: list[dict], backend: str) -> str:
    lines = [
        f"| {backend} | p50 ms | p95 ms | mean ms | req/s | bytes | load 1 min |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        load = "–".join(f"{x:.1f}" for x in r.get("load_1min", []))
        lines.append(
            f"| {r['case']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['mean_ms']:.1f} "
            f"| {r['req_per_s']:.0f} | {r['response_bytes']:,} | {load} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--only", help="run only cases whose name contains this text")
    parser.add_argument(
        "--app",
        default="openclaw_site.asgi:application",
        help="ASGI application for the server (to try a change without editing the app)",
    )
    parser.add_argument(
        "--server",
        choices=("uvicorn", "daphne"),
        default="uvicorn",
        help="uvicorn, as `manage.py serve` (default), or daphne (the rounds before issue 18)",
    )
    parser.add_argument(
        "--requester",
        default="agent:main:main",
        help="the session the operator acts as (sessionKey of the list cases)",
    )
    parser.add_argument("--label", default="", help="suffix for the result file name")
    parser.add_argument(
        "--visibility",
        choices=("self", "tree", "agent", "all"),
        default="all",
        help="tools.sessions.visibility for the run (the operator acts as --requester)",
    )
    args = parser.parse_args(argv)

    backend = backend_name()
    meta_path = RESULTS / f"meta-{backend}.json"
    if not meta_path.exists():
        print(f"{meta_path} is missing: run bench/generate.py against this database first.")
        return 2
    meta = json.loads(meta_path.read_text())
    RESULTS.mkdir(parents=True, exist_ok=True)
    port = args.port or free_port()

    token = create_operator_key()
    server = start_server(port, RESULTS / f"server-{backend}.log", args.app, args.server)
    try:
        client = Client(port, token)
        status, payload = client.request(
            "PATCH",
            "/api/v1/config/",
            {"tools.sessions.visibility": args.visibility, "tools.agentToAgent.enabled": True},
        )
        decode(status, payload, "PATCH /api/v1/config/")
        deep_key = meta["deep_session_key"]
        status, payload = client.request(
            "GET",
            f"/api/v1/sessions/{quote(deep_key, safe=':')}/history/?limit=1&includeTools=true",
        )
        last_seq = seqs(decode(status, payload, "last seq")["messages"])[-1]
        if last_seq <= DEPTH + PAGE:
            raise BenchError(f"{deep_key} has {last_seq} messages; need more than {DEPTH + PAGE}")

        # Under self and tree the list holds what the requester's scope holds (the same on
        # every request); elsewhere a full page.
        list_rows = PAGE
        if args.visibility in ("self", "tree"):
            status, payload = client.request(
                "POST",
                "/tools/invoke",
                {"tool": "sessions_list", "args": {"limit": PAGE}, "sessionKey": args.requester},
            )
            list_rows = decode(status, payload, "list rows")["result"]["details"]["count"]
        results = []
        for case in build_cases(deep_key, last_seq, args.requester, list_rows):
            if args.only and args.only not in case["name"]:
                continue
            load_before, uptime_before = os.getloadavg()[0], uptime()
            result = run_case(client, case, requests=args.requests, warmup=args.warmup)
            # The machine is shared: the 1-minute load average around each case goes with it.
            result["load_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            result["uptime"] = [uptime_before, uptime()]
            if case["name"].startswith("sessions_list"):
                result["rows"] = list_rows
            print(f"  {result['case']}: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms",
                  flush=True)  # fmt: skip
            results.append(result)
    finally:
        stop_server(server)

    table = markdown(results, backend + (f" ({args.label})" if args.label else ""))
    print()
    print(table)
    report = {
        "backend": backend,
        "measured_at": datetime.now(tz=UTC).isoformat(),
        "server": f"{args.server}, one process",
        "client": "http.client, one keep-alive connection, sequential requests",
        "requests": args.requests,
        "warmup": args.warmup,
        "reconnects": client.reconnects,
        "deep_session": {"key": deep_key, "last_seq": last_seq, "cursor": last_seq - DEPTH},
        "data": {
            k: meta.get(k)
            for k in (
                "profile",
                "sessions",
                "subagent_sessions",
                "messages",
                "deep_session_messages",
            )
        },
        "visibility": args.visibility,
        "requester": args.requester,
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
        "results": results,
    }
    report["app"] = args.app
    out = RESULTS / f"http-{backend}{'-' + args.label if args.label else ''}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)} (reconnects: {client.reconnects})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
