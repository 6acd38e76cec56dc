#!/usr/bin/env python
"""What recording an ACP child's page facts costs a turn, and what reading them costs a page
(issue 27 item 5; sessions_app/acp/facts.py).

    OPENCLAW_VAR_DIR=$PWD/var/acpfacts .venv/bin/python manage.py migrate -v0
    OPENCLAW_VAR_DIR=$PWD/var/acpfacts .venv/bin/python bench/acp_facts_bench.py [--turns 200]

(or with DATABASE_URL for PostgreSQL). Per turn, as acp/runtime.py records them: the start
(update_or_create of the child's row), one permission decision, the end (the process's rows).
Per page: acp.facts.page_facts() of a child with 50 decisions. Milliseconds, in-process, on the
database the settings name; the rows it makes are deleted after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from sessions_app import store  # noqa: E402
from sessions_app.acp.facts import TurnFacts, page_facts, spawned  # noqa: E402
from sessions_app.models import Agent, Run  # noqa: E402

PERMISSION = {
    "mode": "read-only",
    "allowed": True,
    "optionId": "allow",
    "toolCall": {"toolCallId": "read-1", "kind": "read", "title": "Read the task"},
    "options": [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ],
}


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"p50 {statistics.median(ordered):.2f} ms, p90 {p90:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    turns = parser.parse_args().turns
    Agent.objects.get_or_create(pk="echo", defaults={"name": "echo"})
    session, _ = store.upsert_session(api_key=None, key=f"agent:echo:acp:{uuid.uuid4()}", entry={})
    spawned(session, harness="echo", cwd="/srv/bench")
    starts, permissions, ends, pages = [], [], [], []
    try:
        for i in range(turns):
            run = Run.objects.create(session=session, kind="send", status=Run.RUNNING)
            facts = TurnFacts(run, "echo", 300)
            started = {"sessionId": "bench-session", "cwd": "/srv/bench", "pid": 10_000 + i}
            t0 = time.perf_counter()
            facts.seen([("started", started)])
            t1 = time.perf_counter()
            facts.seen([("permission", PERMISSION)])
            t2 = time.perf_counter()
            facts.ended(kept_warm=True, pid=10_000 + i)
            t3 = time.perf_counter()
            starts.append((t1 - t0) * 1000)
            permissions.append((t2 - t1) * 1000)
            ends.append((t3 - t2) * 1000)
        for _ in range(turns):
            t0 = time.perf_counter()
            page_facts(session)
            pages.append((time.perf_counter() - t0) * 1000)
    finally:
        session.delete()
    print(f"database: {connection.vendor}; {turns} turns")
    print(f"turn start (the child's row): {ms(starts)}")
    print(f"a permission decision:        {ms(permissions)}")
    print(f"turn end (the process's rows): {ms(ends)}")
    print(f"page_facts (50 decisions shown): {ms(pages)}")


if __name__ == "__main__":
    main()
