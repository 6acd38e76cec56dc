#!/usr/bin/env python
"""Markdown tables of the issue 18 runs (bench/profiles.sh, bench/issue18.sh): one row per
profile, size, visibility and requester with the p50 / p95 ms of each read case and the
1-minute load average around it; then the sessions_send round trip and the live latency runs
found in bench/results/ (send-pg-redis-*.json, live-pg-redis*.json), each with its `uptime`.

    .venv/bin/python bench/profiles_table.py [bench/results/http-postgresql-*.json …]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ORDER = ["none", "today", "parent-10k", "parent-40pct", "agent-95pct", "giants"]
VISIBILITIES = ["all", "agent", "tree", "self"]
MAIN = "agent:main:main"
COLUMNS = [
    ("sessions_list limit 200, messageLimit 0", "list, 0 msgs"),
    ("sessions_list limit 200, messageLimit 5", "list, 5 msgs"),
    ("agents_list", "agents_list"),
    ("history REST limit 200, first page", "history first page"),
    ("history REST limit 200, cursor 1,000,000 deep", "history 1M deep"),
    ("sessions_history tool, includeTools, offset 1,000,000", "sessions_history offset 1M"),
]


def _order(report: dict) -> tuple:
    data = report.get("data", {})
    visibility = report.get("visibility", "all")
    return (
        data.get("sessions") or 0,
        ORDER.index(data["profile"]) if data.get("profile") in ORDER else 99,
        VISIBILITIES.index(visibility) if visibility in VISIBILITIES else 99,
        report.get("requester", MAIN) != MAIN,
    )


def reads(paths: list[Path]) -> None:
    reports = sorted((json.loads(path.read_text()) for path in paths), key=_order)
    head = " | ".join(label for _, label in COLUMNS)
    print(f"| profile | sessions | visibility | rows | {head} | load 1 min | measured (UTC) |")
    print("|---|---:|---|---:|" + "---:|" * len(COLUMNS) + "---|---|")
    for report in reports:
        data = report.get("data", {})
        by_case = {r["case"]: r for r in report["results"]}
        cells = []
        for case, _ in COLUMNS:
            r = by_case.get(case)
            cells.append(f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f}" if r else "–")
        loads = [x for r in report["results"] for x in r.get("load_1min", [])]
        load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"
        rows = {r.get("rows") for r in report["results"] if r.get("rows") is not None}
        visibility = report.get("visibility", "all")
        requester = report.get("requester", MAIN)
        if requester != MAIN:
            visibility += f" (as {requester.rsplit(':', 1)[-1]})"
        print(
            f"| {data.get('profile', '?')} | {data.get('sessions', 0):,} | {visibility} "
            f"| {'/'.join(str(n) for n in sorted(rows)) or 200} | {' | '.join(cells)} | {load} "
            f"| {report['measured_at'][11:16]} |"
        )


def sends(paths: list[Path]) -> None:
    print("\n| sessions_send (PostgreSQL + Redis) | p50 ms | p95 ms | sends/s | failed "
          "| CPU ms per send: server / worker / postgres | uptime before |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|---|")
    for path in paths:
        r = json.loads(path.read_text())
        cpu = r.get("cpu_ms_per_send", {})
        print(
            f"| ping-pong {r['max_ping_pong_turns']} ({path.stem}) | {r['p50_ms']} "
            f"| {r['p95_ms']} | {r['sends_per_s']} | {r['failures']} "
            f"| {cpu.get('server')} / {cpu.get('worker')} / {cpu.get('postgres')} "
            f"| {(r.get('uptime') or ['–'])[0]} |"
        )


def lives(paths: list[Path]) -> None:
    print("\n| live (PostgreSQL + Redis) | subscribers | msgs/s | lost | p50 ms | p95 ms "
          "| p99 ms | server CPU s | uptime before |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for path in paths:
        for r in json.loads(path.read_text())["rows"]:
            print(
                f"| {path.stem} | {r['subscribers']} | {r['rate']:g} | {r['lost']} "
                f"| {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['server_cpu_s']} "
                f"| {(r.get('uptime') or ['–'])[0]} |"
            )


def main(paths: list[str]) -> int:
    given = [Path(p) for p in paths]
    reads(given or sorted(RESULTS.glob("http-postgresql-*-*-*.json")))
    if not given:
        send_files = sorted(RESULTS.glob("send-pg-redis-*.json"))
        send_files = [p for p in send_files if not p.stem.endswith(("-server", "-worker"))]
        if send_files:
            sends(send_files)
        live_files = sorted(RESULTS.glob("live-pg-redis*.json"))
        if live_files:
            lives(live_files)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
