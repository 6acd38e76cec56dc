"""Real processes for tests that cross them: the ASGI server (and, later, workers).

`server` starts `manage.py serve` on a free port against the test database, so a test can talk
to it over real HTTP exactly as a client would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings as django_settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def test_database_url() -> str:
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings['NAME']).resolve()}"
    user = settings.get("USER") or "postgres"
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{settings['NAME']}"


CHILD_APP_NAME = "openclaw-test-child"


def child_env(**extra: str) -> dict:
    env = dict(os.environ)
    env["DATABASE_URL"] = test_database_url()
    env.pop("PYTEST_CURRENT_TEST", None)
    # The fake model and webhook servers listen on loopback (sessions_app/lib/outbound.py).
    env.setdefault("OPENCLAW_OUTBOUND_ALLOW", "127.0.0.1,::1,localhost")
    # The ACP harnesses the tests run (tests/acp/harness_fixtures.py).
    from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, CLOSED

    env.setdefault("OPENCLAW_ACP_COMMANDS", ";".join(shlex.join(c) for c in ACP_COMMANDS))
    env.setdefault("OPENCLAW_ACP_ENV", ",".join(ACP_ENV))
    if CLOSED is not None:
        env.setdefault("OPENCLAW_ACP_SANDBOX", "none")  # (harness_fixtures.CLOSED says why)
    # The test process's key: a PostgreSQL DATABASE_URL is production mode, which needs one,
    # and a session cookie made here must be valid there.
    env.setdefault("SECRET_KEY", django_settings.SECRET_KEY)
    # libpq names their PostgreSQL sessions, so an outage test can cut theirs and not the test
    # process's own (database_refuses_connections).
    env["PGAPPNAME"] = CHILD_APP_NAME
    env.update(extra)
    return env


def manage(*args: str) -> str:
    """Run a management command in a separate process against the test database; its stdout."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def free_port() -> int:
    """A port no other process is handed until the server we start binds it. A port that was
    merely free could go to another test process (a parallel worker, another run) in the second
    or two the server takes to start; this one is left in TIME_WAIT, which the kernel skips when
    it picks a free port for anyone (bind to port 0) for a minute, while a server binding it by
    number with SO_REUSEADDR (uvicorn, daphne) gets it at once."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address):
            accepted, _ = listener.accept()
            # The accepted end closes first: the TIME_WAIT is on this port's side.
            accepted.close()
        return address[1]


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen
    app_name: str = ""

    def request(
        self, method: str, path: str, *, body=None, token: str | None = None, headers=None
    ) -> Response:
        data = (
            None
            if body is None
            else (body if isinstance(body, bytes) else json.dumps(body).encode())
        )
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return Response(reply.status, dict(reply.headers), reply.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, dict(error.headers), error.read())

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()
        end_database_sessions(self.app_name)


# How long a server may take to accept connections: about 2 s on an idle 2-core machine, but
# parallel workers on a machine busy with other work have seen 30 s (a deadline, not a wait).
SERVER_START_SECONDS = 120


def start_server(
    *, worker: bool = False, timeout: float = SERVER_START_SECONDS, env=None
) -> LiveServer:
    port = free_port()
    args = [sys.executable, "manage.py", "serve", "--port", str(port)]
    if not worker:
        args.append("--no-worker")
    app_name = unique_app_name("server")
    process = subprocess.Popen(
        args,
        cwd=ROOT,
        env=child_env(**{**(env or {}), "PGAPPNAME": app_name}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    server = LiveServer(f"http://127.0.0.1:{port}", process, app_name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stderr.read().decode()[-2000:]
            process.stderr.close()
            raise RuntimeError(f"server exited: {output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("server did not start")


@dataclass
class LiveWorker:
    process: subprocess.Popen
    app_name: str = ""

    def stop(self):
        """Ask the cluster to stop (it stops its own workers), then make sure the group is gone."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        self.kill()

    def kill(self):
        """Like a machine losing power: every process of the cluster, at once, no cleanup."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        end_database_sessions(self.app_name)


def start_worker(
    *, workers: int = 2, env: dict[str, str] | None = None, log: Path | None = None
) -> LiveWorker:
    """A django-q2 cluster under its supervisor (`manage.py worker`, what `serve` runs) on the
    test database, in its own process group (`env`: more environment, e.g. a setting; `log`: a
    file for its output)."""
    app_name = unique_app_name("worker")
    env = child_env(**{**(env or {}), "PGAPPNAME": app_name})
    env["Q_WORKERS"] = str(workers)
    output = log.open("w") if log else subprocess.DEVNULL
    try:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "worker"],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        if log:
            output.close()
    return LiveWorker(process, app_name)


def unique_app_name(what: str) -> str:
    """A PostgreSQL application_name for one started process (CHILD_APP_NAME-<what>-<n>)."""
    return f"{CHILD_APP_NAME}-{what}-{uuid.uuid4().hex[:8]}"


def end_database_sessions(app_name: str) -> None:
    """End the PostgreSQL sessions a stopped process leaves behind. A killed client's session
    lives on until it next talks to the client, and one waiting on a lock never does: it then
    deadlocks with the flush after the test (seen in CI: the flush's TRUNCATE against a killed
    worker's INSERT)."""
    if not app_name or connection.vendor != "postgresql":
        return
    # A connection of its own: this may run where the test's database access is blocked (the
    # teardown of a fixture that started the process). Best effort: a fixture's other
    # processes must still be stopped after it, whatever happens here.
    try:
        with _maintenance_connection() as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                [app_name],
            )
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"could not end the sessions of {app_name}: {exc}", stacklevel=2)


def _maintenance_connection():
    """An autocommit psycopg connection to the server's `postgres` database."""
    import psycopg

    params = connection.get_connection_params()
    return psycopg.connect(
        host=params.get("host"),
        port=params.get("port"),
        user=params.get("user"),
        dbname="postgres",
        autocommit=True,
    )


def wait_until(predicate, *, timeout: float = 30, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


@contextlib.contextmanager
def database_refuses_connections():
    """The test database refuses new connections, and the processes the test started lose
    theirs, as in a server restart. The test process keeps its own (its threads' pooled
    connections too), so nothing of it is left broken afterwards. Set from the server's
    maintenance database: a database cannot refuse the session that asks."""
    name = connection.settings_dict["NAME"]
    admin = _maintenance_connection()
    try:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name LIKE %s",
            [name, CHILD_APP_NAME + "%"],
        )
        yield
    finally:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        admin.close()
