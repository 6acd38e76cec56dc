"""Run the task worker: django-q2's cluster, supervised (sessions_app/runs/cluster.py).

`manage.py qcluster` exits for good when its sentinel dies (at start when the database or Redis
cannot be reached, or later when it is killed); this command waits for them with backoff and
starts a new cluster instead. SIGTERM or Ctrl-C stops it as it stops qcluster.
"""

from django.conf import settings
from django.core.management.base import BaseCommand

from sessions_app.runs.cluster import Supervisor


class Command(BaseCommand):
    help = (
        "Run the django-q2 worker cluster, waiting for the database and broker and starting a "
        "new cluster when its sentinel dies (what `manage.py serve` runs)."
    )

    def handle(self, *args, **options):
        # django-q2 needs it to sign tasks; a missing one should stop the start, not a task.
        settings.SECRET_KEY  # noqa: B018
        Supervisor().run()
