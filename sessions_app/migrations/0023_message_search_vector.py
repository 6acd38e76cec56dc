"""PostgreSQL: the search text of a message is stored once, in `search_vector`, instead of being
parsed again wherever it is read (sessions_app/reads/search.py).

0015 indexed the expression `to_tsvector('openclaw_search', sessions_app_message_text(content))`.
The index finds the matches, but every plan that filters or ranks them re-parses each message it
reads: ts_rank for every match ranked, and the whole match test where the planner walks a
session's messages (a narrow scope) or scans for a common word. That parse, 50–100 µs per
message, was most of a common-word search (51 ms for "database latency" in a 1.2M-message
session; 1 ms with the stored vector; BENCHMARKS.md).

`search_vector` is a plain column filled by a BEFORE INSERT/UPDATE trigger, so it is written by
the statement that stores the message, in its transaction, as the index was. A trigger, not a
`GENERATED ALWAYS … STORED` column: adding a generated column rewrites the whole table under an
exclusive lock (minutes for millions of messages, with every append waiting), while a nullable
column is added at once, the existing rows are filled in short batches that writers do not wait
for, and the index is built CONCURRENTLY. Only the roles search reads get a vector (user and
assistant text, and tool results for `includeTools`); other rows keep NULL.

The ORM does not know the column (the model stays the same on SQLite, where FTS5 is the index).
"""

from django.db import migrations

BATCH = 20_000
INDEXED_ROLES = "('user', 'assistant', 'toolResult', 'tool')"
VECTOR = (
    "CASE WHEN {row}.role IN " + INDEXED_ROLES + " THEN "
    "to_tsvector('openclaw_search'::regconfig, sessions_app_message_text({row}.content)) END"
)

CREATE = [
    "ALTER TABLE sessions_app_message ADD COLUMN IF NOT EXISTS search_vector tsvector",
    f"""CREATE OR REPLACE FUNCTION sessions_app_message_search_vector() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            NEW.search_vector := {VECTOR.format(row="NEW")};
            RETURN NEW;
        END $$""",
    "DROP TRIGGER IF EXISTS sessions_app_message_search_vector ON sessions_app_message",
    """CREATE TRIGGER sessions_app_message_search_vector
        BEFORE INSERT OR UPDATE OF content, role ON sessions_app_message
        FOR EACH ROW EXECUTE FUNCTION sessions_app_message_search_vector()""",
]
BACKFILL = f"""
UPDATE sessions_app_message AS m SET search_vector = {VECTOR.format(row="m")}
WHERE m.id > %s AND m.id <= %s AND m.role IN {INDEXED_ROLES} AND m.search_vector IS NULL
"""
INDEX = """CREATE INDEX CONCURRENTLY IF NOT EXISTS message_search_vector
    ON sessions_app_message USING gin (search_vector)"""
OLD_INDEX = """CREATE INDEX CONCURRENTLY IF NOT EXISTS message_search ON sessions_app_message
    USING gin (to_tsvector('openclaw_search'::regconfig, sessions_app_message_text(content)))"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in CREATE:
        schema_editor.execute(sql)
    # The rows stored before the trigger: in id ranges, each UPDATE its own transaction (the
    # migration is not atomic), so an append waits for one batch at most.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM sessions_app_message")
        (top,) = cursor.fetchone()
        for start in range(0, top, BATCH):
            cursor.execute(BACKFILL, [start, start + BATCH])
    schema_editor.execute(INDEX)
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS message_search")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(OLD_INDEX)
    schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS message_search_vector")
    schema_editor.execute(
        "DROP TRIGGER IF EXISTS sessions_app_message_search_vector ON sessions_app_message"
    )
    schema_editor.execute("DROP FUNCTION IF EXISTS sessions_app_message_search_vector()")
    schema_editor.execute("ALTER TABLE sessions_app_message DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0022_run_sender_is_owner"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
