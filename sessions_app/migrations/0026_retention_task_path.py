"""The retention tasks moved with their module (sessions_app/manage/retention.py): stored
django-q2 schedules name the new dotted path. `serve` would rewrite them at its next start
(retention.ensure_schedules); this does it for a cluster started without `serve`."""

from django.db import migrations

MOVED = {
    "sessions_app.retention.scheduled_sweep": "sessions_app.manage.retention.scheduled_sweep",
    "sessions_app.retention.scheduled_cold_storage": (
        "sessions_app.manage.retention.scheduled_cold_storage"
    ),
}


def rename(apps, mapping):
    Schedule = apps.get_model("django_q", "Schedule")
    for old, new in mapping.items():
        Schedule.objects.filter(func=old).update(func=new)


def forwards(apps, schema_editor):
    rename(apps, MOVED)


def backwards(apps, schema_editor):
    rename(apps, {new: old for old, new in MOVED.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0025_run_sandboxed"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
