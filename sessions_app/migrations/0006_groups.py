"""The two admin groups: Operators may do everything the admin offers; Viewers may look at
sessions, transcripts, runs, agents and deliveries, and change nothing (no keys, no policies).

Permissions are created here first: inside `migrate` they only appear in post_migrate, after
this runs. Models added by later migrations get their permissions then, not here; add them to
the groups in that later migration.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

OPERATOR_APPS = ("sessions_app", "policies_app", "django_q")
VIEWER_PERMISSIONS = (
    ("sessions_app", "view_session"),
    ("sessions_app", "view_message"),
    ("sessions_app", "view_run"),
    ("sessions_app", "view_agent"),
    ("policies_app", "view_delivery"),
)


def create_groups(apps, schema_editor):
    for app_config in apps.get_app_configs():
        # create_permissions() skips apps without a models module; migration state has none.
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
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


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["Operators", "Viewers"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_sweep_schedule"),
        ("policies_app", "0002_sendpolicychange"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
