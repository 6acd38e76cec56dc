#!/usr/bin/env python
"""The fixed cost of a request (issue 26 item 1): an empty tool through the whole stack.

    .venv/bin/python bench/fixed_cost.py [--calls 2000] [--warmup 200] [--backend sqlite|pg|both]

Starts this tree's ASGI application under uvicorn (as `manage.py serve` does: the door, the API
handler, `/tools/invoke`, the key check, the requester, the registry's thread step, the
envelope) in a process of its own, with one tool more in its registry, `bench_noop`, which
returns `{}`: what is left is what every call pays before and after its tool. Then, from this
process, on one HTTP keep-alive connection, `--calls` timed calls of each case after `--warmup`
untimed ones:

  noop         POST /tools/invoke {"tool": "bench_noop"}        (the fixed cost)
  agents_list  POST /tools/invoke {"tool": "agents_list"}       (the cheapest real tool)
  unknown_key  POST /tools/invoke with a key that does not exist (the 401)
  send0        POST /tools/invoke sessions_send timeoutSeconds 0 to agent:echo:main (accepted)

Prints p50/p95 in ms and the server's CPU per call (its process's user+system time over the
timed calls: steadier than latency on a shared machine), and the load average around each case.
With --instructions N: instructions per call of noop and send0 through the ASGI application in
one process (callgrind over every thread, N calls less 0 calls; no sockets), which the machine's
load does not move.
Backends: SQLite in a temporary directory; PostgreSQL `h_fixedcost`-style database from
--pg-url with Redis from --redis-url (both default to this helper's own; the database is
migrated, not dropped; a bench key is created and revoked).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
NOOP = "bench_noop"


def setup() -> str:
    """Django with `bench_noop` in the registry, agents main and echo (scripted), the session
    agent:echo:main, visibility all with agent-to-agent on (so a send is accepted), and a new
    operator key: its plaintext."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()
    from sessions_app.access.identity import create_api_key
    from sessions_app.manage.agents import upsert_agent
    from sessions_app.manage.config import update_config
    from sessions_app.store import upsert_session
    from sessions_app.tools import TOOLS
    from sessions_app.tools.declaration import Declaration, Tool

    def bench_noop(*, requester, args) -> dict:
        return {}

    declaration = Declaration(name=NOOP, description="", params=(), result={})
    TOOLS._tools[NOOP] = Tool(declaration, bench_noop)
    upsert_agent(api_key=None, agent_id="main", data={})
    upsert_agent(api_key=None, agent_id="echo", data={"backend": {"type": "scripted"}})
    upsert_session(api_key=None, key="agent:echo:main", entry={})
    update_config(
        api_key=None,
        changes={"tools.sessions.visibility": "all", "tools.agentToAgent.enabled": True},
    )
    _, token = create_api_key(scope="operator", name="bench fixed_cost")
    return token


def serve(port: int, key_file: str) -> None:
    """The measured process: this tree's application plus `bench_noop`, under uvicorn."""
    token = setup()
    import logging

    import uvicorn

    # The unknown_key case answers 401 thousands of times: Django logs each as a warning.
    logging.getLogger("django.request").setLevel(logging.ERROR)

    from openclaw_site.asgi import application

    Path(key_file).write_text(token)
    uvicorn.run(
        application,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        access_log=False,
    )


SEND = {
    "tool": "sessions_send",
    "args": {"sessionKey": "agent:echo:main", "message": "ping", "timeoutSeconds": 0},
}


def in_process(case: str, calls: int) -> None:
    """`calls` requests of `case` through the ASGI application in this process (no server, no
    socket: what the application itself executes), after five unmeasured ones."""
    import asyncio

    token = setup()
    from openclaw_site.asgi import application

    body = json.dumps({"tool": NOOP} if case == "noop" else SEND).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/tools/invoke", "raw_path": b"/tools/invoke",
        "root_path": "", "query_string": b"", "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 9141),
        "headers": [
            (b"host", b"127.0.0.1:9141"), (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }  # fmt: skip

    async def one() -> None:
        sent: list = []
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        await application(dict(scope), receive, send)
        assert sent[0]["status"] == 200, sent
        details = json.loads(sent[1]["body"])["result"]["details"]
        assert details.get("status") in (None, "accepted"), details

    async def run() -> None:
        for _ in range(5 + calls):
            await one()

    asyncio.run(run())


def instructions(env: dict, case: str, calls: int) -> int:
    """Instructions per call of `case` in process (callgrind, every thread): the runs with 0
    and with `calls` calls, their difference over `calls`."""
    totals = []
    for n in (0, calls):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cg.out")
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 PYTHON, __file__, "--in-process", case, "--calls", str(n)],
                cwd=ROOT, env=env, capture_output=True, text=True,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
            totals.append(
                sum(
                    int(line.split()[1])
                    for line in Path(out).read_text().splitlines()
                    if line.startswith("summary:")
                )
            )
    return (totals[1] - totals[0]) // calls


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_case(port: int, pid: int, token: str, body: dict, calls: int, warmup: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    payload = json.dumps(body).encode()
    expect = 401 if token.startswith("ocs_nokey") else 200

    def call() -> None:
        conn.request("POST", "/tools/invoke", payload, headers)
        response = conn.getresponse()
        data = response.read()
        if response.status != expect:
            raise SystemExit(f"{body}: HTTP {response.status} {data[:300]!r}")

    for _ in range(warmup):
        call()
    before_load, cpu0 = load(), cpu_seconds(pid)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    cpu = (cpu_seconds(pid) - cpu0) / calls * 1000
    conn.close()
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
        "server_cpu_ms": round(cpu, 3),
        "load": f"{before_load} → {load()}",
    }


CASES = {
    "noop": ({"tool": NOOP}, None),
    "agents_list": ({"tool": "agents_list"}, None),
    "unknown_key": ({"tool": NOOP}, "ocs_nokey000000_" + "x" * 43),
    "send0": (SEND, None),
}


def run_backend(name: str, env: dict, calls: int, warmup: int) -> dict:
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
    )
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        key_file = os.path.join(tmp, "key")
        server = subprocess.Popen(
            [PYTHON, __file__, "--serve", str(port), "--key-file", key_file], cwd=ROOT, env=env
        )
        try:
            deadline = time.monotonic() + 60
            while not (os.path.exists(key_file) and _accepts(port)):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the bench server did not start")
                time.sleep(0.1)
            token = Path(key_file).read_text()
            results = {}
            for case, (body, other_token) in CASES.items():
                results[case] = time_case(
                    port, server.pid, other_token or token, body, calls, warmup
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    subprocess.run(
        [PYTHON, "manage.py", "shell", "-c",
         "from sessions_app.models import ApiKey\n"
         "for k in ApiKey.objects.filter(name='bench fixed_cost', revoked_at=None): k.revoke()"],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    return results


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--key-file", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "pg", "both"), default="both")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/h_fixedcost")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--in-process", help=argparse.SUPPRESS)
    parser.add_argument(
        "--instructions", type=int, metavar="CALLS", default=0,
        help="also count instructions per call in process (valgrind callgrind) over CALLS calls",
    )  # fmt: skip
    a = parser.parse_args()
    if a.serve:
        serve(a.serve, a.key_file)
        return
    if a.in_process:
        in_process(a.in_process, a.calls)
        return
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # The 401 case fails on purpose, from one address: not a brute force (access/source_limit).
    base.update(DEBUG="0", SECRET_KEY="bench-" + "k" * 50, PYTHONUNBUFFERED="1")
    base["OPENCLAW_SOURCE_AUTH_FAILURES"] = "0"
    out: dict = {"machine": f"{os.cpu_count()} cores, {os.uname().release}", "calls": a.calls}
    with tempfile.TemporaryDirectory() as var:
        if a.backend in ("sqlite", "both"):
            env = {**base, "OPENCLAW_VAR_DIR": var}
            out["sqlite"] = run_backend("sqlite", env, a.calls, a.warmup)
            if a.instructions:
                out["sqlite instructions/call"] = {
                    case: instructions(env, case, a.instructions) for case in ("noop", "send")
                }
        if a.backend in ("pg", "both"):
            env = {
                **base,
                "DATABASE_URL": a.pg_url,
                "REDIS_URL": a.redis_url,
                "OPENCLAW_VAR_DIR": os.path.join(var, "pg"),
            }
            out["postgresql+redis"] = run_backend("pg", env, a.calls, a.warmup)
            if a.instructions:
                out["postgresql+redis instructions/call"] = {
                    case: instructions(env, case, a.instructions) for case in ("noop", "send")
                }
    print("| backend | case | p50 ms | p95 ms | server CPU ms/call | load (1/5/15) |")
    print("|---|---|---:|---:|---:|---|")
    for backend, cases in out.items():
        if not isinstance(cases, dict) or "instructions" in backend:
            continue
        for case, r in cases.items():
            print(
                f"| {backend} | {case} | {r['p50_ms']} | {r['p95_ms']} | {r['server_cpu_ms']} "
                f"| {r['load']} |"
            )
    for backend, cases in out.items():
        if "instructions" in backend:
            print(f"{backend}: " + ", ".join(f"{c} {n:,}" for c, n in cases.items()))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
