"""The list statements' plans on a skewed PostgreSQL data set (issue 18).

A statement planned from statistics alone can read the whole table once per page row: the
children lookup did, where nearly every session has `spawned_by = ''`. This builds such a store
(20,000 sessions, almost none sub-agents but one parent with 500 children on the first page, 95 %
of sessions of one agent, one long transcript), runs ANALYZE, takes every statement a list call
sends (sessions_list at each visibility, the browser's list) and EXPLAINs it: no sequential scan
of sessions or messages, no more rows read than the statement returns (plus a page), an
estimated cost below the JIT threshold, and no JIT. Plans, not timings: no clock is read.

The children lookup alone (issue 26) is also planned on three more stores, each before and after
VACUUM: no sub-agent at all, copies of a seeded batch (as a bulk grow writes them: the heap in
activity order, which once made a filtered walk of `session_activity` look cheapest), and the
skewed one. Each is a copy of the sessions table in a schema of its own, written and vacuumed
over a second connection (VACUUM cannot run in the test's transaction).
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from bench import shapes
from sessions_app import rows
from sessions_app.access.identity import requester_for_session
from sessions_app.models import GatewayConfig, Session
from sessions_app.rows import CHILD_SESSIONS_MAX
from tests.conftest import set_config

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL plans (SQLite reads no statistics)"
)

SESSIONS = 20_000
CHILDREN = 500
PAGE = 200
MESSAGE_LIMIT = 5
TABLES = {"sessions_app_session", "sessions_app_message"}
# PostgreSQL's default jit_above_cost: a statement estimated above it would compile with JIT on.
JIT_ABOVE_COST = 100_000
SKEWED = shapes.Profile(
    "plan test", one_parent=True, children=CHILDREN, dominant=0.95, agents=4, giants=1,
    giant_messages=5_000,
)  # fmt: skip


@pytest.fixture(scope="module")
def skewed_store(django_db_setup, django_db_blocker):
    """Built once for the module, in a transaction rolled back at its end (each test runs in a
    savepoint inside it, as Django's TestCase.setUpTestData does)."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build_store()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def build_store() -> Session:
    shapes.add_agents(SKEWED)
    with connection.cursor() as cursor:
        shapes.grow(cursor, SKEWED, SESSIONS, messages_per_session=1, deep_messages=300)
        # Inside the test's transaction ANALYZE sees the rows it inserted; the statistics go
        # when the transaction rolls back.
        cursor.execute("ANALYZE sessions_app_session")
        cursor.execute("ANALYZE sessions_app_message")
    parent = Session.objects.get(key=shapes.PARENT_KEY)
    assert Session.objects.filter(spawned_by=parent.key).count() == CHILDREN
    assert Session.objects.exclude(spawned_by="").count() == CHILDREN
    return parent


def explain(sql: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        (plan,) = cursor.fetchone()
    return plan[0] if isinstance(plan, list) else plan


def nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def check_statement(sql: str) -> None:
    found = explain(sql)
    top = found["Plan"]
    returned = top["Actual Rows"] * top["Actual Loops"]
    bound = (max(returned, PAGE) + PAGE) * (1 + MESSAGE_LIMIT)
    assert "JIT" not in found, sql
    assert top["Total Cost"] < JIT_ABOVE_COST, (top["Total Cost"], sql)
    for node in nodes(top):
        if node.get("Relation Name") not in TABLES:
            continue
        assert node["Node Type"] != "Seq Scan", (node["Relation Name"], sql)
        read = (
            node["Actual Rows"]
            + node.get("Rows Removed by Filter", 0)
            + node.get("Rows Removed by Index Recheck", 0)
        ) * node["Actual Loops"]
        assert read <= bound, (node["Node Type"], node.get("Index Name"), read, bound, sql)


def list_statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        call()
    statements = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].lstrip().lstrip("(").upper().startswith("SELECT")
        and any(t in q["sql"] for t in TABLES)
    ]
    assert statements
    return statements


@pytest.mark.parametrize(
    ("visibility", "requester_key"),
    [
        ("self", shapes.PARENT_KEY),
        ("tree", shapes.PARENT_KEY),
        ("agent", shapes.PARENT_KEY),
        ("agent", "agent:research:main"),  # a small agent: its index range, not main's
        ("all", shapes.PARENT_KEY),
    ],
)
def test_sessions_list_statements_read_about_a_page(skewed_store, db, visibility, requester_key):
    from sessions_app.tools.sessions_list import sessions_list

    set_config(visibility=visibility, a2a_enabled=True, a2a_allow=[])
    requester = requester_for_session(Session.objects.get(key=requester_key))
    args = {"limit": PAGE, "messageLimit": MESSAGE_LIMIT}
    details = {}

    def call():
        details.update(sessions_list(requester=requester, args=args))

    statements = list_statements(call)
    if visibility in ("tree", "all"):  # the parent and its children are listed
        # Its newest CHILD_SESSIONS_MAX, read from the index however many it has.
        parent = next(r for r in details["sessions"] if r["key"] == shapes.PARENT_KEY)
        active = Session.objects.filter(spawned_by=shapes.PARENT_KEY, archived_at__isnull=True)
        assert active.count() > CHILD_SESSIONS_MAX
        assert len(parent["childSessions"]) == CHILD_SESSIONS_MAX
        assert parent["childSessionsTruncated"] is True
    for sql in statements:
        check_statement(sql)


def test_browser_list_statements_read_about_a_page(skewed_store, db):
    from sessions_app.ui import queries

    settings = GatewayConfig.load().key_settings
    for sql in list_statements(lambda: queries.list_page({}, settings=settings)):
        check_statement(sql)


def test_the_app_connects_with_jit_off_and_no_parallel_workers(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone() == ("0",)


# The children lookup on its own stores. A store is small: the walk the lookup once took reads
# the whole table per page row (20,000 rows × 201 here, seconds), the probe a page.
STORE_SCHEMA = "plan_store"
STORES = {
    "no sub-agent": (shapes.PROFILES["none"], None),
    "copies of a seeded batch": (shapes.PROFILES["none"], 1_000),
    "skewed": (SKEWED, None),
}


@pytest.fixture
def own_connection(django_db_setup, django_db_blocker):
    """An autocommit connection to the test database, its search path on an empty copy of the
    sessions table (same columns and defaults, the same indexes under the same names); dropped
    at the end."""
    with django_db_blocker.unblock():
        raw = connection.get_new_connection(connection.get_connection_params())
        raw.autocommit = True
        try:
            with raw.cursor() as cursor:
                cursor.execute(f"DROP SCHEMA IF EXISTS {STORE_SCHEMA} CASCADE")
                cursor.execute(f"CREATE SCHEMA {STORE_SCHEMA}")
                cursor.execute(
                    f"CREATE TABLE {STORE_SCHEMA}.sessions_app_session "
                    "(LIKE public.sessions_app_session INCLUDING DEFAULTS)"
                )
                cursor.execute(
                    "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
                    "WHERE indrelid = 'public.sessions_app_session'::regclass"
                )
                for (definition,) in cursor.fetchall():
                    cursor.execute(
                        definition.replace(
                            " ON public.sessions_app_session ",
                            f" ON {STORE_SCHEMA}.sessions_app_session ",
                        )
                    )
                cursor.execute(f"SET search_path TO {STORE_SCHEMA}, public")
            yield raw
        finally:
            with raw.cursor() as cursor:
                cursor.execute(f"DROP SCHEMA IF EXISTS {STORE_SCHEMA} CASCADE")
            raw.close()


def check_children_lookup(cursor, *, sessions: int, when: str) -> dict[str, int]:
    """EXPLAIN ANALYZE the lookup for the first page's keys (as the list sends it): one index
    probe of session_active_children per key, never a scan that filters out rows by the table
    (or page) load. Returns the children found per parent."""
    cursor.execute(
        "SELECT key FROM sessions_app_session ORDER BY updated_at DESC, id DESC LIMIT %s",
        [PAGE + 1],
    )
    page = [key for (key,) in cursor.fetchall()]
    params = [page, CHILD_SESSIONS_MAX + 1]
    cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + rows._CHILDREN_SQL, params)
    (found,) = cursor.fetchone()
    found = found[0] if isinstance(found, list) else found
    scans = [n for n in nodes(found["Plan"]) if n.get("Relation Name") == "sessions_app_session"]
    for node in scans:
        removed = node.get("Rows Removed by Filter", 0) * node["Actual Loops"]
        assert removed <= PAGE, (when, node["Node Type"], node.get("Index Name"), removed)
        assert node["Node Type"] != "Seq Scan", when
    assert [(n["Node Type"], n.get("Index Name")) for n in scans] == [
        ("Index Only Scan", "session_active_children")
    ], (when, sessions)
    cursor.execute(rows._CHILDREN_SQL, params)
    counts: dict[str, int] = {}
    for parent, _child in cursor.fetchall():
        counts[parent] = counts.get(parent, 0) + 1
    return counts


@pytest.mark.parametrize("store", list(STORES))
def test_the_children_lookup_probes_the_partial_index_whatever_the_statistics(
    own_connection, store
):
    profile, seeded = STORES[store]
    with own_connection.cursor() as cursor:
        shapes.grow(cursor, profile, SESSIONS, seeded=seeded)
        cursor.execute("SELECT count(*) FROM sessions_app_session")
        assert cursor.fetchone() == (SESSIONS,)
        for when in ("ANALYZE", "VACUUM (ANALYZE)"):
            cursor.execute(f"{when} sessions_app_session")
            counts = check_children_lookup(cursor, sessions=SESSIONS, when=f"{store}, {when}")
            if profile.children:
                # The parent's newest CHILD_SESSIONS_MAX + 1 (the one more says "truncated").
                assert counts == {shapes.PARENT_KEY: CHILD_SESSIONS_MAX + 1}
            else:
                assert counts == {}
