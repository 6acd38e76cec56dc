#!/usr/bin/env python
"""The list statements' plans on the database the environment selects (PostgreSQL), as data
for BENCHMARKS.md: what each statement costs the server, apart from the load on the machine.

    .venv/bin/python bench/list_plans.py [--label none-100000]

For sessions_list (limit 200, messageLimit 5) as agent:main:main at visibility all, agent, tree
and self, as agent:main:orchestrator (the one-parent profiles' parent) at tree, and for the
browser's list: every SELECT it sends, run again under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON). Prints one line per statement (execution and planning ms, rows, buffers, the
estimated cost, whether a sequential scan of sessions or messages appears) and writes
bench/results/plans-<label>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from sessions_app.access.identity import requester_for_session  # noqa: E402
from sessions_app.models import GatewayConfig, Session  # noqa: E402
from sessions_app.tools.sessions_list import sessions_list  # noqa: E402
from sessions_app.ui import queries  # noqa: E402

TABLES = ("sessions_app_session", "sessions_app_message")


def nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        call()
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].lstrip().lstrip("(").upper().startswith("SELECT")
        and any(t in q["sql"] for t in TABLES)
    ]


def describe(sql: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
        (found,) = cursor.fetchone()
    found = found[0] if isinstance(found, list) else found
    top = found["Plan"]
    scans = [n for n in nodes(top) if n.get("Relation Name") in TABLES]
    return {
        "statement": " ".join(sql.split())[:90],
        "execution_ms": round(found["Execution Time"], 2),
        "planning_ms": round(found["Planning Time"], 2),
        "rows": top["Actual Rows"],
        "buffers": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
        "total_cost": top["Total Cost"],
        "seq_scan": any(n["Node Type"] == "Seq Scan" for n in scans),
        "scans": sorted({f"{n['Node Type']} {n.get('Index Name', '')}".strip() for n in scans}),
        "jit": "JIT" in found,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="current")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        print("PostgreSQL only")
        return 2
    report: dict[str, list[dict]] = {}
    config = GatewayConfig.load()
    for visibility, key in (
        ("all", "agent:main:main"),
        ("agent", "agent:main:main"),
        ("tree", "agent:main:main"),
        ("tree", "agent:main:orchestrator"),
        ("self", "agent:main:main"),
    ):
        session = Session.objects.filter(key=key).first()
        if session is None:
            continue
        config.visibility, config.a2a_enabled = visibility, True
        config.save()
        requester = requester_for_session(session)
        found = statements(
            lambda requester=requester: sessions_list(
                requester=requester, args={"limit": 200, "messageLimit": 5}
            )
        )
        name = f"sessions_list {visibility}" + ("" if key == "agent:main:main" else f" as {key}")
        report[name] = [describe(sql) for sql in found]
    config.visibility = "all"
    config.save()
    settings = GatewayConfig.load().key_settings
    report["browser list"] = [
        describe(sql) for sql in statements(lambda: queries.list_page({}, settings=settings))
    ]
    for case, rows in report.items():
        print(case)
        for row in rows:
            print(
                f"  {row['execution_ms']:8.2f} ms exec {row['planning_ms']:6.2f} ms plan "
                f"{row['rows']:6} rows {row['buffers']:7} buf cost {row['total_cost']:9.0f} "
                f"seq={row['seq_scan']} {', '.join(row['scans'])}"
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"plans-{args.label}.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
