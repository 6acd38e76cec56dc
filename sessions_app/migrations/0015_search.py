"""The transcript search index of sessions_search (9.6 §3), on both backends.

SQLite (the embedded default): an FTS5 table `sessions_app_message_fts` (rowid = message id,
unicode61 tokenizer with diacritics removed, as 9.6's), filled by triggers on the message table:
the index row is written by the INSERT that stores the message, so in the same transaction, with
no statement of ours to forget (and no extra query on the run path). Deleting a message, or its
session, removes it from the index. Existing messages are indexed here.

PostgreSQL: a text search configuration `openclaw_search` ('simple' — no stemming, no stop
words — plus unaccent where the extension can be created, so diacritics are removed as on
SQLite) and one GIN expression index over sessions_app_message_text(content) (migration 0008).
It replaces 0008's `message_text_search`: the transcript browser's search now uses this index
through the same function (sessions_app/reads/search.py), so each message keeps one text index.
CONCURRENTLY (hence atomic = False): building it on millions of rows must not block appends.

Only the roles search reads are indexed: user and assistant text, and toolResult text for
`includeTools: true` (beyond 9.6).
"""

from django.db import migrations

INDEXED_ROLES = "('user', 'assistant', 'toolResult', 'tool')"

# --- SQLite ---------------------------------------------------------------------------------

# The text of a stored message (JSON text: a string, or blocks whose `text` is kept when their
# type is text), cut at 20,000 characters: what sessions_app_message_text() is on PostgreSQL.
SQLITE_TEXT = """substr(CASE json_type({c})
    WHEN 'text' THEN json_extract({c}, '$')
    WHEN 'array' THEN (
        SELECT group_concat(json_extract(block.value, '$.text'), ' ')
        FROM json_each({c}) AS block
        WHERE json_type(block.value) = 'object' AND json_extract(block.value, '$.type') = 'text'
    )
END, 1, 20000)"""

SQLITE_CREATE = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS sessions_app_message_fts
       USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS sessions_app_message_fts_insert
       AFTER INSERT ON sessions_app_message WHEN NEW.role IN {INDEXED_ROLES}
       BEGIN
         INSERT INTO sessions_app_message_fts (rowid, body)
         SELECT NEW.id, body FROM (SELECT {SQLITE_TEXT.format(c="NEW.content")} AS body)
         WHERE body IS NOT NULL AND body != '';
       END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_message_fts_delete
       AFTER DELETE ON sessions_app_message
       BEGIN
         DELETE FROM sessions_app_message_fts WHERE rowid = OLD.id;
       END""",
    f"""CREATE TRIGGER IF NOT EXISTS sessions_app_message_fts_update
       AFTER UPDATE OF content, role ON sessions_app_message
       BEGIN
         DELETE FROM sessions_app_message_fts WHERE rowid = OLD.id;
         INSERT INTO sessions_app_message_fts (rowid, body)
         SELECT NEW.id, body FROM (SELECT {SQLITE_TEXT.format(c="NEW.content")} AS body)
         WHERE NEW.role IN {INDEXED_ROLES} AND body IS NOT NULL AND body != '';
       END""",
    f"""INSERT INTO sessions_app_message_fts (rowid, body)
       SELECT id, body FROM (
         SELECT id, {SQLITE_TEXT.format(c="content")} AS body
         FROM sessions_app_message WHERE role IN {INDEXED_ROLES}
       ) WHERE body IS NOT NULL AND body != ''""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS sessions_app_message_fts_insert",
    "DROP TRIGGER IF EXISTS sessions_app_message_fts_delete",
    "DROP TRIGGER IF EXISTS sessions_app_message_fts_update",
    "DROP TABLE IF EXISTS sessions_app_message_fts",
]

# --- PostgreSQL -----------------------------------------------------------------------------

PG_CONFIGURATION = [
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS openclaw_search",
    "CREATE TEXT SEARCH CONFIGURATION openclaw_search (COPY = simple)",
]
PG_UNACCENT = """ALTER TEXT SEARCH CONFIGURATION openclaw_search
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH unaccent, simple"""
PG_INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS message_search ON sessions_app_message
USING gin (to_tsvector('openclaw_search'::regconfig, sessions_app_message_text(content)))
"""
PG_OLD_INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS message_text_search ON sessions_app_message
USING gin (to_tsvector('simple'::regconfig, sessions_app_message_text(content)))
"""


def _unaccent_available(schema_editor) -> bool:
    """CREATE EXTENSION needs a privilege a deployment may not grant; without it the search
    keeps diacritics on PostgreSQL (and says nothing: the results are still right, less lenient)."""
    with schema_editor.connection.cursor() as cursor:
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
        except Exception:  # noqa: BLE001 - any refusal means: go on without it
            return False
    return True


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for sql in SQLITE_CREATE:
            schema_editor.execute(sql)
    elif vendor == "postgresql":
        for sql in PG_CONFIGURATION:
            schema_editor.execute(sql)
        if _unaccent_available(schema_editor):
            schema_editor.execute(PG_UNACCENT)
        schema_editor.execute(PG_INDEX)
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS message_text_search")


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)
    elif vendor == "postgresql":
        schema_editor.execute(PG_OLD_INDEX)
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS message_search")
        schema_editor.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS openclaw_search")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0014_subagent_tools_model_catalog"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
