#!/usr/bin/env python
"""Where the time of one read request goes, layer by layer, on the database the environment
selects (filled by bench/generate.py; visibility as http_bench.py last set it).

    .venv/bin/python bench/request_profile.py [--calls 50] [--cprofile]

In one process, for `sessions_list` (limit 200, messageLimit 5) and `sessions_history`
(limit 200, includeTools, offset 1,000,000), each median of --calls calls after warm-up:

  database       time inside cursor.execute (Django's execute_wrapper): PostgreSQL's work,
                 the round trips and psycopg's transfer of the rows (PostgreSQL: a client-side
                 cursor has every row when execute returns; SQLite steps rows later, so there
                 this undercounts)
  tool           the tool function (sessions_list / sessions_history) as a whole: database +
                 the ORM's SQL compilation, row building, sanitising, the row dicts
  encode         orjson.dumps of the tool's result, as the edge does
  request        POST /tools/invoke through Django's test client: middleware, authentication,
                 argument parsing, the tool, JSON encoding, the response object

HTTP p50 from bench/http_bench.py minus `request` is what daphne, ASGI and the client add.
--cprofile prints the top functions of `request` by own time.

    .venv/bin/python bench/request_profile.py --rows [--calls 50] [--session KEY]

--rows (issue 26 item 2: what a row costs): each tool call as /tools/invoke sends it (the tool
function, then the envelope's bytes), 20 rows against 200: sessions_list at limit 20 and 200,
with messageLimit 5, with includeDerivedTitles + includeLastMessage (limit 20 and 100: the
enrichment covers at most 100 rows); sessions_history of --session (default agent:main:main)
at limit 20 and 200, with and without includeTools. Each case alternates a call on the plain
path (settings.OPENCLAW_FAST_ROWS off) with one on the one-pass path, so the machine's load
weighs on both alike, and checks that both give the same bytes; p50 of wall and of this
process's CPU time per call.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from sessions_app.access.identity import requester_for  # noqa: E402
from sessions_app.models import ApiKey, GatewayConfig, Session  # noqa: E402
from sessions_app.tools.sessions_history import sessions_history  # noqa: E402
from sessions_app.tools.sessions_list import sessions_list  # noqa: E402


class DatabaseClock:
    """Sums the time spent in cursor.execute while installed."""

    def __init__(self):
        self.seconds = 0.0
        self.statements = 0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started
            self.statements += 1


def timed(calls) -> tuple[list[float], list[float], int]:
    """Each call's ms, its ms in the database, and the statements of the last call."""
    totals, db, statements = [], [], 0
    for call in calls:
        clock = DatabaseClock()
        with connection.execute_wrapper(clock):
            started = time.perf_counter()
            call()
            totals.append((time.perf_counter() - started) * 1000)
        db.append(clock.seconds * 1000)
        statements = clock.statements
    return totals, db, statements


def median_ms(fn, calls: int) -> tuple[float, float, int]:
    """(median ms of fn, median ms in the database, statements per call)."""
    for _ in range(5):
        fn()
    totals, db, statements = timed([fn] * calls)
    return statistics.median(totals), statistics.median(db), statements


ROW_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "list 20": ("sessions_list", {"limit": 20}),
    "list 200": ("sessions_list", {"limit": 200}),
    "list 20, messageLimit 5": ("sessions_list", {"limit": 20, "messageLimit": 5}),
    "list 200, messageLimit 5": ("sessions_list", {"limit": 200, "messageLimit": 5}),
    "list 20, titles + previews": (
        "sessions_list",
        {"limit": 20, "includeDerivedTitles": True, "includeLastMessage": True},
    ),
    "list 100, titles + previews": (
        "sessions_list",
        {"limit": 100, "includeDerivedTitles": True, "includeLastMessage": True},
    ),
    "history 20": ("sessions_history", {"limit": 20}),
    "history 200": ("sessions_history", {"limit": 200}),
    "history 20, includeTools": ("sessions_history", {"limit": 20, "includeTools": True}),
    "history 200, includeTools": ("sessions_history", {"limit": 200, "includeTools": True}),
}


def rows_cost(requester, *, calls: int, session_key: str) -> dict:
    """--rows: each case on the plain and the one-pass path, interleaved (see the docstring)."""
    from django.conf import settings

    from sessions_app.api.tools_invoke import tool_result_bytes

    tools = {"sessions_list": sessions_list, "sessions_history": sessions_history}
    report: dict[str, dict[str, Any]] = {}
    for name, (tool_name, tool_args) in ROW_CASES.items():
        if tool_name == "sessions_history":
            tool_args = {"sessionKey": session_key, **tool_args}
        tool = tools[tool_name]

        def call(tool=tool, tool_args=tool_args) -> bytes:
            return tool_result_bytes(tool(requester=requester, args=tool_args))

        answers = {}
        for fast in (False, True):
            settings.OPENCLAW_FAST_ROWS = fast
            answers[fast] = call()
            for _ in range(4):
                call()
        assert answers[False] == answers[True], f"{name}: the two paths differ"
        wall: dict[bool, list[float]] = {False: [], True: []}
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for i in range(2 * calls):
            fast = bool(i % 2)
            settings.OPENCLAW_FAST_ROWS = fast
            started, started_cpu = time.perf_counter(), time.process_time()
            call()
            cpu[fast].append((time.process_time() - started_cpu) * 1000)
            wall[fast].append((time.perf_counter() - started) * 1000)
        settings.OPENCLAW_FAST_ROWS = True
        details = orjson.loads(answers[True])["result"]["details"]
        report[name] = {
            "rows": len(details.get("sessions") or details.get("messages") or []),
            "bytes": len(answers[True]),
            **{
                f"{path}_{kind}_p50_ms": round(statistics.median(series[fast]), 2)
                for path, fast in (("plain", False), ("fast", True))
                for kind, series in (("wall", wall), ("cpu", cpu))
            },
            "load_1min": round(os.getloadavg()[0], 2),
        }
        print(name, json.dumps(report[name]), flush=True)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--rows", action="store_true", help="20 rows against 200 (issue 26)")
    parser.add_argument("--session", default="agent:main:main", help="--rows: the history's")
    args = parser.parse_args(argv)

    # As http_bench.py's default run: the operator (acting as agent:main:main) sees every agent.
    config = GatewayConfig.load()
    config.visibility, config.a2a_enabled = "all", True
    config.save()
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="request_profile")
    requester = requester_for(key)
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    if args.rows:
        try:
            report = rows_cost(requester, calls=args.calls, session_key=args.session)
        finally:
            key.delete()
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"rows-{connection.vendor}.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        return 0
    deep = Session.objects.get(key="agent:main:main")
    cases: dict[str, dict[str, Any]] = {
        "sessions_list": {"limit": 200, "messageLimit": 5},
        "sessions_history": {
            "sessionKey": deep.key,
            "limit": 200,
            "includeTools": True,
            "offset": 1_000_000,
        },
    }
    tools = {"sessions_list": sessions_list, "sessions_history": sessions_history}
    report = {}
    for name, tool_args in cases.items():
        tool = tools[name]
        result = tool(requester=requester, args=tool_args)
        tool_ms, db_ms, statements = median_ms(
            lambda tool=tool, tool_args=tool_args: tool(requester=requester, args=tool_args),
            args.calls,
        )
        encode_ms, _, _ = median_ms(lambda result=result: orjson.dumps(result), args.calls)
        body = {"tool": name, "args": tool_args}

        def request(body=body):
            response = client.post("/tools/invoke", body, content_type="application/json")
            assert response.status_code == 200, response.content[:300]

        request_ms, request_db_ms, request_statements = median_ms(request, args.calls)
        report[name] = {
            "request_ms": round(request_ms, 2),
            "request_statements": request_statements,
            "request_database_ms": round(request_db_ms, 2),
            "tool_ms": round(tool_ms, 2),
            "tool_database_ms": round(db_ms, 2),
            "tool_statements": statements,
            "encode_ms": round(encode_ms, 2),
            "bytes": len(orjson.dumps(result)),
            "rows": len(result.get("sessions") or result.get("messages") or []),
            "load_1min": round(os.getloadavg()[0], 2),
        }
        print(name, json.dumps(report[name]), flush=True)
        if args.cprofile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.calls):
                request()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    key.delete()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"request-profile-{connection.vendor}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
