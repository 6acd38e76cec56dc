"""Serve the ASGI app (uvicorn, or daphne) and the worker (`manage.py worker`: one django-q2
cluster, supervised); Ctrl-C stops both.

uvicorn is the default: its WebSocket and streaming writes wait while a client's socket is full,
which is what lets the live endpoints notice a slow reader (docs/live.md); daphne buffers
without limit. Both serve HTTP, SSE and /ws/ from the same application.
"""

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from sessions_app.manage import retention
from sessions_app.runs.sweeper import ensure_schedule
from sessions_app.ui import demo_login as demo

# A worker process that exits is started again after this long, doubling while it keeps
# exiting, and from the start again once one has run for a minute.
WORKER_FIRST_DELAY = 1.0
WORKER_MAX_DELAY = 30.0
WORKER_STABLE_SECONDS = 60.0


class Command(BaseCommand):
    help = "Run the web server and the task worker together (what `make run` uses)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument(
            "--web-workers",
            type=int,
            default=int(os.environ.get("WEB_CONCURRENCY", "1")),
            help="uvicorn worker processes (each with its own live hub); needs REDIS_URL to "
            "carry live hints between them quickly, else they poll",
        )
        parser.add_argument(
            "--server",
            choices=["uvicorn", "daphne"],
            default=os.environ.get("SERVER", "uvicorn"),
            help="ASGI server: uvicorn (default) or daphne",
        )
        parser.add_argument(
            "--demo-login",
            action="store_true",
            help="Also say how to log in to the browser as the demo account, made on first "
            "use with its password shown once (what `make run` passes)",
        )

    def handle(self, *args, port, host, no_worker, server, web_workers, demo_login, **options):
        if server == "daphne" and importlib.util.find_spec("daphne") is None:
            # Not a run-time dependency (pyproject.toml): a clear word instead of a traceback.
            raise CommandError(
                "daphne is not installed: .venv/bin/python -m pip install -e '.[daphne]' "
                "(or serve with uvicorn, the default)"
            )
        refuse_unmigrated()
        ensure_schedule()
        retention.ensure_schedules()
        python = sys.executable
        text = banner(host, port, demo.demo_login() if demo_login else None)
        command = server_command(server, host, port, web_workers)
        if no_worker:
            # Nothing to supervise: this process becomes the server (its signals, its exit
            # status), and no second Python with Django loaded sits beside it.
            self.stdout.write(text)
            self.stdout.flush()
            os.execv(command[0], command)
        worker_env = {**os.environ}
        # Where the worker's ACP harnesses reach /mcp/ (their session tools): here.
        worker_env.setdefault("OPENCLAW_MCP_URL", f"{local_base(host, port)}/mcp/")
        server = subprocess.Popen(command)
        worker = KeptWorker([python, "manage.py", "worker"], self.stderr.write, env=worker_env)
        stopping = False
        announced = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and server.poll() is None:
                # The banner once the first page can be served, so it is the last thing on the
                # screen, after the server's own start-up lines (issue 29.1).
                if not announced and accepts(host, port) and server.poll() is None:
                    self.stdout.write(text)
                    self.stdout.flush()
                    announced = True
                worker.keep()
                time.sleep(0.2)
        finally:
            children = [server, worker.process]
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
            worker.end_group()
        if server.returncode not in (0, -signal.SIGTERM, None) and not stopping:
            raise SystemExit(1)


class KeptWorker:
    """The worker process (`manage.py worker`, which supervises its cluster), started again
    should it exit itself (a SIGKILL, the OOM killer): the server never runs without one for
    long. After `WORKER_FIRST_DELAY`, doubling while it keeps exiting, from the start again
    once one has run for `WORKER_STABLE_SECONDS`."""

    def __init__(self, command: list[str], say: Callable[[str], object], *, env: dict[str, str]):
        self.command, self.say, self.env = command, say, env
        self.process = self.start()
        self.started = time.monotonic()
        self.restart_at: float | None = None
        self.delay = WORKER_FIRST_DELAY

    def start(self) -> subprocess.Popen:
        # A process group of its own: a worker that dies leaves its cluster's processes (the
        # sentinel and the workers it forked) in it, to be ended before the next one starts.
        # The terminal's Ctrl-C reaches it through this command's handler.
        return subprocess.Popen(self.command, start_new_session=True, env=self.env)

    def end_group(self) -> None:
        """End what is left of the worker's process group (nothing, after a clean stop)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def keep(self) -> None:
        if self.restart_at is None and self.process.poll() is not None:
            self.end_group()
            if time.monotonic() - self.started >= WORKER_STABLE_SECONDS:
                self.delay = WORKER_FIRST_DELAY
            self.say(
                f"The worker exited (code {self.process.returncode}); starting it again in "
                f"{self.delay:.0f} s"
            )
            self.restart_at = time.monotonic() + self.delay
            self.delay = min(self.delay * 2, WORKER_MAX_DELAY)
        elif self.restart_at is not None and time.monotonic() >= self.restart_at:
            self.process = self.start()
            self.started, self.restart_at = time.monotonic(), None


def banner(host: str, port: int, login: str | None) -> str:
    """Where the site is, how to log in (`--demo-login`), where the API is described."""
    base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    lines = [f"Serving on {base}/ (Ctrl-C stops)"]
    if login:
        lines.append(login)
    lines.append(f"API docs: {base}{reverse('docs')} (OpenAPI schema: {base}{reverse('schema')})")
    return "\n".join(lines)


def local_address(host: str) -> str:
    """The address this machine reaches the server's bind on: a wildcard bind on loopback."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def local_base(host: str, port: int) -> str:
    address = local_address(host)
    return f"http://{f'[{address}]' if ':' in address else address}:{port}"


def accepts(host: str, port: int) -> bool:
    """Whether something accepts connections on the address the server binds."""
    address = local_address(host)
    try:
        with socket.create_connection((address, port), timeout=0.2):
            return True
    except OSError:
        return False


def refuse_unmigrated() -> None:
    """A clear refusal instead of a traceback from the first query when the database has not
    been migrated (a new checkout served without `make run`, or a new DATABASE_URL)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise CommandError(
            f"The database has {len(pending)} unapplied migration(s): run "
            "`.venv/bin/python manage.py migrate` first (`make run` does it, and loads the demo)."
        )


def server_command(server: str, host: str, port: int, workers: int = 1) -> list[str]:
    app = "openclaw_site.asgi:application"
    if server == "daphne":
        return [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), app]
    return [
        sys.executable, "-m", "uvicorn", app, "--host", host, "--port", str(port),
        # Frames are small JSON; compressing each one per connection costs more CPU than it
        # saves on a LAN. The server refuses frames over 1 MiB; the app's own cap is lower.
        "--ws-per-message-deflate", "false", "--ws-max-size", str(1024 * 1024),
        # Open SSE streams and WebSockets must not hold a restart for long.
        "--timeout-graceful-shutdown", "3",
        # Channels' router has no lifespan handler; uvicorn would probe and log that at start.
        "--lifespan", "off",
        # Connections waiting to be accepted. uvicorn's 2048 overflowed in a burst of 13,000
        # (issue 16): a refused SYN is retried by the client's kernel after 1, 3, 7, 15, 31 s,
        # so another client's new connection waited up to a minute. The kernel caps it at
        # net.core.somaxconn (4096 on Linux 5.4+; raise that too for more).
        "--backlog", os.environ.get("OPENCLAW_LISTEN_BACKLOG", "4096"),
        *(["--workers", str(workers)] if workers > 1 else []),
        *(["--no-access-log"] if os.environ.get("ACCESS_LOG", "1") == "0" else []),
    ]  # fmt: skip
