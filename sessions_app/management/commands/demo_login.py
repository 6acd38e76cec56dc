"""python manage.py demo_login [--new-password]: the demo's browser login (what `make run` prints)."""

from django.core.management.base import BaseCommand

from sessions_app.ui.demo_login import demo_login


class Command(BaseCommand):
    help = (
        "Make the demo's browser account (`demo`, Operators, admin) if it is missing and say how "
        "to log in; its password is printed once, when it is made or with --new-password."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--new-password", action="store_true", help="Give the account a new password"
        )

    def handle(self, *args, new_password, **options):
        self.stdout.write(demo_login(new_password=new_password))
