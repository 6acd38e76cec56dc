#!/usr/bin/env python
"""transcript.jsonl under the ASGI server: time to first byte and the server's peak memory.

    .venv/bin/python bench/export_bench.py [--messages 1000000]
        [--db sqlite:///var/bench/export.sqlite3] [--reuse]

Fills one session with --messages messages by bulk SQL (a scratch database: a sqlite:/// file is
deleted and recreated unless --reuse; a postgres:// database must exist and is flushed of this
bench's session only), then starts uvicorn on it exactly as `manage.py serve` does and downloads
`/api/v1/sessions/<key>/transcript.jsonl` with an operator key over real HTTP. Reports the time
to the first byte of the body, the whole download, and the uvicorn process's resident memory
before the request and at its peak during it (VmHWM, sampled from /proc). Writes
bench/results/export-<backend>.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlparse

ROOT = Path(__file__).resolve().parent.parent
KEY = "agent:main:main"  # the operator key acts as it by default
BATCH = 20_000


def setup_django(db_url: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("SECRET_KEY", "bench-export-secret-key-0123456789-abcdefghijklmnop")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()


def fill(count: int) -> int:
    """One session with `count` messages, inserted by executemany in batches. Returns its pk."""
    from django.core.management import call_command
    from django.db import connection, transaction

    from sessions_app import store
    from sessions_app.models import Agent, Message, Session, now_ms

    call_command("migrate", verbosity=0)
    Agent.objects.get_or_create(id="main", defaults={"name": "main"})
    Session.objects.filter(key=KEY).delete()
    session, _ = store.upsert_session(api_key=None, key=KEY, entry={})
    table = Message._meta.db_table
    columns = [
        "session_id", "seq", "role", "content", "provenance", "tool_call_id", "tool_name",
        "usage", "timestamp", "extra", "redact_needed", "created_at",
    ]  # fmt: skip
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"
    start_ms = now_ms() - count
    created = datetime.now(UTC)
    reply = json.dumps(
        [{"type": "text", "text": "A reply of a typical length, with a number in it: "}]
    )
    for first in range(1, count + 1, BATCH):
        rows = []
        for seq in range(first, min(first + BATCH, count + 1)):
            user = seq % 2 == 1
            content = json.dumps(f"question {seq}: what is the status?") if user else reply
            role = "user" if user else "assistant"
            rows.append(
                (session.pk, seq, role, content, None, "", "", None, start_ms + seq, "{}", False,
                 created)
            )  # fmt: skip
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, rows)
    Session.objects.filter(pk=session.pk).update(last_seq=count)
    return session.pk


def operator_key() -> str:
    from sessions_app.models import ApiKey

    _, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="export-bench")
    return token


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def start_uvicorn(port: int) -> subprocess.Popen:
    from sessions_app.management.commands.serve import server_command

    os.environ["ACCESS_LOG"] = "0"  # read by server_command()
    process = subprocess.Popen(
        server_command("uvicorn", "127.0.0.1", port), cwd=ROOT, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120  # a loaded 2-CPU machine takes a while to import
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"uvicorn exited: {process.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("uvicorn did not start")


def download(port: int, token: str) -> dict:
    path = f"/api/v1/sessions/{quote(KEY, safe='')}/transcript.jsonl"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    assert response.status == 200, (response.status, response.read()[:300])
    first = response.read1(65536)
    first_byte = time.perf_counter() - started
    size, lines = len(first), first.count(b"\n")
    while chunk := response.read1(1 << 20):
        size += len(chunk)
        lines += chunk.count(b"\n")
    total = time.perf_counter() - started
    conn.close()
    return {"first_byte_ms": first_byte * 1000, "total_s": total, "bytes": size, "lines": lines}


def first_byte_ms(port: int, token: str) -> float:
    """One request read up to its first body bytes, then dropped (the server stops reading)."""
    path = f"/api/v1/sessions/{quote(KEY, safe='')}/transcript.jsonl"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    response.read1(65536)
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    return elapsed


def warm(port: int, token: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/api/v1/agents/", headers={"Authorization": f"Bearer {token}"})
    conn.getresponse().read()
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--db", default=f"sqlite:///{ROOT / 'var/bench/export.sqlite3'}")
    parser.add_argument("--reuse", action="store_true", help="keep the database as it is")
    parser.add_argument(
        "--probes", type=int, default=9, help="first-byte-only requests after the download"
    )
    args = parser.parse_args()
    backend = urlparse(args.db).scheme.replace("postgresql", "postgres")
    if backend == "sqlite" and not args.reuse:
        path = Path(urlparse(args.db).path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    setup_django(args.db)
    filled = time.perf_counter()
    if not args.reuse:
        fill(args.messages)
    filled = time.perf_counter() - filled
    token = operator_key()
    from django.db import connections

    connections.close_all()
    port = free_port()
    server = start_uvicorn(port)
    try:
        warm(port, token)
        before = rss_kib(server.pid)
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(server.pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        result = download(port, token)
        done.set()
        sampler.join()
        probes = []
        for _ in range(args.probes):
            probes.append(first_byte_ms(port, token))
            time.sleep(0.5)
        result["first_byte_probes_ms"] = [round(p, 1) for p in probes]
        if probes:
            result["first_byte_median_ms"] = round(sorted(probes)[len(probes) // 2], 1)
        result.update(
            messages=args.messages,
            backend=backend,
            fill_s=round(filled, 1),
            rss_before_mib=round(before / 1024, 1),
            rss_peak_mib=round(max(peak[0], rss_kib(server.pid, "VmHWM")) / 1024, 1),
            machine=platform.machine(),
            cpus=os.cpu_count(),
            when=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=15)
    result["asgi_sync_iterator_warning"] = b"synchronous iterators" in stderr
    assert result["lines"] == args.messages + 1, result
    out = ROOT / "bench/results" / f"export-{backend}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(
        f"| {backend} | {args.messages:,} | {result['first_byte_ms']:.1f} ms "
        f"(median of probes {result.get('first_byte_median_ms')} ms) | "
        f"{result['total_s']:.1f} s | {result['bytes'] / 2**20:.0f} MiB | "
        f"{result['rss_before_mib']} → {result['rss_peak_mib']} MiB |"
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
