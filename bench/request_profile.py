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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args(argv)

    # As http_bench.py's default run: the operator (acting as agent:main:main) sees every agent.
    config = GatewayConfig.load()
    config.visibility, config.a2a_enabled = "all", True
    config.save()
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="request_profile")
    requester = requester_for(key)
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    deep = Session.objects.get(key="agent:main:main")
    cases = {
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
