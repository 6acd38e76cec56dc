"""python manage.py mcp --key <api key | ENV_VAR_NAME> [--session KEY]: MCP over stdio."""

from django.core.management.base import BaseCommand, CommandError

from openclaw_common.errors import ToolError
from sessions_app.mcp import stdio


class Command(BaseCommand):
    help = "Serve the session tools to an MCP client over stdin/stdout (docs/mcp.md)."
    # stdout is the protocol: no system checks printing to it, no colour codes.
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--key",
            required=True,
            help="The API key, or the name of an environment variable holding it "
            "(e.g. OPENCLAW_API_KEY), so it stays out of the process list",
        )
        parser.add_argument(
            "--session", help="The session to act as (default: the key's own, as on /tools/invoke)"
        )

    def handle(self, *args, key, session=None, **options):
        try:
            token = stdio.key_from(key)
            stdio.check_key(token, session, key)
        except ToolError as exc:
            raise CommandError(exc.message) from None
        stdio.serve(token, session, key)
