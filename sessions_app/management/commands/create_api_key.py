"""python manage.py create_api_key --scope agent --agent main [--session KEY] [--sandboxed]"""

from django.core.management.base import BaseCommand, CommandError

from sessions_app import keys
from sessions_app.models import Agent, ApiKey, GatewayConfig


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
        if scope == ApiKey.AGENT:
            if not agent:
                raise CommandError("--agent is required with --scope agent")
            agent_row = Agent.objects.filter(pk=keys.normalize_agent_id(agent)).first()
            if agent_row is None:
                raise CommandError(f"agent not found: {agent}")
        elif agent or session or sandboxed:
            raise CommandError("--agent, --session and --sandboxed go with --scope agent")
        pinned = ""
        if session:
            settings = GatewayConfig.load().key_settings
            try:
                pinned = keys.canonical_key(session, agent_id=agent_row.id, settings=settings)
            except keys.InvalidKey as exc:
                raise CommandError(str(exc)) from None
            if keys.agent_id_of(pinned) != agent_row.id:
                raise CommandError(f"session {pinned} does not belong to agent {agent_row.id}")
        _, plaintext = ApiKey.generate(
            name=name, scope=scope, agent=agent_row, session_key=pinned, sandboxed=sandboxed
        )
        described = scope + (f" agent={agent_row.id}" if agent_row else "")
        described += f" session={pinned}" if pinned else ""
        described += " sandboxed" if sandboxed else ""
        self.stderr.write(f"Created {described} key. It is shown once; store it now.")
        self.stdout.write(plaintext)
