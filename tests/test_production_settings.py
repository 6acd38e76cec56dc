"""Production settings (issue 16, item 2): no public fallback SECRET_KEY, HTTPS switches,
`check --deploy` clean with our middleware, a Content-Security-Policy on the UI pages."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PG_URL = "postgres://postgres@127.0.0.1:5432/never-connected"
OLD_FALLBACK = "dev-insecure-openclaw-sessions-change-me"
LONG_KEY = "k" * 20 + "production-key-for-the-check-only-0123456789"


def manage(*args: str, env: dict[str, str], var_dir: Path) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "OPENCLAW_", "SECURE_", "RUN_"))
        and k not in {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DEBUG"}
    }
    clean.update({"OPENCLAW_VAR_DIR": str(var_dir), **env})
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def printed_setting(name: str, *, env: dict[str, str], var_dir: Path) -> str:
    done = manage(
        "shell", "-c", f"from django.conf import settings; print(settings.{name})", env=env,
        var_dir=var_dir,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_production_without_secret_key_refuses_to_start(tmp_path):
    done = manage("check", env={"DATABASE_URL": PG_URL}, var_dir=tmp_path)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "SECRET_KEY is not set" in done.stderr
    assert not (tmp_path / "secret_key").exists()


def test_the_embedded_default_makes_a_key_once_and_keeps_it_private(tmp_path):
    first = printed_setting("SECRET_KEY", env={}, var_dir=tmp_path)
    second = printed_setting("SECRET_KEY", env={}, var_dir=tmp_path)
    assert first == second != OLD_FALLBACK
    assert len(first) >= 50
    stored = tmp_path / "secret_key"
    assert stored.read_text().strip() == first
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    other = tmp_path / "other"
    other.mkdir()
    assert printed_setting("SECRET_KEY", env={}, var_dir=other) != first


def test_an_explicit_secret_key_wins(tmp_path):
    env = {"SECRET_KEY": LONG_KEY, "DATABASE_URL": PG_URL}
    assert printed_setting("SECRET_KEY", env=env, var_dir=tmp_path) == LONG_KEY
    assert not (tmp_path / "secret_key").exists()


def test_check_deploy_is_clean_in_production_mode_with_https(tmp_path):
    env = {
        "SECRET_KEY": LONG_KEY,
        "DATABASE_URL": PG_URL,
        "OPENCLAW_HTTPS": "1",
        "ALLOWED_HOSTS": "sessions.example.com",
    }
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=env, var_dir=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "no issues" in done.stdout


def test_check_deploy_sees_our_security_middleware(tmp_path):
    """Without HTTPS the checks that need SecurityMiddleware run (they did not: W001 hid them)."""
    done = manage("check", "--deploy", env={"SECRET_KEY": LONG_KEY}, var_dir=tmp_path)
    output = done.stderr + done.stdout
    assert "security.W001" not in output and "security.W002" not in output
    assert "security.W004" in output and "security.W008" in output


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "False False False 0"),
        ({"OPENCLAW_HTTPS": "1"}, "True True True 31536000"),
        ({"OPENCLAW_HTTPS": "1", "OPENCLAW_SSL_REDIRECT": "0"}, "True True False 31536000"),
        ({"OPENCLAW_SECURE_COOKIES": "1", "OPENCLAW_HSTS_SECONDS": "600"}, "True True False 600"),
    ],
)
def test_https_switches(tmp_path, env, expected):
    done = manage(
        "shell",
        "-c",
        "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)",
        env=env,
        var_dir=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected


# --- runs surviving failures (docs/reliability.md) --------------------------------------------

RUN_SETTINGS = (
    "from sessions_app.runs import engine, outage, sweeper, watchdog; "
    "print(engine.HEARTBEAT_SECONDS, watchdog.interval(), watchdog.dead_after(), "
    "watchdog.orphan_after(), sweeper.HEARTBEAT_TIMEOUT_SECONDS, sweeper.REQUEUE_AFTER_SECONDS, "
    "outage.bound_seconds())"
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "2 2.0 10 10 60 120 30.0"),
        (
            {
                "RUN_HEARTBEAT_SECONDS": "1.5",
                "RUN_WATCH_SECONDS": "0.5",
                "RUN_DEAD_AFTER_SECONDS": "6",
                "RUN_ORPHAN_AFTER_SECONDS": "4",
                "RUN_HEARTBEAT_TIMEOUT_SECONDS": "90",
                "RUN_REQUEUE_AFTER_SECONDS": "300",
                "RUN_DB_OUTAGE_SECONDS": "2.5",
            },
            "1.5 0.5 6 4 90 300 2.5",
        ),
    ],
    ids=["defaults", "from the environment"],
)
def test_the_run_failure_settings_come_from_the_environment(tmp_path, env, expected):
    """An operator tunes how long a run rides out an outage and how soon a dead worker's runs
    are dealt with (they were documented but read from nowhere: the defaults always held)."""
    done = manage("shell", "-c", RUN_SETTINGS, env=env, var_dir=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RUN_DB_OUTAGE_SECONDS": "soon"}, "RUN_DB_OUTAGE_SECONDS must be a number of seconds"),
        ({"RUN_DB_OUTAGE_SECONDS": "0"}, "RUN_DB_OUTAGE_SECONDS must be a number of seconds"),
        ({"RUN_ORPHAN_AFTER_SECONDS": "2.5"}, "RUN_ORPHAN_AFTER_SECONDS must be a whole number"),
        ({"RUN_DEAD_AFTER_SECONDS": "3"}, "must be at least twice RUN_HEARTBEAT_SECONDS (2)"),
    ],
)
def test_a_bad_run_setting_stops_the_start_with_its_name(tmp_path, env, message):
    done = manage("check", env=env, var_dir=tmp_path)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr


# --- Content-Security-Policy ---------------------------------------------------------------------


def test_ui_pages_carry_a_content_security_policy(client, django_user_model, settings):
    login = client.get("/accounts/login/")
    policy = login["Content-Security-Policy"]
    assert policy == settings.CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    user = django_user_model.objects.create_superuser("csp", password="pw-csp-123456")
    client.force_login(user)
    page = client.get("/")
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == policy


def test_the_ui_templates_have_no_inline_script_or_style():
    """What the policy forbids must not be in the pages it covers."""
    for template in (ROOT / "templates" / "ui").glob("*.html"):
        text = template.read_text()
        assert "<script>" not in text and "<style" not in text, template
        assert " style=" not in text and " onclick=" not in text, template
    login = (ROOT / "templates" / "registration" / "login.html").read_text()
    assert "<script>" not in login and "<style" not in login


def test_the_admin_keeps_its_inline_styles(admin_client):
    assert "Content-Security-Policy" not in admin_client.get("/admin/")
