"""Serve the ASGI app (daphne) and one django-q2 worker cluster; Ctrl-C stops both."""

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server and the task worker together (what `make run` uses)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument(
            "--server",
            choices=["uvicorn", "daphne"],
            default=os.environ.get("SERVER", "daphne"),
            help="ASGI server: daphne (default) or uvicorn (if installed)",
        )

    def handle(self, *args, port, host, no_worker, server, **options):
        from sessions_app.runs.sweeper import ensure_schedule

        ensure_schedule()
        python = sys.executable
        children = [
            subprocess.Popen(
                [
                    python,
                    "-m",
                    "daphne",
                    "-b",
                    host,
                    "-p",
                    str(port),
                    "openclaw_site.asgi:application",
                ]
            )
        ]
        if not no_worker:
            children.append(subprocess.Popen([python, "manage.py", "qcluster"]))
        self.stdout.write(
            f"Serving on http://{host}:{port}/ (API docs: /api/v1/docs/). Ctrl-C stops."
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(c.poll() is None for c in children):
                time.sleep(0.2)
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [c.returncode for c in children if c.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            raise SystemExit(1)
