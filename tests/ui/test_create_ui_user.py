"""manage.py create_ui_user: accounts for the transcript browser."""

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command


def run(*args) -> str:
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command("create_ui_user", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_creates_a_viewer_with_a_generated_password(db):
    password = run("vera").strip().splitlines()[-1]
    person = authenticate(username="vera", password=password)
    assert person is not None and not person.is_staff
    assert [g.name for g in person.groups.all()] == ["Viewers"]
    assert person.has_perm("sessions_app.view_session")
    assert not person.has_perm("sessions_app.change_session")


def test_creates_an_operator_from_an_environment_password(db, monkeypatch):
    monkeypatch.setenv("UI_PASSWORD", "a long enough secret")
    assert run("otto", "--role", "operator", "--staff", "--password-env", "UI_PASSWORD") == ""
    person = authenticate(username="otto", password="a long enough secret")
    assert person.is_staff and person.has_perm("sessions_app.change_session")


def test_refuses_an_existing_user_and_an_empty_password(db, monkeypatch):
    User.objects.create_user("vera")
    with pytest.raises(CommandError, match="exists"):
        run("vera")
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(CommandError, match="NOPE"):
        run("nora", "--password-env", "NOPE")
