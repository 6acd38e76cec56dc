"""The `openclaw-sessions-mcp` console script: `manage.py mcp` from anywhere.

Kept apart from stdio.py, which imports the models: Django must be set up first.
"""

import os
import sys


def main() -> None:
    """`openclaw-sessions-mcp --key OPENCLAW_API_KEY [--session KEY]`."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "mcp", *sys.argv[1:]])
