"""The admin groups and the new Completion model: Operators may do what the admin offers on it
(it is read-only there), Viewers may look at it, as they look at runs and deliveries. The groups'
definition lives here from now on (`create_groups`: 0009's, plus view_completion), and tests make
the groups with it after a flush."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

OPERATOR_APPS = ("sessions_app", "policies_app", "django_q")
VIEWER_PERMISSIONS = (
    ("sessions_app", "view_session"),
    ("sessions_app", "view_message"),
    ("sessions_app", "view_run"),
    ("sessions_app", "view_agent"),
    ("sessions_app", "view_delivery"),
    ("sessions_app", "view_completion"),
)


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
        ("sessions_app", "0011_orchestration"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, migrations.RunPython.noop)]
