"""Data shapes for the benchmarks and the query-plan test: sessions and messages written by
PostgreSQL itself (INSERT … SELECT over generate_series), so a million sessions take seconds.

Every value is a function of the row number (hashint8), so a profile is the same data each time.
Session `g` has id `g` (the tables are emptied with RESTART IDENTITY first). Session 1 is the deep
session (`agent:main:main`, the history benchmarks' target); session 2 `agent:research:main`;
session 3 `agent:main:orchestrator`, the one parent of the one-parent profiles. Giant transcripts
are sessions 4 … 3 + giants. The parent and the giants are among the most recently active, so a
list's first page holds them: the case a data shape can make slow.

Importing this module needs Django set up but reads nothing; bench/generate.py,
bench/children_bench.py and tests/reads/test_list_query_plans.py call it (the last two through
add_agents and grow).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

DAY_MS = 86_400_000
DEEP_KEY = "agent:main:main"
PARENT_KEY = "agent:main:orchestrator"
HASH_RANGE = 1 << 20  # hashes are taken modulo this: shares are accurate to 1e-6


@dataclass(frozen=True)
class Profile:
    """How the sessions are shaped. `subagents` is the share of sub-agent sessions; with
    `one_parent` they are all children of PARENT_KEY (`children` fixes their number instead of a
    share), else each picks one of the 2,000 sessions before it. `dominant` is the share of the
    `main` agent; the rest is spread over `agents` other agents. `giants` sessions hold
    `giant_messages` messages each."""

    description: str
    subagents: float = 0.0
    one_parent: bool = False
    children: int = 0
    dominant: float = 0.8
    agents: int = 1
    giants: int = 0
    giant_messages: int = 0


PROFILES: dict[str, Profile] = {
    "none": Profile("no sub-agents at all"),
    "today": Profile("15 % sub-agents of thousands of parents (the earlier data set)", 0.15),
    "parent-10k": Profile("one parent with 10,000 children", one_parent=True, children=10_000),
    "parent-40pct": Profile("40 % of sessions sub-agents of one parent", 0.40, one_parent=True),
    "agent-95pct": Profile(
        "95 % of sessions of one agent (19 others)", 0.15, dominant=0.95, agents=20
    ),  # fmt: skip
    "giants": Profile(
        "a handful of giant transcripts (5 × 200,000 messages)",
        0.15,
        giants=5,
        giant_messages=200_000,
    ),  # fmt: skip
}


def agent_ids(profile: Profile) -> list[str]:
    """`main` first, then `research` (session 2's), then the profile's others."""
    if profile.agents <= 1:
        return ["main", "research"]
    return ["main", "research", *(f"agent{i:02d}" for i in range(2, profile.agents + 1))]


# Key shapes (besides sub-agents): key suffix, then the routing fields; kind and row channel are
# derived by the app (derived_fields) so they match what it would store.
_SHAPES = [
    ("discord:group:g", {"channel": "discord", "chat_type": "group"}),
    ("telegram:direct:", {"chat_type": "direct", "last_channel": "telegram"}),
    ("cron:job-", {}),
    ("hook:gmail:", {}),
]
_SHAPE_BOUNDS = [0.40, 0.70, 0.88, 1.0]  # cumulative shares of the shapes above


def derived_fields() -> dict[str, tuple[str, str]]:
    """(kind, row_channel) per shape suffix and for sub-agents, as Session.refresh_derived says."""
    from sessions_app.models import GatewayConfig, Session

    settings = GatewayConfig.load().key_settings
    found = {}
    for suffix, fields in [*_SHAPES, ("subagent:", {})]:
        session = Session(key=f"agent:main:{suffix}1", agent_id="main", **fields)
        session.refresh_derived(settings)
        found[suffix] = (session.kind, session.row_channel)
    for key in (DEEP_KEY, PARENT_KEY, "agent:research:main"):
        session = Session(key=key, agent_id=key.split(":")[1])
        session.refresh_derived(settings)
        found[key] = (session.kind, session.row_channel)
    return found


def _h(expr: str, salt: int) -> str:
    """A deterministic value in [0, HASH_RANGE) from an integer SQL expression."""
    return f"(hashint8(({expr})::bigint * 7919 + {salt}) & {HASH_RANGE - 1})"


# The session columns sessions_sql computes; every other column gets its model default
# (_defaulted_columns), so a column added to Session does not break the generator.
COMPUTED_SQL = """id, key, session_id, agent_id, kind, row_channel, label, display_name, subject,
    channel, chat_type, origin, delivery_context, last_channel, last_to, last_account_id,
    last_thread_id, model, model_provider, context_tokens, input_tokens, output_tokens,
    total_tokens, thinking_level, verbose_level, reasoning_level, system_sent, aborted_last_run,
    send_policy, spawned_by, spawn_depth, extra, last_seq, run_status, updated_at, created_at,
    archived_at, changed_ms, change_reason, turns_waiting"""
COMPUTED_COLUMNS = frozenset(name.strip() for name in COMPUTED_SQL.split(","))


def _defaulted_columns() -> list[tuple[str, str]]:
    """(column, SQL literal of the model's default) for each Session column not computed."""
    from sessions_app.models import Session

    rest = []
    for field in Session._meta.concrete_fields:
        if field.column in COMPUTED_COLUMNS:
            continue
        value = field.get_default()
        if value is None:
            literal = "NULL"
        elif isinstance(value, bool):
            literal = "true" if value else "false"
        elif isinstance(value, (int, float)):
            literal = repr(value)
        elif isinstance(value, (dict, list)):
            literal = _lit(json.dumps(value)) + "::jsonb"
        else:
            literal = _lit(str(value))
        rest.append((field.column, literal))
    return rest


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _share(fraction: float) -> int:
    return int(round(fraction * HASH_RANGE))


def sessions_sql(
    profile: Profile, count: int, *, now_ms: int, messages_per_session: int, deep_messages: int
) -> str:
    """One INSERT … SELECT writing `count` sessions (last_seq set; messages_sql writes them)."""
    derived = derived_fields()
    rest = _defaulted_columns()
    others = agent_ids(profile)[1:]
    fixed = 3 + profile.giants  # sessions 1 … fixed have set roles

    def is_sub(x: str) -> str:
        if profile.one_parent and profile.children:
            step = max(1, (count - fixed) // max(profile.children, 1))
            return f"({x} > {fixed} AND ({x} - {fixed}) % {step} = 0 AND ({x} - {fixed}) / {step} <= {profile.children})"
        if not profile.subagents:
            return "false"
        return f"({x} > {fixed} AND {_h(x, 1)} < {_share(profile.subagents)})"

    def agent(x: str) -> str:
        pick = f"(ARRAY[{', '.join(_lit(a) for a in others)}])[1 + {x} % {len(others)}]"
        return f"CASE WHEN {_h(x, 2)} < {_share(profile.dominant)} THEN 'main' ELSE {pick} END"

    def shape(x: str) -> str:
        """The index into _SHAPES of a non-sub-agent session."""
        whens = " ".join(
            f"WHEN {_h(x, 3)} < {_share(bound)} THEN {i}"
            for i, bound in enumerate(_SHAPE_BOUNDS[:-1])
        )
        return f"CASE {whens} ELSE {len(_SHAPES) - 1} END"

    def key(x: str, sub: str, ag: str, sh: str) -> str:
        parts = " ".join(
            f"WHEN {i} THEN {_lit(suffix)} || {x}" for i, (suffix, _) in enumerate(_SHAPES)
        )
        return (
            f"CASE WHEN {x} = 1 THEN {_lit(DEEP_KEY)} WHEN {x} = 2 THEN 'agent:research:main' "
            f"WHEN {x} = 3 THEN {_lit(PARENT_KEY)} "
            f"WHEN {sub} THEN 'agent:' || {ag} || ':subagent:' || md5({x}::text)::uuid "
            f"ELSE 'agent:' || {ag} || ':' || CASE {sh} {parts} END END"
        )

    def by_shape(column: str, default: str = "''") -> str:
        whens = " ".join(
            f"WHEN {i} THEN {_lit(fields[column])}"
            for i, (_, fields) in enumerate(_SHAPES)
            if column in fields
        )
        return f"CASE WHEN sub OR g <= {fixed} THEN {default} ELSE CASE sh {whens} ELSE {default} END END"

    def derived_case(index: int) -> str:
        whens = " ".join(
            f"WHEN {i} THEN {_lit(derived[suffix][index])}" for i, (suffix, _) in enumerate(_SHAPES)
        )
        return (
            f"CASE WHEN g = 1 THEN {_lit(derived[DEEP_KEY][index])} "
            f"WHEN g = 2 THEN {_lit(derived['agent:research:main'][index])} "
            f"WHEN g = 3 THEN {_lit(derived[PARENT_KEY][index])} "
            f"WHEN sub THEN {_lit(derived['subagent:'][index])} ELSE CASE sh {whens} END END"
        )

    # The parent's row number: session 3, or one of the 2,000 sessions before this one.
    parent = "3" if profile.one_parent else f"greatest(4, g - 1 - {_h('g', 4)} % 2000)"
    one_parent = "true" if profile.one_parent else "false"
    spread = 2 * messages_per_session + 1
    # The parent and the giants are recent (a first page holds them); the rest spread over 30 days.
    updated = (
        f"CASE WHEN g <= {fixed} THEN {now_ms} - 1000 * g "
        f"ELSE {now_ms} - 60000 - {_h('g', 5)}::bigint * {30 * DAY_MS // HASH_RANGE} END"
    )
    messages = (
        f"CASE WHEN g = 1 THEN {deep_messages} WHEN g BETWEEN 4 AND {fixed} THEN {profile.giant_messages} "
        f"ELSE {_h('g', 6)} % {spread} END"
    )
    return f"""
INSERT INTO sessions_app_session (
    {COMPUTED_SQL}{"".join(", " + c for c, _ in rest)})
SELECT g, k, md5('s' || g)::uuid::text, ag, {derived_case(0)}, {derived_case(1)},
    CASE WHEN sub THEN 'task-' || g ELSE '' END, '', '', {by_shape("channel")},
    {by_shape("chat_type")}, NULL,
    CASE WHEN NOT sub AND g > {fixed} AND sh = 1
         THEN jsonb_build_object('channel', 'telegram', 'to', 'telegram:' || g) END,
    {by_shape("last_channel")}, CASE WHEN NOT sub AND g > {fixed} AND sh = 1 THEN 'telegram:' || g ELSE '' END,
    '', '', 'gpt-5-mini', 'openai', 200000,
    CASE WHEN n > 0 THEN 1000 + g % 50000 END, CASE WHEN n > 0 THEN 100 + g % 9000 END,
    CASE WHEN n > 0 THEN 1100 + g % 50000 + g % 9000 END, '', '', '',
    CASE WHEN n > 0 THEN true END, CASE WHEN n > 0 THEN false END, '',
    CASE WHEN sub THEN pk ELSE '' END,
    CASE WHEN NOT sub THEN 0 WHEN {one_parent} OR NOT psub THEN 1 ELSE 2 END,
    '{{}}'::jsonb, n,
    CASE WHEN sub THEN (ARRAY['done', 'done', 'done', 'failed', 'timeout'])[1 + g % 5] ELSE '' END,
    u, to_timestamp((u - 600000::bigint * n) / 1000.0),
    CASE WHEN sub AND {_h("g", 7)} < {_share(0.3)} THEN to_timestamp(u / 1000.0 + 3600) END,
    u, '', false{"".join(", " + v for _, v in rest)}
FROM (
    SELECT g, sub, psub, sh, n, u, ag, {key("g", "sub", "ag", "sh")} AS k,
        {key("p", "psub", "pag", "psh")} AS pk
    FROM (
        SELECT g, sub, p, psub, sh, psh, n, u,
            CASE WHEN g = 1 OR g = 3 THEN 'main' WHEN g = 2 THEN 'research'
                 WHEN sub THEN pag ELSE {agent("g")} END AS ag,
            pag
        FROM (
            SELECT g, {is_sub("g")} AS sub, {parent} AS p, {shape("g")} AS sh,
                {messages} AS n, {updated} AS u
            FROM generate_series(1, {count}) AS g
        ) a,
        LATERAL (SELECT {is_sub("p")} AS psub, {shape("p")} AS psh,
                        CASE WHEN p = 3 THEN 'main' ELSE {agent("p")} END AS pag) b
    ) c
) d
"""


def message_templates() -> list[dict]:
    """A cycle of user → toolCall → toolResult → assistant messages, 64 of each, with the
    columns as stored (JSON as text) and redact_needed decided as the store decides it."""
    from sessions_app.lib import sanitize

    words = ["deploy", "build", "logs", "failing", "test", "retry", "cache", "database", "index", "query", "latency", "review", "branch", "merge", "release", "notes", "schedule", "meeting", "summary", "draft"]  # fmt: skip
    templates = []
    for i in range(64):
        text = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(8 + i % 20)) + "."
        call_id = f"call_{i:06d}"
        for message in (
            {"role": "user", "content": [{"type": "text", "text": text.capitalize()}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": call_id, "name": "exec", "arguments": {"q": text}}
                ],
                "usage": {"input": 900 + i, "output": 40 + i},
                "extra": {"provider": "openai", "model": "gpt-5-mini", "stopReason": "toolUse"},
            },
            {
                "role": "toolResult",
                "content": [{"type": "text", "text": text}],
                "tool_call_id": call_id,
                "tool_name": "exec",
                "extra": {"isError": False},
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done: " + text}],
                "usage": {"input": 1200 + i, "output": 80 + i},
                "extra": {"provider": "openai", "model": "gpt-5-mini", "stopReason": "stop"},
            },
        ):
            templates.append(
                {
                    "role": message["role"],
                    "content": json.dumps(message["content"]),
                    "tool_call_id": message.get("tool_call_id", ""),
                    "tool_name": message.get("tool_name", ""),
                    "usage": json.dumps(message["usage"]) if "usage" in message else None,
                    "extra": json.dumps(message.get("extra", {})),
                    "redact_needed": sanitize.needs_redaction(message),
                }
            )
    return templates


def messages_sql(first_id: int, last_id: int) -> str:
    """Messages 1 … last_seq of sessions first_id … last_id, from the temp table `templates`
    (message_templates(), numbered from 0); message seq of a session follows the template cycle,
    so a user message opens every turn."""
    return f"""
INSERT INTO sessions_app_message (session_id, seq, role, content, provenance, tool_call_id,
    tool_name, usage, timestamp, extra, redact_needed, created_at)
SELECT s.id, q, t.role, t.content, NULL, t.tool_call_id, t.tool_name, t.usage,
    s.updated_at - (s.last_seq - q)::bigint * 2000, t.extra, t.redact_needed,
    to_timestamp((s.updated_at - (s.last_seq - q)::bigint * 2000) / 1000.0)
FROM sessions_app_session s
CROSS JOIN LATERAL generate_series(1, s.last_seq) AS q
JOIN templates t ON t.i = ((s.id % 64) * 4 + (q - 1)) % 256
WHERE s.id BETWEEN {first_id} AND {last_id}
"""


def create_templates_sql() -> str:
    return """
CREATE TEMP TABLE templates (i int PRIMARY KEY, role text, content jsonb, tool_call_id text,
    tool_name text, usage jsonb, extra jsonb, redact_needed boolean) ON COMMIT PRESERVE ROWS
"""


def load_templates(cursor) -> None:
    cursor.execute("DROP TABLE IF EXISTS templates")
    cursor.execute(create_templates_sql())
    rows = [
        (
            i,
            t["role"],
            t["content"],
            t["tool_call_id"],
            t["tool_name"],
            t["usage"],
            t["extra"],
            t["redact_needed"],
        )  # fmt: skip
        for i, t in enumerate(message_templates())
    ]
    cursor.executemany("INSERT INTO templates VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", rows)


def secondary_indexes(cursor, table: str) -> list[tuple[str, str]]:
    """(name, definition) of the table's indexes that back no constraint: the ones a bulk load
    drops and builds again afterwards (faster than maintaining them row by row)."""
    cursor.execute(
        """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        WHERE i.indrelid = %s::regclass AND NOT i.indisprimary
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
        """,
        [table],
    )
    return list(cursor.fetchall())


def copies_sql(seeded: int, count: int) -> str:
    """One INSERT … SELECT growing sessions 1 … `seeded` to `count` sessions by copying them
    in turn, as a bulk grow does (the side-by-side scale step: copies of a seeded batch, no
    sub-agent among them). Copy `g` gets id `g` and is older than every row before it, so the
    heap's order follows the activity index's (the correlation that makes a walk of that index
    look cheap to the planner). Messages are not copied."""
    from sessions_app.models import Session

    computed = {
        "id": "g",
        "key": "s.key || '-copy' || g",
        "session_id": "md5('copy' || g)::uuid::text",
        "updated_at": "oldest.at - 1000 - g",
        "changed_ms": "oldest.at - 1000 - g",
        "last_seq": "0",
    }
    columns = [f.column for f in Session._meta.concrete_fields]
    values = ", ".join(computed.get(c, f"s.{c}") for c in columns)
    return f"""
INSERT INTO sessions_app_session ({", ".join(columns)})
SELECT {values}
FROM generate_series({seeded + 1}, {count}) AS g
CROSS JOIN (SELECT min(updated_at) AS at FROM sessions_app_session) AS oldest
JOIN sessions_app_session s ON s.id = 1 + (g - 1) % {seeded}
"""


def add_agents(profile: Profile) -> None:
    """The profile's agents (the sessions name them), each named as its id."""
    from sessions_app.manage.agents import upsert_agent

    for agent_id in agent_ids(profile):
        upsert_agent(api_key=None, agent_id=agent_id, data={"name": agent_id})


def grow(
    cursor,
    profile: Profile,
    count: int,
    *,
    seeded: int | None = None,
    messages_per_session: int = 0,
    deep_messages: int = 0,
) -> None:
    """Write `count` sessions of `profile` through `cursor` into an empty table: all generated,
    or `seeded` generated and then copied in turn up to `count` (copies_sql). The generated
    sessions' messages are written too when they have any (the copies have none)."""
    generated = seeded or count
    cursor.execute(
        sessions_sql(
            profile,
            generated,
            now_ms=int(time.time() * 1000),
            messages_per_session=messages_per_session,
            deep_messages=deep_messages,
        )
    )
    if messages_per_session or deep_messages:
        load_templates(cursor)
        cursor.execute(messages_sql(1, generated))
    if seeded:
        cursor.execute(copies_sql(seeded, count))
