"""The demo's way into the browser (`make run`): one account, made on first start, its password
shown once, as API keys are (stored hashed, so it cannot be shown again; a new one can be made).
"""

from __future__ import annotations

import secrets

from django.contrib.auth.models import Group, User
from django.db import transaction

USERNAME = "demo"
# An operator with the admin too: a newcomer's first look should reach every page.
GROUP = "Operators"
NEW_PASSWORD_COMMAND = ".venv/bin/python manage.py demo_login --new-password"


def demo_login(*, new_password: bool = False) -> str:
    """One line saying how to log in as the demo account. Makes the account if it is missing
    (or, with `new_password`, gives it a new password): only then is the password in the line."""
    person = User.objects.filter(username=USERNAME).first()
    if person is not None and not new_password:
        return (
            f"Log in as {USERNAME} (its password was shown when it was made; a new one: "
            f"{NEW_PASSWORD_COMMAND})"
        )
    password = secrets.token_urlsafe(12)
    with transaction.atomic():
        if person is None:
            group = Group.objects.get(name=GROUP)  # made by migration 0006
            person = User.objects.create_user(USERNAME, password=password, is_staff=True)
            person.groups.add(group)
        else:
            person.set_password(password)
            person.save(update_fields=["password"])
    return (
        f"Log in as {USERNAME} with password {password} (shown once; a new one: "
        f"{NEW_PASSWORD_COMMAND})"
    )
