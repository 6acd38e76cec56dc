"""python manage.py create_ui_user NAME [--role viewer|operator] [--staff] [--password-env VAR]"""

import os
import secrets

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

GROUPS = {"viewer": "Viewers", "operator": "Operators"}


class Command(BaseCommand):
    help = (
        "Create a transcript-browser account in the Viewers (read-only) or Operators group. "
        "Without --password-env a password is generated and printed once, alone on the last line."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(GROUPS), default="viewer")
        parser.add_argument("--staff", action="store_true", help="May also log in to /admin/")
        parser.add_argument(
            "--password-env", metavar="VAR", help="Take the password from this environment variable"
        )

    def handle(self, *args, username, role, staff, password_env=None, **options):
        if User.objects.filter(username=username).exists():
            raise CommandError(f"user {username!r} exists (change it in the admin)")
        if password_env:
            password = os.environ.get(password_env, "")
            if not password:
                raise CommandError(f"environment variable {password_env} is empty or unset")
        else:
            password = secrets.token_urlsafe(12)
        try:
            # AUTH_PASSWORD_VALIDATORS: length, common passwords, all digits, like the username.
            validate_password(password, user=User(username=username))
        except ValidationError as exc:
            raise CommandError("password refused: " + " ".join(exc.messages)) from None
        group = Group.objects.filter(name=GROUPS[role]).first()
        if group is None:
            raise CommandError(f"group {GROUPS[role]} is missing: run `manage.py migrate` first")
        with transaction.atomic():
            person = User.objects.create_user(username, password=password, is_staff=staff)
            person.groups.add(group)
        self.stderr.write(f"Created {role} {username!r}; log in at /accounts/login/.")
        if not password_env:
            self.stderr.write("The password is shown once:")
            self.stdout.write(password)
