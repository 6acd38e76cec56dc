#!/usr/bin/env python
"""A Markdown table of the profile runs (bench/profiles.sh): one row per profile, size and
visibility; p50 / p95 ms of each case, with the 1-minute load average around the run.

    .venv/bin/python bench/profiles_table.py [bench/results/http-postgresql-*.json …]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ORDER = ["none", "today", "parent-10k", "parent-40pct", "agent-95pct", "giants"]
COLUMNS = [
    ("sessions_list limit 200, messageLimit 0", "list, 0 msgs"),
    ("sessions_list limit 200, messageLimit 5", "list, 5 msgs"),
    ("agents_list", "agents_list"),
    ("history REST limit 200, first page", "history first page"),
    ("history REST limit 200, cursor 1,000,000 deep", "history 1M deep"),
    ("sessions_history tool, includeTools, offset 1,000,000", "sessions_history offset 1M"),
]


def main(paths: list[str]) -> int:
    files = [Path(p) for p in paths] or list(RESULTS.glob("http-postgresql-*-*-*.json"))
    reports = sorted(
        (json.loads(path.read_text()) for path in files),
        key=lambda r: (
            r.get("data", {}).get("sessions") or 0,
            ORDER.index(r["data"]["profile"]) if r.get("data", {}).get("profile") in ORDER else 99,
            r.get("visibility", "all") != "all",
        ),
    )
    head = " | ".join(label for _, label in COLUMNS)
    print(f"| profile | sessions | visibility | {head} | load 1 min | measured (UTC) |")
    print("|---|---:|---|" + "---:|" * len(COLUMNS) + "---|---|")
    for report in reports:
        data = report.get("data", {})
        by_case = {r["case"]: r for r in report["results"]}
        cells = []
        for case, _ in COLUMNS:
            r = by_case.get(case)
            cells.append(f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f}" if r else "–")
        loads = [x for r in report["results"] for x in r.get("load_1min", [])]
        load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"
        print(
            f"| {data.get('profile', '?')} | {data.get('sessions', 0):,} "
            f"| {report.get('visibility', 'all')} | {' | '.join(cells)} | {load} "
            f"| {report['measured_at'][11:16]} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
