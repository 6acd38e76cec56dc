"""ChannelConfig and Delivery move to sessions_app, next to the runs that use them: in the
migration state only. The tables keep their names (policies_app_channelconfig,
policies_app_delivery) and no row moves; sessions_app 0009 adds the models to its state and
relabels their content types, so permissions and group memberships carry over.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0003_sendpolicychange_note"),
        # sessions_app 0006 gives the groups policies_app.view_delivery: on a fresh database it
        # must run while the models are still here (0009 then relabels what it created).
        ("sessions_app", "0006_groups"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="Delivery"),
                migrations.DeleteModel(name="ChannelConfig"),
            ],
        ),
    ]
