#!/usr/bin/env python
"""Server time and page size of the transcript browser's pages.

    .venv/bin/python bench/ui_bench.py [--requests 50] [--warmup 5]
        [--list-db postgres://postgres@127.0.0.1:5432/bench]
        [--transcript-db postgres://postgres@127.0.0.1:5432/uibench] [--messages 10000]
        [--label NAME]

Two phases, each in its own process (the database is chosen at Django setup):

- list: the session list (`/`) and its filters, search, the second page, and the first page of
  the deepest transcript, against the generated bench data (bench/generate.py: 100,000 sessions,
  5M messages). Read-only: the connection is set to `default_transaction_read_only`, so the
  bench database cannot be changed by this script. Search cases run only when migration 0008's
  indexes exist there (they are skipped otherwise: without them a search reads every message).
- transcript: a transcript of --messages messages (text, tool calls, tool results, thinking,
  every tenth message long) in a scratch database that is DROPPED AND RECREATED every run
  (`uibench` on PostgreSQL; a sqlite:/// URL works too), then its first page, an older page and
  a deep link.

Server time is the view alone, called in-process with a RequestFactory request as a logged-in
superuser: the ORM queries, the template rendering and the response body; no HTTP, no session
or auth middleware (those add the session and user lookups, ~1 ms). A viewer's permission check
adds two small queries. Prints a Markdown table; writes bench/results/ui-<backend>.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
DEFAULT_LIST_DB = "postgres://postgres@127.0.0.1:5432/bench"
DEFAULT_TRANSCRIPT_DB = "postgres://postgres@127.0.0.1:5432/uibench"
TRANSCRIPT_KEY = "agent:main:webchat:ui-bench"


# --- in the phase process -------------------------------------------------------------------


def setup_django():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()


def bench_user():
    from django.contrib.auth.models import User

    # Never saved: the bench database gets no user row. A superuser needs no permission query.
    return User(username="bench", is_superuser=True, is_active=True, is_staff=True)


def measure(path: str, *, requests: int, warmup: int) -> dict:
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext
    from django.urls import resolve

    factory = RequestFactory()
    match = resolve(path.split("?")[0])
    user = bench_user()

    def once():
        request = factory.get(path)
        request.user = user
        started = time.perf_counter()
        response = match.func(request, *match.args, **match.kwargs)
        body = response.content
        return time.perf_counter() - started, response.status_code, body

    for _ in range(warmup):
        once()
    with CaptureQueriesContext(connection) as captured:
        _, status, body = once()
    if status != 200:
        raise RuntimeError(f"{path}: HTTP {status}: {body[:300]!r}")
    times = sorted(once()[0] * 1000 for _ in range(requests))
    return {
        "path": path,
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 2),
        "min_ms": round(times[0], 2),
        "bytes": len(body),
        "gzip_bytes": len(gzip.compress(body, 6)),
        "queries": len(captured.captured_queries),
        "rows": body.count(b'<li class="srow'),
        "messages": body.count(b'<article class="msg'),
    }


def read_only():
    from django.db import connection

    connection.ensure_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = on")


def has_search_indexes() -> bool:
    from django.db import connection

    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname IN "
            "('session_text_search', 'message_text_search')"
        )
        return cursor.fetchone()[0] == 2


def phase_list(args) -> dict:
    setup_django()
    read_only()
    from sessions_app.models import Session

    cases = [
        ("list: first page", "/"),
        ("list: kind=group, channel=discord", "/?kind=group&channel=discord"),
        ("list: has errors", "/?errors=1"),
        ("list: active in last 60 min", "/?active=60"),
        ("list: archived", "/?archived=true"),
        ("list: agent=research, kind=cron", "/?agent=research&kind=cron"),
    ]
    results = []
    for name, path in cases:
        results.append({"case": name, **measure(path, requests=args.requests, warmup=args.warmup)})
    # The second page: the cursor of the first page's last row.
    last = Session.objects.active().exclude(key__in=["global", "unknown"]).by_activity()
    row = last.values_list("updated_at", "id")[49]
    results.append(
        {
            "case": "list: second page (keyset)",
            **measure(f"/?after={row[0]}.{row[1]}", requests=args.requests, warmup=args.warmup),
        }
    )
    if has_search_indexes():
        searches = (
            ("search: a key part", "q=telegram"),
            ("search: a word in many messages", "q=rollback"),
            ("search: two words in many messages", "q=deploy+logs"),
            ("search: no match", "q=zzqx"),
        )
        for name, query in searches:
            results.append(
                {"case": name, **measure(f"/?{query}", requests=args.requests, warmup=args.warmup)}
            )
    else:
        results.append({"case": "search", "skipped": "migration 0008 indexes not built here"})
    deep = Session.objects.order_by("-last_seq").values_list("key", "last_seq").first()
    if deep:
        results.append(
            {
                "case": f"transcript: deepest bench session ({deep[1]:,} messages), first page",
                **measure(f"/sessions/{deep[0]}/", requests=args.requests, warmup=args.warmup),
            }
        )
    return {"sessions": Session.objects.count(), "cases": results}


def generate_transcript(count: int) -> None:
    from sessions_app import store
    from sessions_app.manage.agents import upsert_agent

    upsert_agent(api_key=None, agent_id="main", data={"name": "Main"})
    session, _ = store.upsert_session(
        api_key=None,
        key=TRANSCRIPT_KEY,
        entry={"displayName": "UI bench", "lastChannel": "webchat"},
    )
    words = [
        "deploy",
        "logs",
        "review",
        "cache",
        "worker",
        "queue",
        "report",
        "session",
        "status",
        "retry",
        "thread",
    ]
    batch = []
    for i in range(1, count + 1):
        text = " ".join(words[(i + j) % len(words)] for j in range(12 if i % 10 else 120)) + "."
        kind = i % 5
        if kind == 1:
            message = {"role": "user", "content": text}
        elif kind == 2:
            message = {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Check first. " + text},
                    {
                        "type": "toolCall",
                        "id": f"call_{i}",
                        "name": "exec",
                        "arguments": {
                            "command": f"grep -c {words[i % 11]} /var/log/app.log",
                            "timeout": 30,
                        },
                    },
                ],
            }
        elif kind == 3:
            message = {
                "role": "toolResult",
                "toolCallId": f"call_{i - 1}",
                "toolName": "exec",
                "content": [{"type": "text", "text": f"{i}\n" + text}],
            }
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        batch.append(message)
        if len(batch) == 500 or i == count:
            store.append_to_session(session, store.read_messages(batch))
            batch = []


def phase_transcript(args) -> dict:
    setup_django()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    generate_transcript(args.messages)
    from sessions_app.models import Session

    session = Session.objects.get(key=TRANSCRIPT_KEY)
    base = f"/sessions/{TRANSCRIPT_KEY}/"
    cases = [
        (f"transcript: first page of {session.last_seq:,} messages", base),
        ("transcript: older page (fragment)", f"{base}messages/?before={session.last_seq // 2}"),
        ("transcript: deep link ?at=100", f"{base}?at=100"),
        ("transcript: live append (after=last-5)", f"{base}messages/?after={session.last_seq - 5}"),
    ]
    return {
        "messages": session.last_seq,
        "cases": [
            {"case": name, **measure(path, requests=args.requests, warmup=args.warmup)}
            for name, path in cases
        ],
    }


# --- the driver -----------------------------------------------------------------------------


def recreate(url: str) -> None:
    parsed = urlparse(url)
    if parsed.scheme.startswith("postgres"):
        name = parsed.path.lstrip("/")
        if name in {"bench", "postgres", "test"}:
            raise SystemExit(f"refusing to recreate the {name!r} database")
        conn = ["-h", parsed.hostname or "127.0.0.1", "-U", parsed.username or "postgres"]
        if parsed.port:
            conn += ["-p", str(parsed.port)]
        subprocess.run(["dropdb", *conn, "--if-exists", "--force", name], check=True)
        subprocess.run(["createdb", *conn, name], check=True)
    elif parsed.scheme == "sqlite":
        path = Path(parsed.path)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def run_phase(phase: str, url: str, args) -> dict:
    env = dict(os.environ, DATABASE_URL=url, DB_POOL="0")
    command = [PYTHON, __file__, "--phase", phase, "--requests", str(args.requests)]
    command += ["--warmup", str(args.warmup), "--messages", str(args.messages)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{phase} phase failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    lines = [
        "| case | median ms | p95 ms | queries | rows / messages | bytes | gzip bytes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['case']} | skipped: {r['skipped']} | | | | | |")
            continue
        shown = r["rows"] or r["messages"]
        lines.append(
            f"| {r['case']} | {r['median_ms']} | {r['p95_ms']} | {r['queries']} | {shown} "
            f"| {r['bytes']:,} | {r['gzip_bytes']:,} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--list-db", default=DEFAULT_LIST_DB)
    parser.add_argument("--transcript-db", default=DEFAULT_TRANSCRIPT_DB)
    parser.add_argument("--label", help="write ui-<backend>-<label>.json instead")
    parser.add_argument("--phase", choices=["list", "transcript"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "list":
        print(json.dumps(phase_list(args)))
        return
    if args.phase == "transcript":
        print(json.dumps(phase_transcript(args)))
        return

    listed = run_phase("list", args.list_db, args)
    recreate(args.transcript_db)
    long = run_phase("transcript", args.transcript_db, args)
    backend = "postgresql" if args.list_db.startswith("postgres") else "sqlite"
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "requests": args.requests,
        "list_db": urlparse(args.list_db).path.lstrip("/"),
        "sessions": listed["sessions"],
        "transcript_messages": long["messages"],
        "cases": listed["cases"] + long["cases"],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"ui-{backend}-{args.label}.json" if args.label else f"ui-{backend}.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2))
    print(f"{listed['sessions']:,} sessions; {args.requests} timed requests per case\n")
    print(table(result["cases"]))


if __name__ == "__main__":
    main()
