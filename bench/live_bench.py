#!/usr/bin/env python
"""Live updates under load: N WebSocket subscribers on one transcript, a separate process
appending messages at a fixed rate, latency from append to receipt.

    .venv/bin/python bench/live_bench.py [--subscribers 500] [--rates 100,200] [--seconds 20]
                                         [--only pg-redis|sqlite]

For each configuration it builds a database of its own (PostgreSQL `livebench` + Redis db 9, or
SQLite under var/livebench: never the dev or `bench` data), creates agent `main`, session
`agent:main:main` and an operator key, and starts `manage.py serve --no-worker` (uvicorn, access
log off). The subscribers (one process on uvloop, a minimal hand-parsing client) each send
`sessions.messages.subscribe`. Then a writer process, standing in for a worker, appends one
message per tick through store.append_to_session (what runs use), each carrying its wall-clock
send time; the subscribers note when each `session.message` arrives. Same machine, same clock.

Per rate it reports: messages appended, frames expected (messages × subscribers) and received,
lost, duplicated and out-of-order ones, latency p50/p95/p99/max, and the CPU seconds the server,
the subscribers and the writer used (from /proc). Writes bench/results/live-<label>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import uvloop

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PY = sys.executable

# LIVE_BENCH_DB / LIVE_BENCH_REDIS_DB name others (several people on one machine).
PG_DB = os.environ.get("LIVE_BENCH_DB", "livebench")
REDIS_DB = str(int(os.environ.get("LIVE_BENCH_REDIS_DB", "9")))
CONFIGS = {
    "pg-redis": {
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{PG_DB}",
        "REDIS_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
    },
    "sqlite": {"OPENCLAW_VAR_DIR": str(ROOT / "var" / "livebench")},
}

SETUP = """
from sessions_app.models import Agent, ApiKey
from sessions_app import store
Agent.objects.update_or_create(pk="main", defaults={"name": "Main"})
store.upsert_session(api_key=None, entry={}, key="agent:main:main")
_, token = ApiKey.generate(scope=ApiKey.OPERATOR)
print(token)
"""

WRITER = """
import sys, time
from sessions_app import store
from sessions_app.models import Session
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
session = Session.objects.get(key="agent:main:main")
count = int(rate * seconds)
start = time.monotonic()
for i in range(count):
    target = start + i / rate
    pause = target - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    message = store.read_message(0, {"role": "assistant", "content": f"t={time.time():.6f}"})
    store.append_to_session(session, [message])
print(count, time.monotonic() - start)
"""


def env_for(label: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(CONFIGS[label])
    env["ACCESS_LOG"] = "0"
    env["LOG_LEVEL"] = "ERROR"
    return env


def manage(env, *args, stdin=None) -> str:
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, input=stdin, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return done.stdout


def fresh_database(label: str, env: dict) -> None:
    if label == "pg-redis":
        for cmd in (["dropdb", "--if-exists", "--force", PG_DB], ["createdb", PG_DB]):
            subprocess.run([*cmd, "-h", "127.0.0.1", "-U", "postgres"], check=True)
        subprocess.run(["redis-cli", "-n", REDIS_DB, "flushdb"], check=True, capture_output=True)
    else:
        var = Path(CONFIGS[label]["OPENCLAW_VAR_DIR"])
        for name in ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm"):
            with contextlib.suppress(FileNotFoundError):
                (var / name).unlink()
        var.mkdir(parents=True, exist_ok=True)
    manage(env, "migrate", "--noinput")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pids) -> float:
    """utime + stime of these processes and their children (from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        for path in [Path(f"/proc/{pid}")] + list(Path(f"/proc/{pid}/task").glob("*")):
            with contextlib.suppress(OSError):
                fields = (path / "stat").read_text().rsplit(")", 1)[1].split()
                if path.name == str(pid):
                    total += (int(fields[11]) + int(fields[12])) / tick
                break
    return total


def group_pids(pgid: int) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(proc.name)) == pgid:
                    pids.append(int(proc.name))
    return pids


class Subscriber(asyncio.Protocol):
    """A minimal WebSocket client: one subscription, frames parsed by hand.

    The websockets library costs ~30 µs a frame on the client side, which on a 2-core machine
    that also runs the server would measure the client, not the server. This costs a few µs.
    """

    def __init__(self, port, token, ready, received, errors):
        self.port, self.token = port, token
        self.ready, self.received, self.errors = ready, received, errors
        self.buffer = bytearray()
        self.upgraded = self.subscribed = False
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        key = base64.b64encode(os.urandom(16)).decode()
        transport.write(
            (
                f"GET /ws/ HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {self.token}\r\n\r\n"
            ).encode()
        )

    def send_text(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        header = bytes([0x81, 0x80 | len(data)]) if len(data) < 126 else None
        assert header is not None, "short frames only"
        self.transport.write(header + mask + masked)

    def data_received(self, data):
        self.buffer += data
        if not self.upgraded:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            if not self.buffer.startswith(b"HTTP/1.1 101"):
                self.errors.append(bytes(self.buffer[:80]).decode(errors="replace"))
                self.transport.close()
                return
            del self.buffer[: end + 4]
            self.upgraded = True
            request = {"type": "req", "id": "s", "method": "sessions.messages.subscribe"}
            request["params"] = {"key": "agent:main:main"}
            self.send_text(json.dumps(request))
        buffer = self.buffer
        start = 0
        while len(buffer) - start >= 2:
            length = buffer[start + 1] & 0x7F
            head = 2
            if length == 126:
                if len(buffer) - start < 4:
                    break
                length, head = int.from_bytes(buffer[start + 2 : start + 4], "big"), 4
            elif length == 127:
                if len(buffer) - start < 10:
                    break
                length, head = int.from_bytes(buffer[start + 2 : start + 10], "big"), 10
            if len(buffer) - start < head + length:
                break
            opcode = buffer[start] & 0x0F
            payload = bytes(buffer[start + head : start + head + length])
            start += head + length
            if opcode == 1:
                self.on_text(payload)
            elif opcode == 8:
                self.transport.close()
        del buffer[:start]

    def on_text(self, text: bytes) -> None:
        now = time.time()
        if not self.subscribed:
            if b'"ok":true' in text:
                self.subscribed = True
                self.ready()
            else:
                self.errors.append(text[:200].decode())
            return
        seq_at = text.index(b'"messageSeq":') + 13
        seq = int(text[seq_at : text.index(b",", seq_at)])
        t_at = text.index(b"t=") + 2
        self.received.append((seq, now - float(text[t_at : text.index(b'"', t_at)])))


async def run_rate(port, token, env, subscribers: int, rate: float, seconds: float, server_pids):
    received = [[] for _ in range(subscribers)]
    errors: list[str] = []
    ready_count = 0

    def ready():
        nonlocal ready_count
        ready_count += 1

    loop = asyncio.get_running_loop()
    transports = []
    for i in range(subscribers):
        transport, _ = await loop.create_connection(
            lambda i=i: Subscriber(port, token, ready, received[i], errors), "127.0.0.1", port
        )
        transports.append(transport)
        if i % 50 == 49:
            await asyncio.sleep(0.2)
    while ready_count + len(errors) < subscribers:
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    base = cpu_seconds(server_pids)
    me = cpu_seconds([os.getpid()])
    writer = await asyncio.create_subprocess_exec(
        PY, "manage.py", "shell", "-c", WRITER.replace("sys.argv[1]", str(rate)).replace(
            "sys.argv[2]", str(seconds)
        ),
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await writer.communicate()
    if writer.returncode:
        raise RuntimeError(err.decode()[-2000:])
    appended, took = out.decode().strip().splitlines()[-1].split()
    appended = int(appended)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(len(r) < appended for r in received):
        await asyncio.sleep(0.2)
    server_cpu = cpu_seconds(server_pids) - base
    client_cpu = cpu_seconds([os.getpid()]) - me
    for transport in transports:
        transport.close()
    latencies = sorted(lat for r in received for _, lat in r)
    lost = dup = disorder = 0
    for r in received:
        seqs = [s for s, _ in r]
        dup += len(seqs) - len(set(seqs))
        disorder += sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b <= a)
        lost += appended - len(set(seqs))

    def pct(p):
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 1)

    return {
        "subscribers": subscribers,
        "rate": rate,
        "appended": appended,
        "writer_seconds": round(float(took), 2),
        "expected": appended * subscribers,
        "received": len(latencies),
        "lost": lost,
        "duplicates": dup,
        "out_of_order": disorder,
        "connect_errors": len(errors),
        "p50_ms": pct(0.50) if latencies else None,
        "p95_ms": pct(0.95) if latencies else None,
        "p99_ms": pct(0.99) if latencies else None,
        "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
        # The messages received late: (seq, slowest ms), for the ten slowest.
        "slowest": sorted(
            {
                seq: round(lat * 1000, 1)
                for r in received
                for seq, lat in sorted(r, key=lambda x: x[1])
            }.items(),
            key=lambda x: -x[1],
        )[:10],
        "server_cpu_s": round(server_cpu, 1),
        "subscribers_cpu_s": round(client_cpu, 1),
        "errors": errors[:3],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--rates", default="100")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--only", choices=sorted(CONFIGS))
    parser.add_argument("--web-workers", type=int, default=1)
    parser.add_argument("--label", default="", help="suffix for the result file name")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for label in [args.only] if args.only else ["pg-redis", "sqlite"]:
        env = env_for(label)
        fresh_database(label, env)
        token = manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]
        port = free_port()
        server = subprocess.Popen(
            [PY, "manage.py", "serve", "--no-worker", "--port", str(port)]
            + ["--web-workers", str(args.web_workers)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(RESULTS / f"live-{label}-server.log", "w"),  # noqa: SIM115
            start_new_session=True,
        )
        try:
            for _ in range(300):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.1)
            rows = []
            for rate in [float(r) for r in args.rates.split(",")]:
                server_pids = group_pids(server.pid)
                uptime_before = uptime()
                # uvloop, as the server uses: the subscribers' process shares the 2 cores with
                # the server, and the default loop costs it about a third more CPU per frame.
                row = uvloop.run(
                    run_rate(
                        port,
                        token,
                        env,
                        args.subscribers,
                        rate,
                        args.seconds,
                        server_pids,
                    )
                )
                # The machine may be shared: the load goes with every figure.
                row["uptime"] = [uptime_before, uptime()]
                rows.append(row)
                print(f"{label}: {json.dumps(row)}", flush=True)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        result = {
            "label": label,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "seconds": args.seconds,
            "web_workers": args.web_workers,
            "rows": rows,
        }
        name = f"live-{label}" + (f"-{args.label}" if args.label else "")
        (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))
        print(f"\n### {label}\n")
        print(
            "| subscribers | msgs/s | appended | frames expected | received | lost | dup | "
            "out of order | p50 ms | p95 ms | p99 ms | max ms | server CPU s | clients CPU s |"
        )
        print("|---" * 14 + "|")
        for r in rows:
            print(
                f"| {r['subscribers']} | {r['rate']:g} | {r['appended']} | {r['expected']} | "
                f"{r['received']} | {r['lost']} | {r['duplicates']} | {r['out_of_order']} | "
                f"{r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['max_ms']} | "
                f"{r['server_cpu_s']} | {r['subscribers_cpu_s']} |"
            )


if __name__ == "__main__":
    main()
