#!/usr/bin/env python
"""A retention sweep of many old sessions, and how long it makes a writer wait.

    .venv/bin/python bench/retention_bench.py [--sessions 50000] [--messages 4]
        [--db sqlite:///var/bench/retention.sqlite3] [--reuse] [--cold-only | --archive-only]

Fills a scratch database (a sqlite:/// file is deleted and recreated unless --reuse; a
postgres:// database must exist and is flushed) with --sessions sessions idle for 40 days, each
with --messages messages, by bulk SQL. Then, while a writer thread appends one message to a hot
session every 10 ms (store.append_to_session: the ingest path's transaction) and records each
append's latency, the sweep runs with pruneAfter 30d and cold storage after 30 days: every old
session is archived (batches of 500) and its transcript moved to a compressed file (one
transaction per transcript). Reports the sweep's time and the writer's p50 / p99 / max append
latency during it, against the same writer alone first. Writes bench/results/retention-<backend>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
BATCH = 5000
DAY_MS = 86_400_000


def setup_django(db_url: str, cold_dir: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ["OPENCLAW_COLD_DIR"] = cold_dir
    os.environ.setdefault("SECRET_KEY", "bench-retention-secret-key-0123456789-abcdefghijklmn")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()


def fill(sessions: int, messages: int) -> None:
    from django.core.management import call_command
    from django.db import connection, transaction

    from sessions_app.models import Agent, Message, Session, now_ms

    call_command("migrate", verbosity=0)
    Agent.objects.get_or_create(id="main", defaults={"name": "main"})
    Message.objects.all().delete()
    Session.objects.all().delete()
    old = now_ms() - 40 * DAY_MS
    created = datetime.now(UTC) - timedelta(days=41)
    session_table, message_table = Session._meta.db_table, Message._meta.db_table
    for start in range(0, sessions, BATCH):
        rows = [
            Session(
                key=f"agent:main:discord:dm:u{n}",
                agent_id="main",
                kind="other",
                row_channel="discord",
                last_seq=messages,
                updated_at=old + n,
                created_at=created,
            )
            for n in range(start, min(sessions, start + BATCH))
        ]
        with transaction.atomic():
            Session.objects.bulk_create(rows, batch_size=1000)
    pks = list(Session.objects.values_list("pk", flat=True))
    sql = (
        f"INSERT INTO {message_table} (session_id, seq, role, content, provenance, tool_call_id,"
        " tool_name, usage, timestamp, extra, redact_needed, created_at)"
        " VALUES (%s, %s, %s, %s, NULL, '', '', NULL, %s, %s, %s, %s)"
    )
    for start in range(0, len(pks), BATCH // max(1, messages)):
        chunk = pks[start : start + BATCH // max(1, messages)]
        values = [
            (
                pk,
                seq,
                "user" if seq % 2 else "assistant",
                json.dumps(f"message {seq} of session {pk}: some words to index"),
                old,
                "{}",
                False,
                created,
            )
            for pk in chunk
            for seq in range(1, messages + 1)
        ]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, values)
    print(f"filled: {len(pks)} sessions x {messages} messages", file=sys.stderr)
    del session_table


class Writer(threading.Thread):
    """Appends one message every 10 ms to a hot session; records each append's latency."""

    def __init__(self):
        super().__init__(daemon=True)
        self.latencies: list[float] = []
        self.when: list[float] = []  # each append's start (perf_counter)
        self.stop = threading.Event()

    def run(self):
        from django.db import connection

        from sessions_app import store

        session, _ = store.upsert_session(api_key=None, key="agent:main:hot", entry={})
        while not self.stop.is_set():
            started = time.perf_counter()
            store.append_to_session(
                session, store.read_messages([{"role": "user", "content": "still here"}])
            )
            self.latencies.append((time.perf_counter() - started) * 1000)
            self.when.append(started)
            time.sleep(0.01)
        connection.close()


def summary(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {
        "appends": len(ordered),
        "p50Ms": round(statistics.median(ordered), 2),
        "p99Ms": round(ordered[int(len(ordered) * 0.99) - 1], 2),
        "maxMs": round(ordered[-1], 2),
    }


def measure(policy_kwargs: dict) -> dict:
    from sessions_app.manage import retention

    alone = Writer()
    alone.start()
    time.sleep(3)
    alone.stop.set()
    alone.join()
    writer = Writer()
    writer.start()
    time.sleep(0.5)
    started = time.perf_counter()
    policy = retention.Policy(**policy_kwargs)
    planned = retention.plan(policy)
    plan_seconds = time.perf_counter() - started
    del planned
    report = retention.sweep(policy)
    seconds = time.perf_counter() - started
    slowest = sorted(zip(writer.latencies, writer.when, strict=True), reverse=True)[:5]
    time.sleep(0.2)
    writer.stop.set()
    writer.join()
    return {
        "sweepSeconds": round(seconds, 1),
        "planSeconds": round(plan_seconds, 2),
        # the slowest appends: (latency ms, seconds after the sweep started)
        "slowestAppends": [(round(ms, 1), round(at - started, 2)) for ms, at in slowest],
        "report": report,
        "writerAlone": summary(alone.latencies),
        "writerDuringSweep": summary(writer.latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=50_000)
    parser.add_argument("--messages", type=int, default=4)
    parser.add_argument("--db", default=f"sqlite:///{ROOT / 'var/bench/retention.sqlite3'}")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--archive-only", action="store_true")
    parser.add_argument("--cold-only", action="store_true")
    args = parser.parse_args()
    backend = "postgresql" if args.db.startswith("postgres") else "sqlite"
    if backend == "sqlite" and not args.reuse:
        path = Path(urlparse(args.db).path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    cold_dir = tempfile.mkdtemp(prefix="retention-bench-cold-")
    setup_django(args.db, cold_dir)
    if not args.reuse:
        fill(args.sessions, args.messages)
    policy = {
        "prune_after": None if args.cold_only else timedelta(days=30),
        "max_entries": 0,
        "cold_enabled": not args.archive_only,
        "cold_after": timedelta(days=30),
    }
    result = {
        "backend": backend,
        "sessions": args.sessions,
        "messagesPerSession": args.messages,
        "python": platform.python_version(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        **measure(policy),
    }
    out = ROOT / "bench" / "results" / f"retention-{backend}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
