"""`make run`'s way in (issue 29.1): the demo account, its password shown once, and the three
lines `manage.py serve --demo-login` ends with once the first page can be served."""

import subprocess
import sys
import urllib.error
import urllib.request
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from sessions_app.management.commands.serve import banner
from tests.conftest import admin_groups
from tests.servers import ROOT, child_env, free_port, manage

PASSWORD_LINE = "Log in as demo with password "
AGAIN = "a new one: .venv/bin/python manage.py demo_login --new-password"


def demo_login(*args) -> str:
    out = StringIO()
    call_command("demo_login", *args, stdout=out)
    return out.getvalue().strip()


def password_in(line: str) -> str:
    assert line.startswith(PASSWORD_LINE), line
    return line.removeprefix(PASSWORD_LINE).split(" ", 1)[0]


def test_made_once_shown_once_and_a_new_password_on_request(db):
    admin_groups()
    first = demo_login()
    password = password_in(first)
    assert AGAIN in first
    person = authenticate(username="demo", password=password)
    assert person is not None and person.is_staff and not person.is_superuser
    assert [g.name for g in person.groups.all()] == ["Operators"]

    again = demo_login()
    assert password not in again
    assert again == f"Log in as demo (its password was shown when it was made; {AGAIN})"

    renewed = password_in(demo_login("--new-password"))
    assert renewed != password
    assert authenticate(username="demo", password=password) is None
    assert authenticate(username="demo", password=renewed) is not None


@pytest.mark.parametrize(
    ("host", "base"),
    [("127.0.0.1", "http://127.0.0.1:9000"), ("::1", "http://[::1]:9000")],
)
def test_the_banner_names_the_port_the_login_and_the_api_docs(host, base):
    assert banner(host, 9000, "Log in as demo").splitlines() == [
        f"Serving on {base}/ (Ctrl-C stops)",
        "Log in as demo",
        f"API docs: {base}/api/v1/docs/ (OpenAPI schema: {base}/api/v1/schema/)",
    ]
    assert len(banner(host, 9000, None).splitlines()) == 2  # no --demo-login: no login line


def test_serve_ends_with_the_three_lines_when_the_first_page_is_served(transactional_db):
    admin_groups()  # what `migrate` made and a transactional test's flush removed
    manage("seed_demo")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--demo-login", "--port", str(port)],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = [process.stdout.readline().rstrip("\n") for _ in range(3)]
        base = f"http://127.0.0.1:{port}"
        assert lines[0] == f"Serving on {base}/ (Ctrl-C stops)"
        assert authenticate(username="demo", password=password_in(lines[1])) is not None
        assert lines[2].startswith(f"API docs: {base}/api/v1/docs/")
        # Printed once the server accepts: the page and the docs answer at once.
        with pytest.raises(urllib.error.HTTPError) as redirected:
            urllib.request.build_opener(NoRedirect).open(base + "/", timeout=30)
        redirected.value.close()
        assert redirected.value.code == 302
        with urllib.request.urlopen(base + "/api/v1/docs/", timeout=30) as docs:
            assert docs.status == 200
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
