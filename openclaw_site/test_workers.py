"""Parallel test runs (pytest-xdist, docs/testing.md "Per-worker isolation"): what each worker
process of a run has of its own, so that workers never see each other's data.

A worker (PYTEST_XDIST_WORKER=gwN) gets
- its own var/: VAR_DIR/xdist/gwN, so its SQLite test database, cold storage, media and stored
  secret key are its own (an explicit OPENCLAW_COLD_DIR or MEDIA_ROOT gets the same suffix);
- with REDIS_URL, its own Redis database, the configured one + 6 + N (db 2: gw0 → 8, gw1 → 9,
  …; db 0: 6, 7, …), or the configured one itself past db 15 (Redis has 16 by default);
- its own Redis prefix, OPENCLAW_REDIS_PREFIX=openclaw-<configured db>-gwN (the channel layer's
  groups and django-q2's queue): pub/sub channels are shared by every database of a server, and
  two runs side by side (another checkout's, CI's) may land on the same worker database.
The PostgreSQL test database is pytest-django's, suffixed per worker (test_<name>_gwN).

The values are written into the environment before the settings read it, so the servers,
workers and commands a test starts (tests/servers.py passes the environment on) use the same.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

# Set once a process's environment is the worker's (settings read twice must not nest var/).
DONE = "OPENCLAW_TEST_WORKER"
REDIS_DATABASES = 16
REDIS_DB_OFFSET = 6


def worker_redis_url(url: str, worker: int) -> tuple[str, int]:
    """The worker's Redis URL, and the configured database number."""
    parts = urlsplit(url)
    path = parts.path.strip("/")
    configured = int(path) if path.isdigit() else 0
    db = configured + REDIS_DB_OFFSET + worker
    if db >= REDIS_DATABASES:
        db = configured
    return urlunsplit(parts._replace(path=f"/{db}")), configured


def isolate(environ: MutableMapping[str, str], default_var_dir: Path) -> None:
    """Give this process the environment of its xdist worker (nothing outside a worker)."""
    name = environ.get("PYTEST_XDIST_WORKER", "")
    if not name.startswith("gw") or not name[2:].isdigit() or environ.get(DONE) == name:
        return
    number = int(name[2:])
    var_dir = Path(environ.get("OPENCLAW_VAR_DIR", default_var_dir))
    environ["OPENCLAW_VAR_DIR"] = str(var_dir / "xdist" / name)
    for setting in ("OPENCLAW_COLD_DIR", "MEDIA_ROOT"):
        if environ.get(setting):
            environ[setting] = str(Path(environ[setting]) / "xdist" / name)
    if environ.get("REDIS_URL", "").strip():
        url, configured = worker_redis_url(environ["REDIS_URL"].strip(), number)
        environ["REDIS_URL"] = url
        prefix = environ.get("OPENCLAW_REDIS_PREFIX", "openclaw")
        environ["OPENCLAW_REDIS_PREFIX"] = f"{prefix}-{configured}-{name}"
    environ[DONE] = name
