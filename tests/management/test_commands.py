"""create_api_key and seed_demo."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Agent, ApiKey, Message, Session
from tests.conftest import Api
from tests.test_production_settings import manage


def create_key(*args) -> str:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip().splitlines()[-1]


def test_create_api_key_prints_the_key_alone_on_the_last_line_and_stores_a_hash(agents):
    token = create_key("--scope", "agent", "--agent", "main", "--sandboxed")
    row = ApiKey.objects.get()
    assert (
        token.startswith("ocs_")
        and row.secret_hash not in token
        and token.split("_", 2)[2] not in row.secret_hash
    )
    assert row.scope == "agent" and row.agent_id == "main" and row.sandboxed


def test_create_api_key_pins_a_session(agents):
    create_key("--scope", "agent", "--agent", "main", "--session", "discord:group:dev")
    assert ApiKey.objects.get().session_key == "agent:main:discord:group:dev"


def test_create_api_key_checks_its_arguments(agents):
    with pytest.raises(CommandError):
        create_key("--scope", "agent")
    with pytest.raises(CommandError):
        create_key("--scope", "agent", "--agent", "ghost")
    with pytest.raises(CommandError):
        create_key("--scope", "operator", "--agent", "main")
    with pytest.raises(CommandError):
        create_key("--scope", "agent", "--agent", "main", "--session", "agent:research:main")


def test_seed_demo_is_idempotent_and_has_every_kind(db):
    call_command("seed_demo", stdout=StringIO())
    counts = (Agent.objects.count(), Session.objects.count(), Message.objects.count())
    call_command("seed_demo", stdout=StringIO())
    assert (Agent.objects.count(), Session.objects.count(), Message.objects.count()) == counts
    kinds = set(Session.objects.values_list("kind", flat=True))
    assert kinds == {"main", "group", "cron", "hook", "node", "other"}
    assert len(set(Session.objects.values_list("row_channel", flat=True))) >= 5
    assert Message.objects.filter(role="toolResult").exists()
    assert Session.objects.exclude(spawned_by="").exists()


def test_demo_answers_the_readme_curl(db):
    from django.test import Client

    call_command("seed_demo", stdout=StringIO())
    api = Api(Client(), create_key("--scope", "agent", "--agent", "main"))
    rows = api.details("sessions_list")["sessions"]
    assert {"agent:main:main", "agent:main:discord:group:dev", "agent:research:main"} <= {
        r["key"] for r in rows
    }
    history = api.details("sessions_history", {"sessionKey": "main", "includeTools": True})
    assert any(m["role"] == "toolResult" for m in history["messages"])


def test_serve_accepts_a_burst_of_connections(monkeypatch):
    """uvicorn's default backlog (2048) made a burst's surplus connections retry their SYN for
    up to a minute (issue 16); serve asks for 4096, or OPENCLAW_LISTEN_BACKLOG."""
    from sessions_app.management.commands.serve import server_command

    command = server_command("uvicorn", "127.0.0.1", 8000)
    assert command[command.index("--backlog") + 1] == "4096"
    monkeypatch.setenv("OPENCLAW_LISTEN_BACKLOG", "8192")
    command = server_command("uvicorn", "127.0.0.1", 8000)
    assert command[command.index("--backlog") + 1] == "8192"


def test_serve_tells_its_worker_where_harnesses_reach_mcp():
    """OPENCLAW_MCP_URL for the worker `serve` starts (docs/acp.md, the session tools): the
    address it serves on, a wildcard bind reached on loopback."""
    from sessions_app.management.commands.serve import local_base

    assert local_base("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert local_base("0.0.0.0", 9000) == "http://127.0.0.1:9000"
    assert local_base("::", 9000) == "http://[::1]:9000"


def test_serve_on_a_database_not_migrated_says_what_to_run(tmp_path):
    """A new checkout served without `make run` (or a new DATABASE_URL): one clear line, not a
    traceback from the first query (the schedule table)."""
    # No DATABASE_URL: an empty SQLite database of its own in tmp_path.
    done = manage("serve", "--no-worker", "--port", "1", env={}, var_dir=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "unapplied migration(s): run `.venv/bin/python manage.py migrate` first" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_with_daphne_missing_says_how_to_install_it(monkeypatch):
    """daphne is an extra since issue 29.1 (not what `make run` installs): asking for it without
    it is one line saying how to get it."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "daphne" else real(name, *a)
    )
    with pytest.raises(CommandError, match=r"daphne is not installed: .*'\.\[daphne\]'"):
        call_command("serve", "--server", "daphne", "--no-worker", "--port", "1")


def test_seed_demo_migrate_makes_a_new_database_and_loads_the_demo(tmp_path):
    """`make run`'s one step before serving (issue 29.1): an empty database migrated and the
    demo loaded in one process, and `serve` then finds nothing unapplied."""
    done = manage("seed_demo", "--migrate", env={}, var_dir=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Applying sessions_app.0001" in done.stdout
    assert "seed_demo: 3 agents" in done.stdout
    again = manage("seed_demo", "--migrate", env={}, var_dir=tmp_path)
    assert again.returncode == 0 and "No migrations to apply." in again.stdout
