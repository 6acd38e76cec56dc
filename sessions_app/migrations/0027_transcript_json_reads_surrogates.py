# The transcript's JSON columns read an unpaired surrogate as U+FFFD (models/fields.py). The
# column is unchanged, so the database is left alone: SQLite would rebuild the message table for
# an AlterField, and that drops the full-text index's triggers (migration 0015_search).

import sessions_app.models.fields
from django.db import migrations


def _alter(name, **options):
    return migrations.AlterField(
        model_name="message",
        name=name,
        field=sessions_app.models.fields.TranscriptJSONField(blank=True, **options),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0026_retention_task_path"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                _alter("content", null=True),
                _alter("extra", default=dict),
                _alter("provenance", null=True),
                _alter("usage", null=True),
            ],
            database_operations=[],
        ),
    ]
