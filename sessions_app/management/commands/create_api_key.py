"""python manage.py create_api_key --scope agent --agent main [--session KEY] [--sandboxed]"""

from django.core.management.base import BaseCommand, CommandError

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument
from sessions_app.access.identity import create_api_key
from sessions_app.models import Agent


class Command(BaseCommand):
    help = "Create an API key and print it once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("--scope", choices=["operator", "ingest", "agent"], required=True)
        parser.add_argument("--agent", help="Agent id (required for --scope agent)")
        parser.add_argument("--session", help="Pin an agent key to this session key")
        parser.add_argument("--sandboxed", action="store_true", help="Sandboxed agent key")
        parser.add_argument("--name", default="", help="A note to recognise the key by")

    def handle(self, *args, scope, agent=None, session=None, sandboxed=False, name="", **options):
        agent_row = None
        if agent:
            agent_row = Agent.objects.filter(pk=keys.normalize_agent_id(agent)).first()
            if agent_row is None:
                raise CommandError(f"agent not found: {agent}")
        try:
            row, plaintext = create_api_key(
                name=name,
                scope=scope,
                agent=agent_row,
                session_key=session or "",
                sandboxed=sandboxed,
            )
        except InvalidArgument as exc:
            raise CommandError(exc.message) from None
        described = scope + (f" agent={row.agent_id}" if row.agent_id else "")
        described += f" session={row.session_key}" if row.session_key else ""
        described += " sandboxed" if row.sandboxed else ""
        self.stderr.write(f"Created {described} key. It is shown once; store it now.")
        self.stdout.write(plaintext)
