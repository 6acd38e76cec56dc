"""Parallel test workers (openclaw_site/test_workers.py, docs/testing.md): each has its own var/,
Redis database and prefix, and passes them on to the processes its tests start."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from django.conf import settings

from openclaw_site import test_workers
from tests.servers import child_env, free_port

VAR = Path("/srv/openclaw/var")


def isolated(**environ: str) -> dict[str, str]:
    test_workers.isolate(environ, VAR)
    return environ


def test_outside_a_worker_nothing_changes():
    assert isolated(REDIS_URL="redis://127.0.0.1:6379/2") == {
        "REDIS_URL": "redis://127.0.0.1:6379/2"
    }
    assert isolated(PYTEST_XDIST_WORKER="master") == {"PYTEST_XDIST_WORKER": "master"}


def test_a_worker_gets_its_own_var_dir_and_nothing_of_redis_without_it():
    env = isolated(PYTEST_XDIST_WORKER="gw3")
    assert env["OPENCLAW_VAR_DIR"] == str(VAR / "xdist" / "gw3")
    assert "REDIS_URL" not in env and "OPENCLAW_REDIS_PREFIX" not in env


def test_a_configured_var_dir_cold_dir_and_media_root_get_the_worker_suffix():
    env = isolated(
        PYTEST_XDIST_WORKER="gw1",
        OPENCLAW_VAR_DIR="/tmp/pg",
        OPENCLAW_COLD_DIR="/tmp/cold",
        MEDIA_ROOT="/tmp/media",
    )
    assert env["OPENCLAW_VAR_DIR"] == "/tmp/pg/xdist/gw1"
    assert env["OPENCLAW_COLD_DIR"] == "/tmp/cold/xdist/gw1"
    assert env["MEDIA_ROOT"] == "/tmp/media/xdist/gw1"


def test_the_redis_database_is_the_configured_one_plus_six_plus_the_worker_number():
    env = isolated(PYTEST_XDIST_WORKER="gw0", REDIS_URL="redis://127.0.0.1:6379/2")
    assert env["REDIS_URL"] == "redis://127.0.0.1:6379/8"
    assert env["OPENCLAW_REDIS_PREFIX"] == "openclaw-2-gw0"
    env = isolated(PYTEST_XDIST_WORKER="gw3", REDIS_URL="redis://:pw@redis:6380/2?ssl=0")
    assert env["REDIS_URL"] == "redis://:pw@redis:6380/11?ssl=0"
    # No database in the URL is database 0.
    env = isolated(PYTEST_XDIST_WORKER="gw1", REDIS_URL="redis://127.0.0.1:6379")
    assert env["REDIS_URL"] == "redis://127.0.0.1:6379/7"
    assert env["OPENCLAW_REDIS_PREFIX"] == "openclaw-0-gw1"


def test_past_database_15_the_worker_shares_the_configured_one_under_its_own_prefix():
    env = isolated(PYTEST_XDIST_WORKER="gw2", REDIS_URL="redis://127.0.0.1:6379/9")
    assert env["REDIS_URL"] == "redis://127.0.0.1:6379/9"
    assert env["OPENCLAW_REDIS_PREFIX"] == "openclaw-9-gw2"


def test_isolating_twice_does_not_nest():
    env = isolated(PYTEST_XDIST_WORKER="gw1", REDIS_URL="redis://127.0.0.1:6379/2")
    again = dict(env)
    test_workers.isolate(again, VAR)
    assert again == env


def test_this_process_and_the_processes_it_starts_share_the_workers_environment():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return  # a serial run: nothing of its own to pass on
    env = child_env()
    assert settings.VAR_DIR.parts[-2:] == ("xdist", worker)
    assert env["OPENCLAW_VAR_DIR"] == str(settings.VAR_DIR)
    assert env.get("REDIS_URL", "") == settings.REDIS_URL
    if settings.REDIS_URL:
        assert env["OPENCLAW_REDIS_PREFIX"] == settings.REDIS_PREFIX
        assert settings.REDIS_PREFIX.endswith(f"-{worker}")
        assert settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] == settings.REDIS_PREFIX


def test_a_reserved_port_is_refused_to_a_plain_bind_and_given_to_a_server_binding_it():
    """The kernel picks a free port for anyone (bind to port 0) with the same check a plain bind
    by number fails; uvicorn and daphne bind with SO_REUSEADDR."""
    port = free_port()
    with socket.socket() as plain:
        try:
            plain.bind(("127.0.0.1", port))
            refused = False
        except OSError:
            refused = True
        assert refused
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
