#!/usr/bin/env python
"""sessions_list on stores of the same size grown three ways (issue 26 item 0): the children
lookup must not read the table once per page row on any of them.

    .venv/bin/python bench/children_bench.py [--sessions 100000] [--calls 30] [--budget 20]

PostgreSQL only, on the database the environment selects: it EMPTIES the sessions table (and
what references it) first. Shapes, each then ANALYZEd (no VACUUM, as a store just grown is):
- `copies`: 1,000 sessions without sub-agents (bench/shapes.py, profile none), then copies of
  them by one INSERT … SELECT up to --sessions, each older than the last (a bulk grow: the
  side-by-side scale step; the heap in activity order);
- `skewed`: --sessions generated at once, no sub-agents but one parent with 500 children on
  the first page (the plan test's shape);
- `orm`: the same 1,000, then copies written by the ORM (bulk_create, 5,000 a batch) in random
  activity order.
On each, sessions_list as agent:main:main at visibility all, default limit and limit 200 (the
tool function, as every adapter calls it), --calls times after a warm-up call, p50/p95 in ms;
`before` with the children statement of the commit before the fix, `after` with the current
one. A case stops early once it has run for --budget seconds (the calls made are reported).
The children statement's plan for the first page's 201 keys is recorded too (the scan, and
after the fix its execution time under EXPLAIN ANALYZE). `uptime` is recorded around each shape. Prints a Markdown table; writes
bench/results/children-<label>.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench import shapes  # noqa: E402
from sessions_app import rows  # noqa: E402
from sessions_app.access.identity import requester_for_session  # noqa: E402
from sessions_app.models import GatewayConfig, Session  # noqa: E402
from sessions_app.tools.sessions_list import sessions_list  # noqa: E402

SEEDED = 1_000
SKEWED = shapes.Profile("500-child parent", one_parent=True, children=500, dominant=0.95, agents=4)
# rows._CHILDREN_SQL before issue 26: an equality on spawned_by, planned from its statistics.
BEFORE_SQL = """
    SELECT parent.key, child.key
    FROM unnest(%s::text[]) AS parent(key)
    CROSS JOIN LATERAL (
        SELECT key, updated_at, id FROM sessions_app_session
        WHERE spawned_by = parent.key AND archived_at IS NULL
        ORDER BY updated_at DESC, id
        LIMIT %s
    ) AS child
    ORDER BY parent.key, child.updated_at DESC, child.id
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def empty(profile: shapes.Profile) -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE sessions_app_session RESTART IDENTITY CASCADE")
    shapes.add_agents(profile)


def grow(shape: str, sessions: int) -> None:
    profile = SKEWED if shape == "skewed" else shapes.PROFILES["none"]
    empty(profile)
    if shape == "skewed":
        with connection.cursor() as cursor:
            shapes.grow(cursor, profile, sessions)
    elif shape == "copies":
        with connection.cursor() as cursor:
            shapes.grow(cursor, profile, sessions, seeded=SEEDED)
    else:
        with connection.cursor() as cursor:  # the generator wrote explicit ids
            shapes.grow(cursor, profile, SEEDED)
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('sessions_app_session', 'id'), %s)",
                [SEEDED],
            )
        seeds = list(Session.objects.order_by("id"))
        oldest = min(s.updated_at for s in seeds)
        fields = [f for f in Session._meta.concrete_fields if f.name != "id"]
        order = list(range(sessions - SEEDED))
        random.Random(1).shuffle(order)
        for start in range(0, len(order), 5_000):
            batch = []
            for j in order[start : start + 5_000]:
                seed = seeds[j % SEEDED]
                copy = Session(**{f.attname: getattr(seed, f.attname) for f in fields})
                copy.key = f"{seed.key}-orm{j}"
                copy.session_id = str(uuid.uuid4())
                copy.updated_at = copy.changed_ms = oldest - 1000 - j
                copy.last_seq = 0
                batch.append(copy)
            Session.objects.bulk_create(batch, batch_size=1_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_session")
        cursor.execute("SELECT count(*) FROM sessions_app_session")
        assert cursor.fetchone()[0] == sessions


def timed(call, calls: int, budget: float) -> dict:
    call()  # warm-up (one: a call of the old plan takes seconds on a copied store)
    took = []
    started = time.perf_counter()
    while len(took) < calls and time.perf_counter() - started < budget:
        t0 = time.perf_counter()
        call()
        took.append((time.perf_counter() - t0) * 1000)
    ordered = sorted(took)
    return {
        "calls": len(took),
        "p50_ms": round(statistics.median(took), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


def children_plan(sql: str, *, analyze: bool) -> dict:
    """The children statement for the first page's 201 keys: its scan of sessions (plain
    EXPLAIN: the plan the list gets), and with `analyze` the server's execution time."""
    keys = list(Session.objects.by_activity().values_list("key", flat=True)[:201])
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN ({options}) " + sql, [keys, rows.CHILD_SESSIONS_MAX + 1])
        (found,) = cursor.fetchone()
    found = found[0] if isinstance(found, list) else found
    stack, scans = [found["Plan"]], []
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if node.get("Relation Name") == "sessions_app_session":
            scans.append(f"{node['Node Type']} {node.get('Index Name', '')}".strip())
    plan = {"scan": ", ".join(scans), "cost": found["Plan"]["Total Cost"]}
    if analyze:
        plan["execution_ms"] = round(found["Execution Time"], 2)
    return plan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--shapes", default="copies,skewed,orm")
    parser.add_argument("--label", default="current")
    parser.add_argument("--variants", default="before,after", help="in the order to time them")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        print("PostgreSQL only")
        return 2
    after_sql = rows._CHILDREN_SQL
    report = {"sessions": args.sessions, "shapes": {}}
    for shape in args.shapes.split(","):
        t0 = time.perf_counter()
        grow(shape, args.sessions)
        found = {"grow_s": round(time.perf_counter() - t0, 1), "uptime": [uptime()]}
        gc.collect()  # the ORM growth's 100,000 models, not collected in the first timed calls
        config = GatewayConfig.load()
        config.visibility, config.a2a_enabled = "all", True
        config.save()
        requester = requester_for_session(Session.objects.get(key=shapes.DEEP_KEY))
        for variant in args.variants.split(","):
            sql = {"before": BEFORE_SQL, "after": after_sql}[variant]
            # The old plan on a copied store takes ~40 s for 201 keys: not run under ANALYZE.
            found[f"{variant} plan"] = children_plan(sql, analyze=variant == "after")
            rows._CHILDREN_SQL = sql
            for case, list_args in (("default", {}), ("limit 200", {"limit": 200})):
                found[f"{variant} {case}"] = timed(
                    lambda list_args=list_args, requester=requester: sessions_list(
                        requester=requester, args=list_args
                    ),
                    args.calls,
                    args.budget,
                )
        rows._CHILDREN_SQL = after_sql
        found["uptime"].append(uptime())
        report["shapes"][shape] = found
        print(shape, json.dumps(found), flush=True)
    cases = [
        c
        for c in next(iter(report["shapes"].values()))
        if c not in ("grow_s", "uptime") and not c.endswith(" plan")
    ]
    print(f"\n| shape ({args.sessions:,} sessions) | " + " | ".join(cases) + " |")
    print("|---|" + "---:|" * len(cases))
    for shape, found in report["shapes"].items():
        cells = [f"{found[c]['p50_ms']:,.1f} ({found[c]['calls']})" for c in cases]
        print(f"| {shape} | " + " | ".join(cells) + " |")
    for shape, found in report["shapes"].items():
        print(f"{shape}: before {found['before plan']}, after {found['after plan']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"children-{args.label}.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
