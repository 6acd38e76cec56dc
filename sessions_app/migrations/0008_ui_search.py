"""Full-text search for the transcript browser's session list (PostgreSQL only; no-op elsewhere).

Two GIN expression indexes, matched exactly by the queries in sessions_app/ui/search.py:
- sessions: to_tsvector('simple', key || ' ' || label || ' ' || display_name);
- messages: to_tsvector('simple', sessions_app_message_text(content)), where the function
  collects the text of a message (a string, or the `text` of its text blocks) and keeps the
  first 20,000 characters, so a huge message can never exceed tsvector's 1 MB limit and fail
  the insert.
'simple' (no stemming, no stop words) because keys, ids and channel names are not English; the
queries use prefix matching instead.

CONCURRENTLY (hence atomic = False): building the message index on millions of rows must not
block appends for minutes.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION sessions_app_message_text(content jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT left(
    CASE jsonb_typeof(content)
      WHEN 'string' THEN content #>> '{}'
      WHEN 'array' THEN (
        SELECT string_agg(block ->> 'text', ' ')
        FROM jsonb_array_elements(content) AS block
        WHERE jsonb_typeof(block) = 'object' AND block ->> 'type' = 'text'
      )
      ELSE ''
    END, 20000)
$$
"""
SESSION_INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS session_text_search ON sessions_app_session
USING gin (to_tsvector('simple'::regconfig, key || ' ' || label || ' ' || display_name))
"""
MESSAGE_INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS message_text_search ON sessions_app_message
USING gin (to_tsvector('simple'::regconfig, sessions_app_message_text(content)))
"""
DROP = [
    "DROP INDEX CONCURRENTLY IF EXISTS message_text_search",
    "DROP INDEX CONCURRENTLY IF EXISTS session_text_search",
    "DROP FUNCTION IF EXISTS sessions_app_message_text(jsonb)",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in (FUNCTION, SESSION_INDEX, MESSAGE_INDEX):
        schema_editor.execute(sql)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in DROP:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0007_live_changes"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
