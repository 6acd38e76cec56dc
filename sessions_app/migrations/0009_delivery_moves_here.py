"""ChannelConfig and Delivery (the delivery outbox) move here from policies_app, in the migration
state only: `db_table` keeps the old table names, and index and constraint names are the same,
so nothing in the database changes (policies_app 0004 drops them from its state first).

Content types: the rows (policies_app, channelconfig) and (policies_app, delivery) are relabelled
to sessions_app, so the permissions that point at them, and the groups and users holding those,
carry over. On a fresh database the rows exist too: 0006 created them under policies_app.
`create_groups` is 0006's definition of the two groups with the permissions' new labels; it
adds what is missing (and never removes a permission), and tests use it to make the groups
again after a flush.

Tasks queued before the upgrade name `policies_app.delivery.deliver`, which no longer imports.
They are harmless and nothing is lost: the worker fails such a task before calling anything
("Function ... is not defined"; the ORM broker hands it out again up to Q_CLUSTER max_attempts,
Redis drops it), so it never claims its row. The row stays `pending` with `next_attempt_at` in
the past (enqueue_delivery and retry_delivery set it to now), which is what
`Delivery.objects.due()` selects, and the minutely sweep (runs/sweeper.py →
`retry_due_deliveries`) makes that attempt, as it does for any task a Redis broker lost. Retries
after a failed attempt never used a task: the sweep makes them.
"""

import django.core.validators
import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

MODELS = ("channelconfig", "delivery")
OPERATOR_APPS = ("sessions_app", "policies_app", "django_q")
VIEWER_PERMISSIONS = (
    ("sessions_app", "view_session"),
    ("sessions_app", "view_message"),
    ("sessions_app", "view_run"),
    ("sessions_app", "view_agent"),
    ("sessions_app", "view_delivery"),
)


def _relabel(apps, schema_editor, *, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    types = ContentType.objects.using(schema_editor.connection.alias)
    for model in MODELS:
        moving = types.filter(app_label=old, model=model)
        if not moving.exists():
            continue  # never created: post_migrate creates it under the new label
        # Code deployed before this ran may have created the new label already (the admin
        # creates a missing content type when it logs an action); the old row carries the
        # permissions and group memberships, so it wins.
        types.filter(app_label=new, model=model).delete()
        moving.update(app_label=new)
    ContentType.objects.clear_cache()


def relabel_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, old="policies_app", new="sessions_app")


def restore_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, old="sessions_app", new="policies_app")


def create_groups(apps, schema_editor):
    for app_config in apps.get_app_configs():
        # create_permissions() skips apps without a models module; migration state has none.
        # Restored afterwards: tests call this with the project's real app registry.
        models_module = getattr(app_config, "models_module", None)
        app_config.models_module = models_module or True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = models_module
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    operators, _ = Group.objects.get_or_create(name="Operators")
    operators.permissions.add(
        *Permission.objects.filter(content_type__app_label__in=OPERATOR_APPS)
    )
    viewers, _ = Group.objects.get_or_create(name="Viewers")
    for app_label, codename in VIEWER_PERMISSIONS:
        viewers.permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0008_ui_search"),
        ("policies_app", "0004_delivery_moves_to_sessions_app"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ChannelConfig",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("channel", models.CharField(max_length=64, unique=True)),
                        ("adapter", models.CharField(choices=[("webchat", "webchat"), ("webhook", "webhook"), ("log", "log")], default="log", max_length=16)),
                        ("webhook_url", models.URLField(blank=True, max_length=2000, validators=[django.core.validators.URLValidator(schemes=["http", "https"])])),
                        ("max_attempts", models.PositiveSmallIntegerField(default=5)),
                    ],
                    options={
                        "verbose_name": "channel",
                        "db_table": "policies_app_channelconfig",
                        "ordering": ["channel"],
                        "constraints": [
                            models.CheckConstraint(condition=models.Q(("adapter__in", ["webchat", "webhook", "log"])), name="channelconfig_adapter_valid"),
                            models.CheckConstraint(condition=models.Q(("channel", django.db.models.functions.text.Lower("channel"))), name="channelconfig_channel_lowercase"),
                            models.CheckConstraint(condition=models.Q(models.Q(("adapter", "webhook"), _negated=True), models.Q(("webhook_url", ""), _negated=True), _connector="OR"), name="channelconfig_webhook_has_url"),
                            models.CheckConstraint(condition=models.Q(("max_attempts__gte", 1)), name="channelconfig_max_attempts_positive"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Delivery",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("kind", models.CharField(choices=[("announce", "announce"), ("reply", "reply"), ("subagent_announce", "subagent_announce"), ("message", "message")], max_length=20)),
                        ("channel", models.CharField(blank=True, max_length=64)),
                        ("to", models.CharField(blank=True, max_length=600)),
                        ("account_id", models.CharField(blank=True, max_length=200)),
                        ("thread_id", models.CharField(blank=True, max_length=200)),
                        ("text", models.TextField(blank=True)),
                        ("status", models.CharField(choices=[("pending", "pending"), ("sent", "sent"), ("failed", "failed"), ("blocked", "blocked")], default="pending", max_length=8)),
                        ("attempts", models.PositiveSmallIntegerField(default=0)),
                        ("max_attempts", models.PositiveSmallIntegerField(default=5)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        ("last_error", models.TextField(blank=True)),
                        ("decided_by", models.TextField(blank=True)),
                        ("adapter", models.CharField(blank=True, max_length=16)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("sent_at", models.DateTimeField(blank=True, null=True)),
                        ("run", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="deliveries", to="sessions_app.run")),
                        ("session", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="sessions_app.session")),
                    ],
                    options={
                        "verbose_name_plural": "deliveries",
                        "db_table": "policies_app_delivery",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_due"),
                            models.Index(fields=["session", "-created_at"], name="delivery_session_recent"),
                        ],
                        "constraints": [
                            models.CheckConstraint(condition=models.Q(("status__in", ["pending", "sent", "failed", "blocked"])), name="delivery_status_valid"),
                            models.CheckConstraint(condition=models.Q(("kind__in", ["announce", "reply", "subagent_announce", "message"])), name="delivery_kind_valid"),
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(relabel_content_types, restore_content_types),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
