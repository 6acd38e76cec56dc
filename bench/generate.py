#!/usr/bin/env python
"""Fill the configured database with a large data set of a given shape for the benchmarks.

    .venv/bin/python bench/generate.py [--profile today] [--sessions 100000]
        [--messages-per-session 4] [--deep-session-messages 1200000] [--reset]

PostgreSQL: the rows are written by the server itself (INSERT … SELECT over generate_series,
bench/shapes.py), with the secondary indexes dropped during the load and built again after it,
then VACUUM ANALYZE, as a live database would be: 1,000,000 sessions take minutes, not hours.
--profile picks the data shape (bench/shapes.py PROFILES: none, today, parent-10k,
parent-40pct, agent-95pct, giants). Session 1 (`agent:main:main`) gets --deep-session-messages
messages, so that a history page a million messages deep exists; every other session 0 to
2 × --messages-per-session.

SQLite: the earlier generator (profile `today` only; --messages is the total): rows planned in
Python and written with executemany in large transactions. The invariants the app relies on
hold on both: every session's messages have seqs 1..last_seq, kind/row_channel come from
openclaw_common.keys, JSON columns hold JSON.

Prints timings and writes bench/results/meta-<backend>.json (the deep session's key, sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench import shapes  # noqa: E402
from sessions_app.lib import sanitize  # noqa: E402
from sessions_app.manage.agents import upsert_agent  # noqa: E402
from sessions_app.models import GatewayConfig, Message, Session  # noqa: E402

DAY_MS = 86_400_000
DEEP_KEY = "agent:main:main"
AGENTS = {
    "main": {"name": "Main", "model": "gpt-5-mini", "subagents": {"allowAgents": ["*"]}},
    "research": {"name": "Research", "model": "gpt-5", "subagents": {"allowAgents": ["main"]}},
}
GROUP_CHANNELS = [("discord", "group"), ("telegram", "group"), ("whatsapp", "group"),
                  ("slack", "channel"), ("signal", "group")]  # fmt: skip
DIRECT_CHANNELS = ["telegram", "discord", "whatsapp", "signal", "imessage"]
WORDS = [
    "deploy",
    "build",
    "logs",
    "failing",
    "test",
    "retry",
    "cache",
    "database",
    "index",
    "query",
    "latency",
    "review",
    "branch",
    "merge",
    "release",
    "notes",
    "schedule",
    "meeting",
    "summary",
    "draft",
    "email",
    "invoice",
    "report",
    "metrics",
    "alert",
    "incident",
    "rollback",
    "config",
    "secret",
    "rotate",
    "backup",
    "restore",
    "migrate",
    "schema",
    "session",
    "agent",
    "tool",
    "result",
    "output",
    "error",
    "timeout",
    "queue",
    "worker",
    "cron",
    "job",
    "webhook",
    "channel",
    "thread",
    "reply",
    "please",
    "could",
    "you",
    "check",
    "why",
    "the",
    "what",
    "is",
    "status",
    "of",
    "today",
    "tomorrow",
    "yesterday",
    "again",
    "thanks",
    "done",
]
TOOLS = ["exec", "read", "write", "web_search", "sessions_list", "sessions_history", "browser"]


# --- what the rows say ------------------------------------------------------------------------


def sentence(rng: random.Random, low: int, high: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))
    return text[0].upper() + text[1:] + rng.choice([".", "?", "."])


def message_templates(rng: random.Random, count: int) -> dict[str, list[dict]]:
    """Pools of message field values by type; a page of 200 stays under the 80 KiB history cap."""
    pools: dict[str, list[dict]] = {"user": [], "assistant": [], "call": [], "result": []}
    for i in range(count):
        pools["user"].append(
            {
                "role": "user",
                "content": [{"type": "text", "text": sentence(rng, 4, 25)}]
                if i % 4
                else sentence(rng, 4, 25),
                "extra": {},
            }
        )
        pools["assistant"].append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": sentence(rng, 6, 40)}],
                "usage": {"input": rng.randint(200, 9000), "output": rng.randint(10, 600)},
                "extra": {"provider": "openai", "model": "gpt-5-mini", "stopReason": "stop"},
            }
        )
        call_id = f"call_{rng.getrandbits(48):012x}"
        tool = rng.choice(TOOLS)
        pools["call"].append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": call_id,
                        "name": tool,
                        "arguments": {"query": sentence(rng, 2, 6)},
                    }
                ],
                "usage": {"input": rng.randint(200, 9000), "output": rng.randint(10, 200)},
                "extra": {"provider": "openai", "model": "gpt-5-mini", "stopReason": "toolUse"},
            }
        )
        pools["result"].append(
            {
                "role": "toolResult",
                "content": [{"type": "text", "text": sentence(rng, 5, 30)}],
                "tool_call_id": call_id,
                "tool_name": tool,
                "extra": {"isError": rng.random() < 0.05},
            }
        )
    return pools


def role_script(rng: random.Random, length: int, pool_size: int) -> tuple[list, list[int]]:
    """A long run of (type, pool index): user → [toolCall → toolResult]* → assistant, repeated.
    Returns it with the positions where turns start, so sessions can begin at a user message."""
    script: list[tuple[str, int]] = []
    starts: list[int] = []
    while len(script) < length:
        starts.append(len(script))
        script.append(("user", rng.randrange(pool_size)))
        while rng.random() < 0.3:
            j = rng.randrange(pool_size)
            script.append(("call", j))
            script.append(("result", j))
        script.append(("assistant", rng.randrange(pool_size)))
    return script, starts


def session_plans(rng: random.Random, count: int, now: int, settings) -> list[dict]:
    """Session field values (no ids yet). The first is the deep session."""
    plans = [
        {
            "key": DEEP_KEY,
            "agent_id": "main",
            "last_channel": "telegram",
            "last_to": "telegram:100001",
            "delivery_context": {"channel": "telegram", "to": "telegram:100001"},
            "updated_at": now - 1000,
        }
    ]
    parents: dict[str, list[str]] = {"main": [DEEP_KEY], "research": []}
    if count > 1:
        plans.append({"key": "agent:research:main", "agent_id": "research", "updated_at": now})
        parents["research"].append("agent:research:main")
    n = len(plans)
    while len(plans) < count:
        n += 1
        agent = "main" if rng.random() < 0.8 else "research"
        roll = rng.random()
        plan: dict = {"agent_id": agent}
        if roll < 0.35:
            channel, word = rng.choice(GROUP_CHANNELS)
            plan["key"] = f"agent:{agent}:{channel}:{word}:{n}"
            plan.update(channel=channel, chat_type=word, subject=f"#{rng.choice(WORDS)}-{n}")
            plan["display_name"] = f"{channel}:{plan['subject']}"
            plan["origin"] = {"provider": channel, "chatType": word, "from": f"{channel}:{n}"}
            parents[agent].append(plan["key"])
        elif roll < 0.60:
            channel = rng.choice(DIRECT_CHANNELS)
            peer = f"{channel}:{rng.randint(10**6, 10**9)}"
            plan["key"] = f"agent:{agent}:{channel}:direct:{peer.split(':')[1]}-{n}"
            plan.update(chat_type="direct", last_channel=channel, last_to=peer)
            plan["delivery_context"] = {"channel": channel, "to": peer}
            parents[agent].append(plan["key"])
        elif roll < 0.75:
            job = rng.randint(1, 400)
            if rng.random() < 0.7:
                plan["key"] = (
                    f"agent:{agent}:cron:job-{job}:run:{uuid.UUID(int=rng.getrandbits(128))}"
                )
            else:
                plan["key"] = f"agent:{agent}:cron:job-{job}-{n}"
            plan["label"] = f"cron job-{job}"
        elif roll < 0.90:
            plan["key"] = f"agent:{agent}:subagent:{uuid.UUID(int=rng.getrandbits(128))}"
            plan["spawned_by"] = rng.choice(parents[agent][-2000:]) if parents[agent] else ""
            plan["spawn_depth"] = 1 if plan["spawned_by"] else 0
            plan["label"] = f"task-{n}"
            plan["run_status"] = rng.choice(["done", "done", "done", "failed", "timeout"])
            plan["archived"] = rng.random() < 0.3
        elif roll < 0.95:
            plan["key"] = f"agent:{agent}:hook:gmail:{n}"
        elif roll < 0.98:
            plan["key"] = f"agent:{agent}:node-host{n % 50}-{n}"
        else:
            plan["key"] = f"agent:{agent}:webchat:{uuid.UUID(int=rng.getrandbits(128))}"
            plan.update(channel="webchat")
        plan["updated_at"] = now - rng.randint(60_000, 30 * DAY_MS)
        plans.append(plan)

    for plan in plans:
        session = Session(
            key=plan["key"],
            agent_id=plan["agent_id"],
            channel=plan.get("channel", ""),
            chat_type=plan.get("chat_type", ""),
            origin=plan.get("origin"),
            delivery_context=plan.get("delivery_context"),
            last_channel=plan.get("last_channel", ""),
        )
        session.refresh_derived(settings)
        plan["kind"], plan["row_channel"] = session.kind, session.row_channel
    return plans


def message_counts(rng: random.Random, sessions: int, total: int, deep: int) -> list[int]:
    """Messages per session: `deep` for the first, the rest skewed (log-normal) over the others."""
    deep = min(deep, total)
    counts = [deep] + [0] * (sessions - 1)
    rest = total - deep
    if sessions == 1 or rest <= 0:
        counts[0] = total
        return counts
    weights = [rng.lognormvariate(0, 1.2) for _ in range(sessions - 1)]
    scale = rest / sum(weights)
    for i, w in enumerate(weights, start=1):
        counts[i] = int(w * scale)
    for _ in range(rest - sum(counts[1:])):
        counts[rng.randrange(1, sessions)] += 1
    return counts


# --- writing ----------------------------------------------------------------------------------


def utc_text(ms: int, *, postgres: bool) -> str:
    """A timestamp as the database stores it (SQLite: naive UTC text, as Django writes it)."""
    base = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000))
    return f"{base}.{ms % 1000:03d}000" + ("+00" if postgres else "")


def copy_escape(value) -> str:
    if value is None:
        return "\\N"
    text = value if isinstance(value, str) else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def session_values(plan: dict, *, pk: int, last_seq: int, first_ms: int, rng) -> dict:
    tokens_in = rng.randint(1000, 120_000) if last_seq else None
    tokens_out = rng.randint(100, 20_000) if last_seq else None
    archived = plan.get("archived", False)
    return {
        "id": pk,
        "key": plan["key"],
        "session_id": uuid.UUID(int=rng.getrandbits(128), version=4),
        "agent_id": plan["agent_id"],
        "kind": plan["kind"],
        "row_channel": plan["row_channel"],
        "label": plan.get("label", ""),
        "display_name": plan.get("display_name", ""),
        "subject": plan.get("subject", ""),
        "channel": plan.get("channel", ""),
        "chat_type": plan.get("chat_type", ""),
        "origin": plan.get("origin"),
        "delivery_context": plan.get("delivery_context"),
        "last_channel": plan.get("last_channel", ""),
        "last_to": plan.get("last_to", ""),
        "last_account_id": "",
        "last_thread_id": "",
        "model": AGENTS[plan["agent_id"]]["model"],
        "model_provider": "openai",
        "context_tokens": 200_000,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": (tokens_in + tokens_out) if last_seq else None,
        "thinking_level": "",
        "verbose_level": "",
        "reasoning_level": "",
        "system_sent": True if last_seq else None,
        "aborted_last_run": False if last_seq else None,
        "send_policy": "",
        "spawned_by": plan.get("spawned_by", ""),
        "spawn_depth": plan.get("spawn_depth", 0),
        "extra": {},
        "last_seq": last_seq,
        "run_status": plan.get("run_status", ""),
        "updated_at": plan["updated_at"],
        "changed_ms": plan["updated_at"],
        "created_at": datetime.fromtimestamp(first_ms / 1000, tz=UTC),
        "archived_at": datetime.fromtimestamp(plan["updated_at"] / 1000 + 3600, tz=UTC)
        if archived
        else None,
    }


SESSION_FIELDS = [f for f in Session._meta.concrete_fields]
SESSION_COLUMNS = [f.column for f in SESSION_FIELDS]
MESSAGE_COLUMNS = ["session_id", "seq", "timestamp", "created_at", "role", "content",
                   "provenance", "tool_call_id", "tool_name", "usage", "extra",
                   "redact_needed"]  # fmt: skip


def template_values(t: dict) -> list:
    """Message columns after created_at, as the database stores them (JSON as text)."""
    return [
        t["role"],
        json.dumps(t["content"]),
        None,
        t.get("tool_call_id", ""),
        t.get("tool_name", ""),
        json.dumps(t["usage"]) if "usage" in t else None,
        json.dumps(t["extra"]),
        # decided as the store decides it, once per template
        sanitize.needs_redaction(t),
    ]


class Loader:
    """The backend-specific part: reset, session rows, message rows, finishing touches."""

    def __init__(self, batch: int):
        self.batch = batch
        self.postgres = connection.vendor == "postgresql"
        connection.ensure_connection()
        self.raw = connection.connection  # psycopg 3 or sqlite3 connection

    def has_data(self) -> bool:
        return Session.objects.exists() or Message.objects.exists()

    def reset(self) -> None:
        tables = ["sessions_app_message", "sessions_app_run", "sessions_app_session"]
        if self.postgres:
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
            return
        # Foreign keys off so DELETE can use SQLite's truncate optimisation.
        self.raw.execute("PRAGMA foreign_keys=OFF")
        for table in tables:
            self.raw.execute(f"DELETE FROM {table}")
        self.raw.execute(
            f"DELETE FROM sqlite_sequence WHERE name IN ({','.join(repr(t) for t in tables)})"
        )
        self.raw.execute("PRAGMA foreign_keys=ON")
        self.raw.execute("VACUUM")

    def begin_load(self) -> None:
        if self.postgres:
            self.raw.execute("SET synchronous_commit = off")
            self.raw.execute("SET maintenance_work_mem = '512MB'")
        else:
            for pragma in ("synchronous=OFF", "foreign_keys=OFF", "cache_size=-1000000",
                           "temp_store=MEMORY"):  # fmt: skip
                self.raw.execute(f"PRAGMA {pragma}")

    def write_sessions(self, rows: list[dict]) -> None:
        prepped = [
            # A column added to Session since this was written gets its model default.
            [
                f.get_db_prep_save(
                    row[f.column] if f.column in row else f.get_default(), connection
                )
                for f in SESSION_FIELDS
            ]
            for row in rows
        ]
        cols = ", ".join(SESSION_COLUMNS)
        if self.postgres:
            with self.raw.cursor() as cur:
                with cur.copy(f"COPY sessions_app_session ({cols}) FROM STDIN") as copy:
                    for values in prepped:
                        copy.write_row(values)
                cur.execute(
                    "SELECT setval(pg_get_serial_sequence('sessions_app_session', 'id'), "
                    "(SELECT max(id) FROM sessions_app_session))"
                )
            return
        marks = ", ".join("?" * len(SESSION_COLUMNS))
        self.raw.execute("BEGIN IMMEDIATE")
        self.raw.executemany(f"INSERT INTO sessions_app_session ({cols}) VALUES ({marks})", prepped)
        self.raw.execute("COMMIT")

    def message_writer(self, templates: dict):
        """A function taking a list of (session pk, seq, ms, template key) rows and storing them."""
        cols = ", ".join(MESSAGE_COLUMNS)
        if self.postgres:
            tails = {k: "\t".join(copy_escape(v) for v in vals) for k, vals in templates.items()}

            def write(rows):
                lines = [
                    f"{sid}\t{seq}\t{ms}\t{utc_text(ms, postgres=True)}\t{tails[t]}\n"
                    for sid, seq, ms, t in rows
                ]
                copy_sql = f"COPY sessions_app_message ({cols}) FROM STDIN"
                with self.raw.cursor() as cur, cur.copy(copy_sql) as copy:
                    for start in range(0, len(lines), 5000):
                        copy.write("".join(lines[start : start + 5000]))

            return write

        tails = {k: tuple(vals) for k, vals in templates.items()}
        sql = f"INSERT INTO sessions_app_message ({cols}) VALUES ({', '.join('?' * len(MESSAGE_COLUMNS))})"

        def write(rows):
            self.raw.execute("BEGIN IMMEDIATE")
            self.raw.executemany(
                sql,
                (
                    (sid, seq, ms, utc_text(ms, postgres=False), *tails[t])
                    for sid, seq, ms, t in rows
                ),
            )
            self.raw.execute("COMMIT")

        return write

    def finish(self) -> None:
        if self.postgres:
            self.raw.execute("VACUUM ANALYZE sessions_app_session")
            self.raw.execute("VACUUM ANALYZE sessions_app_message")
        else:
            # No ANALYZE: a deployed SQLite database never gets one unless the app runs it, and
            # the benchmark should see the plans the app would get.
            self.raw.execute("PRAGMA foreign_keys=ON")
            self.raw.execute("PRAGMA synchronous=NORMAL")
            self.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def generate_postgresql(args, started: float) -> dict:
    """The bulk-SQL load of bench/shapes.py; returns the meta fields."""
    profile = shapes.PROFILES[args.profile]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sessions_app_session LIMIT 1")
        if cursor.fetchone() and not args.reset:
            raise SystemExit("The database already has sessions; use --reset to replace them.")
        t = time.perf_counter()
        cursor.execute(
            "TRUNCATE sessions_app_message, sessions_app_run, sessions_app_session "
            "RESTART IDENTITY CASCADE"
        )
        print(f"reset: {time.perf_counter() - t:.1f}s")
    for agent_id in shapes.agent_ids(profile):
        data = AGENTS.get(agent_id, {"name": agent_id, "model": "gpt-5-mini"})
        upsert_agent(
            api_key=None, agent_id=agent_id, data={**data, "backend": {"type": "scripted"}}
        )
    now = int(time.time() * 1000)
    timings = {}
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
        cursor.execute("SET maintenance_work_mem = '512MB'")
        dropped = []
        for table in ("sessions_app_session", "sessions_app_message"):
            for name, definition in shapes.secondary_indexes(cursor, table):
                cursor.execute(f"DROP INDEX {name}")
                dropped.append(definition)
        t = time.perf_counter()
        cursor.execute(
            shapes.sessions_sql(
                profile,
                args.sessions,
                now_ms=now,
                messages_per_session=args.messages_per_session,
                deep_messages=args.deep_session_messages,
            )
        )
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('sessions_app_session', 'id'), %s)",
            [args.sessions],
        )
        timings["sessions"] = round(time.perf_counter() - t, 1)
        print(f"sessions: {args.sessions:,} rows in {timings['sessions']}s", flush=True)
        t = time.perf_counter()
        shapes.load_templates(cursor)
        written = 0
        chunk = 100_000
        for first in range(1, args.sessions + 1, chunk):
            cursor.execute(shapes.messages_sql(first, first + chunk - 1))
            written += cursor.rowcount
            print(f"  … {written:,} messages ({time.perf_counter() - t:.0f}s)", flush=True)
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('sessions_app_message', 'id'), "
            "(SELECT max(id) FROM sessions_app_message))"
        )
        timings["messages"] = round(time.perf_counter() - t, 1)
        print(f"messages: {written:,} rows in {timings['messages']}s", flush=True)
        t = time.perf_counter()
        for definition in dropped:
            cursor.execute(definition)
        timings["indexes"] = round(time.perf_counter() - t, 1)
        print(f"indexes: {len(dropped)} built in {timings['indexes']}s", flush=True)
    t = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE sessions_app_session")
        cursor.execute("VACUUM ANALYZE sessions_app_message")
    timings["vacuum_analyze"] = round(time.perf_counter() - t, 1)
    timings["total"] = round(time.perf_counter() - started, 1)
    print(f"VACUUM ANALYZE: {timings['vacuum_analyze']}s; total {timings['total']}s")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE spawned_by <> ''), "
            "count(*) FILTER (WHERE agent_id = 'main') FROM sessions_app_session"
        )
        sessions, subagents, main_agent = cursor.fetchone()
    return {
        "profile": args.profile,
        "profile_description": profile.description,
        "sessions": sessions,
        "subagent_sessions": subagents,
        "main_agent_sessions": main_agent,
        "messages": written,
        "deep_session_messages": args.deep_session_messages,
        "timings_s": timings,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--deep-session-messages", type=int, default=1_200_000)
    parser.add_argument("--batch", type=int, default=200_000, help="message rows per COPY/commit")
    parser.add_argument("--reset", action="store_true", help="delete existing sessions first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=sorted(shapes.PROFILES), default="today")
    parser.add_argument(
        "--messages-per-session", type=int, default=4, help="PostgreSQL: the average"
    )
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.messages < 0:
        parser.error("--sessions must be ≥ 1 and --messages ≥ 0")

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    if connection.vendor == "postgresql":
        meta = {
            "backend": "postgresql",
            "database": str(connection.settings_dict["NAME"]),
            "deep_session_key": DEEP_KEY,
            **generate_postgresql(args, started),
            "generated_at": datetime.now(tz=UTC).isoformat(),
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / "meta-postgresql.json"
        path.write_text(json.dumps(meta, indent=2) + "\n")
        print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.profile != "today":
        parser.error("SQLite generates the `today` profile only")
    loader = Loader(args.batch)
    backend = "postgresql" if loader.postgres else "sqlite"
    print(f"backend: {backend} ({connection.settings_dict['NAME']})")
    if loader.has_data():
        if not args.reset:
            print("The database already has sessions or messages; use --reset to replace them.")
            return 2
        t = time.perf_counter()
        loader.reset()
        print(f"reset: {time.perf_counter() - t:.1f}s")

    for agent_id, data in AGENTS.items():
        upsert_agent(
            api_key=None, agent_id=agent_id, data={**data, "backend": {"type": "scripted"}}
        )
    settings = GatewayConfig.load().key_settings

    rng = random.Random(args.seed)
    now = int(time.time() * 1000)
    t = time.perf_counter()
    plans = session_plans(rng, args.sessions, now, settings)
    counts = message_counts(rng, args.sessions, args.messages, args.deep_session_messages)
    pools = message_templates(rng, 2000)
    longest = max(counts)
    script, starts = role_script(rng, longest + max(counts[1:] or [0]) + 1000, 2000)
    templates = {(kind, i): template_values(pools[kind][i]) for kind in pools for i in range(2000)}
    print(f"planned {len(plans):,} sessions, {sum(counts):,} messages "
          f"({time.perf_counter() - t:.1f}s)")  # fmt: skip

    loader.begin_load()
    # Sessions: spacing of messages decides created_at, so walk the plans once here.
    t = time.perf_counter()
    session_rows, spans = [], []
    for pk, (plan, n) in enumerate(zip(plans, counts, strict=True), start=1):
        # The deep session spans the whole 30 days; others are 2 s to 10 min between messages.
        step = max(1, (30 * DAY_MS) // max(n, 1)) if pk == 1 else rng.randint(2_000, 600_000)
        first_ms = plan["updated_at"] - n * step
        spans.append((pk, n, first_ms, step))
        session_rows.append(session_values(plan, pk=pk, last_seq=n, first_ms=first_ms, rng=rng))
    loader.write_sessions(session_rows)
    session_s = time.perf_counter() - t
    print(f"sessions: {len(session_rows):,} rows in {session_s:.1f}s "
          f"({len(session_rows) / session_s:,.0f} rows/s)")  # fmt: skip

    # Messages: each session replays a slice of the role script from a random turn start.
    t = time.perf_counter()
    write = loader.message_writer(templates)
    pending: list[tuple] = []
    written = 0
    last_report = t
    for pk, n, first_ms, step in spans:
        if not n:
            continue
        offset = 0 if pk == 1 else starts[rng.randrange(len(starts) // 2)]
        for seq in range(1, n + 1):
            pending.append((pk, seq, first_ms + seq * step, script[offset + seq - 1]))
            if len(pending) >= args.batch:
                write(pending)
                written += len(pending)
                pending = []
                if time.perf_counter() - last_report > 10:
                    last_report = time.perf_counter()
                    rate = written / (last_report - t)
                    print(f"  … {written:,} messages ({rate:,.0f} rows/s)", flush=True)
    if pending:
        write(pending)
        written += len(pending)
    message_s = time.perf_counter() - t
    print(f"messages: {written:,} rows in {message_s:.1f}s "
          f"({written / max(message_s, 1e-9):,.0f} rows/s)")  # fmt: skip

    t = time.perf_counter()
    loader.finish()
    finish_s = time.perf_counter() - t
    print(f"finish ({'VACUUM ANALYZE' if loader.postgres else 'checkpoint'}): {finish_s:.1f}s")
    total_s = time.perf_counter() - started
    print(f"total: {total_s:.1f}s")
    print(f"deep session: {DEEP_KEY} ({counts[0]:,} messages)")

    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {
        "backend": backend,
        "database": str(connection.settings_dict["NAME"]),
        "deep_session_key": DEEP_KEY,
        "deep_session_messages": counts[0],
        "sessions": len(session_rows),
        "messages": written,
        "seed": args.seed,
        "generated_at": datetime.now(tz=UTC).isoformat(),
        "timings_s": {
            "sessions": round(session_s, 1),
            "messages": round(message_s, 1),
            "finish": round(finish_s, 1),
            "total": round(total_s, 1),
        },
        "message_rows_per_s": round(written / max(message_s, 1e-9)),
    }
    path = RESULTS / f"meta-{backend}.json"
    path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
