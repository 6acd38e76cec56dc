"""The PostgreSQL and Redis servers a bench restarts (bench/fault_run.py, bench/reliability_bench.py
--restarts): start, stop and restart, in one place.

- `Postgres`: a private cluster (`initdb` into a directory, as the `postgres` user when run as
  root, on a port of its own), or, with `Postgres.machine()`, the machine's own cluster
  (`pg_ctlcluster`: restart only).
- `Redis`: a `redis-server` on a port, without persistence; `restart()` is shutdown nosave and
  start, waiting for PONG.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import time
from pathlib import Path


class ServiceError(RuntimeError):
    pass


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not found:
        raise ServiceError("no PostgreSQL binaries under /usr/lib/postgresql")
    return found[-1]


def _as_postgres(args: list[str]) -> list[str]:
    """initdb and pg_ctl refuse to run as root: as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class Postgres:
    """A private cluster in `data` on `port` (init, start, restart, stop), or the machine's."""

    def __init__(self, data: Path | None, port: int):
        self.data, self.port = data, port

    @classmethod
    def machine(cls) -> Postgres:
        """The machine's own cluster (the newest version's `main`), restarted by pg_ctlcluster."""
        return cls(None, 5432)

    def init(self) -> None:
        assert self.data is not None
        self.data.parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.data.parent, user.pw_uid, user.pw_gid)
        subprocess.run(
            _as_postgres(
                [str(_pg_bin() / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust"]
            ),
            check=True,
            capture_output=True,
        )

    def _ctl(self, *args: str) -> None:
        assert self.data is not None
        options = f"-p {self.port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_postgres(
                [str(_pg_bin() / "pg_ctl"), "-D", str(self.data), "-o", options, "-w", *args]
            ),
            check=True,
            capture_output=True,
        )

    def _log(self) -> str:
        assert self.data is not None
        return str(self.data.parent / "postgres.log")

    def start(self) -> None:
        self._ctl("-l", self._log(), "start")

    def restart(self) -> None:
        if self.data is None:
            cluster = sorted(os.listdir("/etc/postgresql"))[-1]
            subprocess.run(
                ["pg_ctlcluster", "--skip-systemctl-redirect", cluster, "main", "restart"],
                check=True,
                capture_output=True,
            )
            return
        self._ctl("-m", "fast", "-l", self._log(), "restart")

    def stop(self, mode: str = "immediate") -> None:
        if self.data is None:
            raise ServiceError("the machine's PostgreSQL is not stopped by a bench")
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ctl("-m", mode, "stop")

    def createdb(self, name: str) -> None:
        subprocess.run(
            ["createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name],
            check=True,
            capture_output=True,
        )


class Redis:
    """A `redis-server` on 127.0.0.1:`port`, without persistence."""

    def __init__(self, port: int):
        self.port = port

    def start(self) -> None:
        subprocess.run(
            [
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
            )
            if done.stdout.strip() == "PONG":
                return
            time.sleep(0.1)
        raise ServiceError(f"redis did not start on port {self.port}")

    def stop(self) -> None:
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True
        )

    def restart(self) -> None:
        self.stop()
        time.sleep(1)
        self.start()
