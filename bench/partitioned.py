#!/usr/bin/env python
"""The message table hash-partitioned by session, measured against the plain table on the same
data (issue 18 item 5; docs/scaling.md says what it means past one machine).

    # 1. a filled, migrated database (bench/generate.py), e.g. 1M sessions, profile none:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/plain .venv/bin/python bench/generate.py \\
        --reset --profile none --sessions 1000000 --messages-per-session 2 \\
        --deep-session-messages 1000500
    # 2. its copy (CREATE DATABASE … TEMPLATE) with sessions_app_message partitioned:
    .venv/bin/python bench/partitioned.py build --source plain --target parted [--partitions 16]
    # 3. the same read and append cases against each (in-process, Django's test client, plus
    #    EXPLAIN ANALYZE of every statement they send), then the table of both:
    DATABASE_URL=postgres://…/plain  .venv/bin/python bench/partitioned.py measure --label plain-r1
    DATABASE_URL=postgres://…/parted .venv/bin/python bench/partitioned.py measure --label parted-r1
    .venv/bin/python bench/partitioned.py table plain parted --rounds 1   # labels <label>-r<N>

`build` drops and recreates the target database (never the source: it refuses the same name)
and converts it in one transaction: the table renamed aside, a new `sessions_app_message` with
the same columns `PARTITION BY HASH (session_id)` with N partitions, the rows moved with one
INSERT … SELECT, then the constraints and indexes on the parent (each partition gets its own):
the primary key becomes (id, session_id), since a unique constraint on a partitioned table must
hold the partition key; (session_id, seq) already does. The foreign key to the session, the
seq check and the full-text GIN indexes are recreated as they were; the identity sequence goes
on from max(id). Then VACUUM ANALYZE. The application's code and migrations are unchanged:
Django sees the same table name and columns.

`measure` (the database DATABASE_URL selects) runs as an operator at visibility all, as
http_bench.py does: sessions_list (200 rows, messageLimit 5), the REST history first page and a
page a million deep, sessions_history at offset 1M, sessions_search (a word in no message, and
two words in most), each --requests times after warm-up, timing the whole request through the
test client and the time inside cursor.execute; then every SELECT the case sent, under EXPLAIN
(ANALYZE, BUFFERS, FORMAT JSON) --explain times (median execution and planning ms, the scan nodes,
how many partitions were read). Appends: `POST /api/v1/sessions/<key>/messages/` of one user
message, to the deep session and to --requests different sessions spread over the table, and
the same allocation + INSERT as raw SQL (the engine's part alone). `--only variants`: the
statement variants docs/scaling.md weighs (previews as LATERAL, OR of ranges, VALUES join, and
pipelined single-session queries; the search's hits joined by id or by (id, session_id)), under
EXPLAIN ANALYZE. The 1-minute load average is recorded before and after each case. Writes
bench/results/partitioned-<label>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TABLE = "sessions_app_message"
ASIDE = "sessions_app_message_plain"
SERVER = "postgres://postgres@127.0.0.1:5432"
DEEP_KEY = "agent:main:main"
DEPTH = 1_000_000
PAGE = 200


def load() -> float:
    return round(os.getloadavg()[0], 2)


# --- build -----------------------------------------------------------------------------------


def _step(name: str, started: float, timings: dict) -> float:
    now = time.perf_counter()
    timings[name] = round(now - started, 1)
    print(f"  {name}: {timings[name]}s (load {load()})", flush=True)
    return now


def build(args) -> int:
    import psycopg

    if args.source == args.target:
        print("--target must differ from --source")
        return 2
    server = args.server.rstrip("/")
    timings: dict[str, float] = {}
    t = time.perf_counter()
    if not args.in_place:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{args.target}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{args.target}" TEMPLATE "{args.source}"')
        t = _step("copy_database", t, timings)
    with psycopg.connect(f"{server}/{args.target}") as conn:
        conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        if conn.execute("SELECT relkind FROM pg_class WHERE relname = %s", [TABLE]).fetchone() == (
            "p",
        ):
            print(f"{TABLE} is already partitioned")
            return 2
        indexes = conn.execute(
            """
            SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
            FROM pg_index i
            WHERE i.indrelid = %s::regclass AND NOT i.indisprimary
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
            """,
            [TABLE],
        ).fetchall()
        constraints = conn.execute(
            """
            SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'f')
            """,
            [TABLE],
        ).fetchall()
        columns = [
            r[0]
            for r in conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attnum",
                [TABLE],
            )
        ]
        # Out of the way: the old table, and the names of its indexes (one namespace per schema).
        conn.execute(f"ALTER TABLE {TABLE} RENAME TO {ASIDE}")
        for name, kind, _ in constraints:
            if kind in "pu":
                conn.execute(f'ALTER TABLE {ASIDE} RENAME CONSTRAINT "{name}" TO "{name}_plain"')
        for name, _ in indexes:
            conn.execute(f'ALTER INDEX "{name}" RENAME TO "{name}_plain"')
        # Same columns, defaults, NOT NULLs, CHECKs and identity; partitioned by the session.
        conn.execute(
            f"CREATE TABLE {TABLE} (LIKE {ASIDE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            f"INCLUDING IDENTITY) PARTITION BY HASH (session_id)"
        )
        for r in range(args.partitions):
            conn.execute(
                f"CREATE TABLE {TABLE}_p{r:02d} PARTITION OF {TABLE} "
                f"FOR VALUES WITH (MODULUS {args.partitions}, REMAINDER {r})"
            )
        t = _step("create", t, timings)
        listed = ", ".join(columns)
        moved = conn.execute(
            f"INSERT INTO {TABLE} ({listed}) SELECT {listed} FROM {ASIDE}"
        ).rowcount
        print(f"  moved {moved:,} rows", flush=True)
        t = _step("move_rows", t, timings)
        conn.execute(f"DROP TABLE {ASIDE}")
        # LIKE … INCLUDING IDENTITY named the new sequence `…_seq1` beside the old one.
        (sequence,) = conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", [TABLE]).fetchone()
        if sequence != f"public.{TABLE}_id_seq":
            conn.execute(f"ALTER SEQUENCE {sequence} RENAME TO {TABLE}_id_seq")
        for name, kind, definition in constraints:
            if kind == "p":
                # A unique constraint of a partitioned table must include the partition key.
                definition = "PRIMARY KEY (id, session_id)"
            conn.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {definition}')
            t = _step(f"constraint {name}", t, timings)
        for name, definition in indexes:
            definition = re.sub(rf"ON (public\.)?{ASIDE}\b", f"ON {TABLE}", definition)
            definition = definition.replace(f'"{name}_plain"', f'"{name}"').replace(
                f"{name}_plain", name
            )
            conn.execute(definition)
            t = _step(f"index {name}", t, timings)
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{TABLE}', 'id'), "
            f"(SELECT coalesce(max(id), 0) + 1 FROM {TABLE}), false)"
        )
        conn.commit()
    with psycopg.connect(f"{server}/{args.target}", autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {TABLE}")
        t = _step("vacuum_analyze", t, timings)
        sizes = conn.execute(
            "SELECT count(*), min(n), max(n) FROM (SELECT count(*) AS n FROM sessions_app_message "
            "GROUP BY tableoid) p"
        ).fetchone()
    meta = {
        "source": args.source,
        "target": args.target,
        "partitions": args.partitions,
        "rows_per_partition": {"partitions": sizes[0], "min": sizes[1], "max": sizes[2]},
        "timings_s": timings,
        "built_at": datetime.now(tz=UTC).isoformat(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"partitioned-build-{args.target}.json").write_text(json.dumps(meta, indent=2))
    print(json.dumps(meta, indent=2))
    return 0


# --- measure ---------------------------------------------------------------------------------


def _django():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _explain(connection, sql: str, runs_wanted: int) -> dict:
    """Median execution and planning ms of `sql` under EXPLAIN ANALYZE, and its message scans."""
    runs = []
    for _ in range(runs_wanted):
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
            (found,) = cursor.fetchone()
        runs.append(found[0] if isinstance(found, list) else found)
    top = runs[-1]["Plan"]
    scans = [n for n in _nodes(top) if str(n.get("Relation Name", "")).startswith(TABLE)]
    return {
        "statement": " ".join(sql.split())[:110],
        "execution_ms": round(statistics.median(r["Execution Time"] for r in runs), 2),
        "planning_ms": round(statistics.median(r["Planning Time"] for r in runs), 2),
        "rows": top["Actual Rows"],
        "buffers": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
        # Partition names folded: "Index Scan sessions_app_message_pNN_…" once.
        "message_scans": sorted(
            {
                re.sub(r"_p\d\d_", "_pNN_", f"{n['Node Type']} {n.get('Index Name', '')}").strip()
                for n in scans
            }
        ),
        # Of those nodes, how many ran at all (the others were pruned at run time: "never
        # executed"), and their loops summed (one per probe that reached a partition).
        "message_scan_nodes_executed": sum(1 for n in scans if n.get("Actual Loops", 0) > 0),
        "message_scan_loops": sum(n.get("Actual Loops", 0) for n in scans),
        # Scan nodes on messages (1 per probe on the plain table; on the partitioned one 1 per
        # probe after pruning, else one per partition).
        "message_scan_nodes": len(scans),
        "subplans_removed": sum(n.get("Subplans Removed", 0) for n in _nodes(top)),
    }


def _run_case(connection, calls: list, *, warmup, explain_runs: int, explain: bool) -> dict:
    """Time each of `calls` (after `warmup` untimed calls), then EXPLAIN ANALYZE the SELECTs on
    messages that the first one sends."""
    from django.test.utils import CaptureQueriesContext

    before = load()
    for _ in range(warmup[0]):
        warmup[1]()
    with CaptureQueriesContext(connection) as captured:
        calls[0]()
    sent = [q["sql"] for q in captured.captured_queries]
    from bench.request_profile import timed  # (imported after django.setup())

    totals, in_db, _ = timed(calls)
    plans = [
        _explain(connection, sql, explain_runs)
        for sql in sent
        if explain and sql.lstrip().upper().startswith(("SELECT", "WITH")) and TABLE in sql
    ]
    summary = _summary(totals, in_db, len(sent), plans, before)
    summary["statements_sent"] = [" ".join(q.split())[:110] for q in sent]
    return summary


def _read_cases(client, last_seq: int) -> dict:
    history = f"/api/v1/sessions/{quote(DEEP_KEY, safe=':')}/history/"

    def invoke(tool: str, tool_args: dict):
        def call():
            response = client.post(
                "/tools/invoke", {"tool": tool, "args": tool_args}, content_type="application/json"
            )
            assert response.status_code == 200, response.content[:300]
            assert response.json().get("ok"), response.content[:300]

        return call

    def get(path: str):
        def call():
            response = client.get(path)
            assert response.status_code == 200, response.content[:300]

        return call

    return {
        "sessions_list 200, messageLimit 5": invoke(
            "sessions_list", {"limit": PAGE, "messageLimit": 5}
        ),
        "history REST 200, first page": get(f"{history}?limit={PAGE}"),
        f"history REST 200, cursor {DEPTH:,} deep": get(
            f"{history}?limit={PAGE}&cursor={last_seq - DEPTH}"
        ),
        "sessions_history includeTools, offset 1M": invoke(
            "sessions_history",
            {"sessionKey": DEEP_KEY, "limit": PAGE, "includeTools": True, "offset": DEPTH},
        ),
        "sessions_search, no match": invoke("sessions_search", {"query": "zephyrquux"}),
        "sessions_search, two common words": invoke("sessions_search", {"query": "deploy review"}),
    }


def _append(client, session_key: str):
    """One user message through `POST /api/v1/sessions/<key>/messages/` (seq allocation, the
    INSERT, the state log)."""
    body = {"messages": [{"role": "user", "content": "partitioned bench append"}]}

    def call():
        response = client.post(
            f"/api/v1/sessions/{quote(session_key, safe=':')}/messages/",
            body,
            content_type="application/json",
        )
        assert response.status_code in (200, 201), response.content[:300]

    return call


def measure(args) -> int:
    _django()
    from django.db import connection
    from django.test import Client

    from sessions_app.models import ApiKey, GatewayConfig, Session

    if connection.vendor != "postgresql":
        print("PostgreSQL only")
        return 2
    config = GatewayConfig.load()
    config.visibility, config.a2a_enabled = "all", True
    config.save()
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="partitioned_bench")
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    report: dict = {
        "label": args.label,
        "database": str(connection.settings_dict["NAME"]),
        "partitioned": _partitions(connection),
        "sessions": Session.objects.count(),
        "messages_estimate": _message_estimate(connection),
        "measured_at": datetime.now(tz=UTC).isoformat(),
        "cases": {},
    }
    print(f"{args.label}: {report['database']}, partitions {report['partitioned']}, "
          f"{report['sessions']:,} sessions, ~{report['messages_estimate']:,} messages", flush=True)  # fmt: skip
    cases = _read_cases(client, Session.objects.get(key=DEEP_KEY).last_seq)
    for name, call in cases.items():
        if args.only and args.only not in name:
            continue
        report["cases"][name] = _run_case(
            connection,
            [call] * args.requests,
            warmup=(args.warmup, call),
            explain_runs=args.explain,
            explain=True,
        )
        _print(name, report["cases"][name])
    if not args.only or args.only in "variants":
        report["variants"] = _variants(connection, args.explain)
        for plan in report["variants"]:
            if "wall_ms" in plan:
                print(f"variant {plan['variant']}: {plan['wall_ms']} ms", flush=True)
                continue
            print(f"variant {plan['variant']}: exec {plan['execution_ms']} plan "
                  f"{plan['planning_ms']} ms, {plan['message_scan_nodes']} message scan nodes, "
                  f"{plan['message_scan_nodes_executed']} run, {plan['message_scan_loops']} loops "
                  f"{plan['message_scans']}", flush=True)  # fmt: skip
    # Appends to the deep session, then to sessions spread over the table (and partitions).
    with connection.cursor() as c:
        c.execute(
            "SELECT key FROM sessions_app_session WHERE id > 10 AND id %% %s = 7 ORDER BY id "
            "LIMIT %s",
            [max(1, report["sessions"] // max(args.requests, 1)), args.requests],
        )
        spread = [row[0] for row in c.fetchall()]
    for name, keys_ in (
        ("append 1 message, deep session", [DEEP_KEY] * args.requests),
        (f"append 1 message, {len(spread)} sessions", spread),
    ):
        if args.only and args.only not in name:
            continue
        report["cases"][name] = _run_case(
            connection,
            [_append(client, k) for k in keys_],
            warmup=(args.warmup, _append(client, DEEP_KEY)),
            explain_runs=0,
            explain=False,
        )
        _print(name, report["cases"][name])
    if not args.only or args.only in "append raw SQL":
        report["cases"]["append raw SQL (UPDATE + INSERT, one transaction)"] = _raw_appends(
            connection, spread * 2
        )
        _print(
            "append raw SQL (UPDATE + INSERT, one transaction)",
            report["cases"]["append raw SQL (UPDATE + INSERT, one transaction)"],
        )
    key.delete()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"partitioned-{args.label}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def _variants(connection, explain_runs: int) -> list[dict]:
    """Statements docs/scaling.md proposes instead of today's, on the list's first page: the
    previews as today's LATERAL and as the OR-of-ranges form (what Citus could route); the
    search's second step joining 26 hits by id alone and by (id, session_id)."""
    with connection.cursor() as c:
        c.execute(
            "SELECT id, last_seq FROM sessions_app_session WHERE archived_at IS NULL "
            "ORDER BY updated_at DESC, id DESC LIMIT 200"
        )
        page = [(pk, last) for pk, last in c.fetchall() if last > 0]
        c.execute(
            "SELECT id, session_id FROM sessions_app_message WHERE session_id = ANY(%s) "
            "ORDER BY session_id, seq LIMIT 26",
            [[pk for pk, _ in page[:26]]],
        )
        hits = c.fetchall()
    ids = "ARRAY[" + ",".join(str(pk) for pk, _ in page) + "]::bigint[]"
    lateral = (
        f"SELECT m.session_id, m.seq FROM unnest({ids}) AS wanted(session_id) "
        "CROSS JOIN LATERAL (SELECT * FROM sessions_app_message WHERE session_id = "
        "wanted.session_id ORDER BY seq DESC LIMIT 5) AS m WHERE m.role <> 'toolResult'"
    )
    ranges = " OR ".join(f"(session_id = {pk} AND seq > {last - 5})" for pk, last in page)
    or_ranges = (
        f"SELECT session_id, seq FROM sessions_app_message WHERE ({ranges}) "
        "AND role <> 'toolResult'"
    )
    values = ", ".join(f"({i}, {sid})" for i, sid in hits)
    # The previews by the page's ids and each one's first wanted seq: `session_id = ANY(…)`
    # names the distribution key (Citus can prune by it), the join picks each session's range.
    wanted = ", ".join(f"({pk}, {last - 5})" for pk, last in page)
    any_values = (
        f"SELECT m.session_id, m.seq FROM (VALUES {wanted}) AS w(session_id, after) "
        "JOIN sessions_app_message m ON m.session_id = w.session_id AND m.seq > w.after "
        f"WHERE m.session_id = ANY({ids}) AND m.role <> 'toolResult'"
    )
    by_id = (
        f"SELECT m.id, m.seq FROM (VALUES {values}) AS r(id, session_id) "
        "JOIN sessions_app_message m ON m.id = r.id"
    )
    by_both = by_id + " AND m.session_id = r.session_id"
    found = []
    for name, sql in (
        ("previews: LATERAL (today)", lateral),
        ("previews: OR of (session_id, seq) ranges", or_ranges),
        ("previews: VALUES (id, after) join, session_id = ANY(ids)", any_values),
        ("search hits joined by id (today)", by_id),
        ("search hits joined by (id, session_id)", by_both),
    ):
        plan = _explain(connection, sql, max(explain_runs, 1))
        plan["variant"] = name
        found.append(plan)
    found.extend(_pipelined_previews(connection, page, lateral, max(explain_runs, 1)))
    return found


def _pipelined_previews(connection, page, lateral: str, runs: int) -> list[dict]:
    """Wall time (client side, rows fetched) of today's LATERAL statement against one query
    per session sent in a psycopg pipeline (one round trip for all): the form a Citus
    coordinator routes one by one to each session's shard."""
    one = (
        "SELECT session_id, seq FROM sessions_app_message WHERE session_id = %s "
        "ORDER BY seq DESC LIMIT 5"
    )
    connection.ensure_connection()
    raw = connection.connection
    lateral_ms, pipeline_ms = [], []
    for _ in range(runs):
        started = time.perf_counter()
        with raw.cursor() as c:
            c.execute(lateral)
            c.fetchall()
        lateral_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        with raw.pipeline():
            cursors = [raw.execute(one, [pk]) for pk, _ in page]
        for c in cursors:
            c.fetchall()
        pipeline_ms.append((time.perf_counter() - started) * 1000)
    return [
        {
            "variant": "previews wall: LATERAL (today)",
            "wall_ms": round(statistics.median(lateral_ms), 2),
        },
        {
            "variant": f"previews wall: {len(page)} queries in one psycopg pipeline",
            "wall_ms": round(statistics.median(pipeline_ms), 2),
        },
    ]


_RAW_ALLOCATE = (
    "UPDATE sessions_app_session SET last_seq = last_seq + 1 WHERE key = %s RETURNING id, last_seq"
)
_RAW_INSERT = """
INSERT INTO sessions_app_message (session_id, seq, role, content, provenance, tool_call_id,
    tool_name, usage, timestamp, extra, redact_needed, created_at)
VALUES (%s, %s, 'user', '"partitioned bench append"', NULL, '', '', NULL, 0, '{}', false, now())
RETURNING id
"""


def _raw_appends(connection, session_keys: list[str]) -> dict:
    """The engine's part of an append alone: the seq allocation and the INSERT in one
    transaction, as the store sends them, without the app around them (no state log)."""
    from django.db import transaction

    before = load()
    totals, inserts = [], []
    for session_key in session_keys:
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as c:
            c.execute(_RAW_ALLOCATE, [session_key])
            pk, seq = c.fetchone()
            t = time.perf_counter()
            c.execute(_RAW_INSERT, [pk, seq])
            inserts.append((time.perf_counter() - t) * 1000)
        totals.append((time.perf_counter() - started) * 1000)
    summary = _summary(totals, inserts, 4, [], before)
    summary["db_p50_ms_is"] = "the INSERT statement alone (round trip included)"
    return summary


def _message_estimate(connection) -> int:
    with connection.cursor() as c:
        c.execute(
            "SELECT coalesce(sum(reltuples), 0)::bigint FROM pg_class WHERE relkind = 'r' AND "
            "(relname = %s OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = "
            "%s::regclass))",
            [TABLE, TABLE],
        )
        return c.fetchone()[0]


def _partitions(connection) -> int:
    with connection.cursor() as c:
        c.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = "
            "(SELECT oid FROM pg_class WHERE relname = %s AND relkind = 'p')",
            [TABLE],
        )
        return c.fetchone()[0]


def _summary(totals, in_db, statements, plans, before) -> dict:
    return {
        "requests": len(totals),
        "p50_ms": _pct(totals, 0.5),
        "p95_ms": _pct(totals, 0.95),
        "db_p50_ms": _pct(in_db, 0.5),
        "statements": statements,
        "plans": plans,
        "load_1min": [before, load()],
    }


def _print(name: str, case: dict) -> None:
    print(f"{name}: p50 {case['p50_ms']} ms, p95 {case['p95_ms']} ms, in db {case['db_p50_ms']} "
          f"ms, {case['statements']} statements, load {case['load_1min']}", flush=True)  # fmt: skip
    for plan in case["plans"]:
        print(f"    exec {plan['execution_ms']:8.2f} plan {plan['planning_ms']:6.2f} ms "
              f"{plan['buffers']:7} buf, {plan['message_scan_nodes']} message scan nodes, "
              f"{plan['message_scan_nodes_executed']} run, {plan['message_scan_loops']} loops "
              f"{plan['message_scans']}: {plan['statement'][:70]}",
              flush=True)  # fmt: skip


# --- table -----------------------------------------------------------------------------------


def table(args) -> int:
    """One row per case: for each database label, the median over --rounds of p50 and p95 (ms),
    and the median server execution time of the case's message statements (EXPLAIN ANALYZE)."""
    by_label = {
        label: [
            json.loads((RESULTS / f"partitioned-{label}-r{r}.json").read_text())
            for r in args.rounds
        ]
        for label in args.labels
    }
    names = [n for n in by_label[args.labels[0]][-1]["cases"]]
    head = " | ".join(f"{label} p50 / p95" for label in args.labels)
    execs = " | ".join(f"{label} server" for label in args.labels)
    print(f"| case | {head} | {execs} | load 1 min |")
    print("|---|" + "---:|" * (2 * len(args.labels)) + "---|")
    for name in names:
        cells, servers, loads = [], [], []
        for label in args.labels:
            cases = [r["cases"][name] for r in by_label[label] if name in r["cases"]]
            if not cases:
                cells.append("–")
                servers.append("–")
                continue
            p50 = statistics.median(c["p50_ms"] for c in cases)
            p95 = statistics.median(c["p95_ms"] for c in cases)
            cells.append(f"{p50:.1f} / {p95:.1f}")
            plans = [c["plans"] for c in cases if c["plans"]]
            if plans:
                per_statement = [
                    statistics.median(p[i]["execution_ms"] + p[i]["planning_ms"] for p in plans)
                    for i in range(len(plans[0]))
                ]
                servers.append(" + ".join(f"{x:.2f}" for x in per_statement))
            else:
                servers.append("–")
            loads.extend(x for c in cases for x in c["load_1min"])
        load_range = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"
        print(f"| {name} | {' | '.join(cells)} | {' | '.join(servers)} | {load_range} |")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="copy a filled database and partition its message table")
    b.add_argument("--source", required=True, help="database name to copy (not changed)")
    b.add_argument("--target", required=True, help="database name: DROPPED and recreated")
    b.add_argument("--partitions", type=int, default=16)
    b.add_argument("--server", default=SERVER, help="server URL without a database name")
    b.add_argument("--maintenance-work-mem", default="256MB")
    b.add_argument("--in-place", action="store_true", help="convert --target as it is (no copy)")
    m = sub.add_parser("measure", help="the cases against the database DATABASE_URL selects")
    m.add_argument("--label", required=True)
    m.add_argument("--requests", type=int, default=50)
    m.add_argument("--warmup", type=int, default=5)
    m.add_argument("--explain", type=int, default=5, help="EXPLAIN ANALYZE runs per statement")
    m.add_argument("--only", help="only the cases whose name contains this text")
    t = sub.add_parser("table", help="a Markdown table of measured labels over rounds")
    t.add_argument("labels", nargs="+", help="e.g. plain parted (files <label>-r<N>)")
    t.add_argument("--rounds", nargs="+", default=["1"], help="round numbers N")
    args = parser.parse_args(argv)
    if args.command == "build":
        if args.partitions < 2:
            parser.error("--partitions must be at least 2")
        return build(args)
    if args.command == "measure":
        return measure(args)
    return table(args)


if __name__ == "__main__":
    sys.exit(main())
