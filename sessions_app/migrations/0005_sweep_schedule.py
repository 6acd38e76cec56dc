"""The sweep schedule lives in the database, created here and kept by `serve`: it survives
restarts, unlike OpenClaw's in-memory timers."""

from django.db import migrations


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name="openclaw-sweep",
        defaults={
            "func": "sessions_app.runs.tasks.sweep",
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": 1,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name="openclaw-sweep").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0004_message_redact_needed"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
