"""python manage.py import_openclaw <state dir>: import OpenClaw's session stores and transcripts."""

from django.core.management.base import BaseCommand, CommandError

from sessions_app.manage import importer


class Command(BaseCommand):
    help = (
        "Import agents/<id>/sessions/sessions.json and the JSONL transcripts of an OpenClaw "
        "state dir (e.g. ~/.openclaw). Idempotent: a re-run adds only what is new."
    )

    def add_arguments(self, parser):
        parser.add_argument("state_dir", help="The OpenClaw state dir, e.g. ~/.openclaw")

    def handle(self, *args, state_dir, **options):
        def warn(problem):
            self.stderr.write(f"warning: {problem}")

        try:
            report = importer.import_state_dir(state_dir, on_problem=warn)
        except importer.StateDirError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.summary())
        if report.stores_read == 0:
            raise CommandError("no session store could be read")
