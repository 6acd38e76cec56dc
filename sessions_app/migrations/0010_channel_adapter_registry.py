"""A channel's adapter is checked against the registry in sessions_app/delivery/adapters/ (by
save_channel() and the admin's form) instead of by the field's choices and a check constraint:
both are frozen into migrations, so every new adapter would have needed one. The other channel
constraints stay (a lowercase name, a webhook has a URL, max_attempts ≥ 1).

Dropping the choices changes nothing in the database; dropping the constraint is one ALTER on
PostgreSQL (SQLite rebuilds the small table).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_delivery_moves_here"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="channelconfig",
            name="channelconfig_adapter_valid",
        ),
        migrations.AlterField(
            model_name="channelconfig",
            name="adapter",
            field=models.CharField(default="log", max_length=16),
        ),
    ]
