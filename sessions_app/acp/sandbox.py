"""Who a harness process runs as (OPENCLAW_ACP_SANDBOX, docs/acp.md "Who a harness runs as").

A harness is a program any agent key can hand a prompt to, so a prompt injection must not reach
the worker's secrets. Running as the worker's user, it could read them all: the worker's
environment (`/proc/<ppid>/environ`: SECRET_KEY, DATABASE_URL), the database file, var/, and
other sessions' working directories. So a worker running as root starts each harness as a user
of its own working directory:

- every working directory a harness is started in gets a uid (and the same gid) of its own from
  OPENCLAW_ACP_UIDS, kept in var/acp/uids.json; harnesses working in the same directory share it
  (they share its files anyway), harnesses in different directories never do, and a uid is never
  handed out twice (a directory removed and made again gets a new one), so files a former owner
  left elsewhere (/tmp) stay out of a new one's reach;
- the directory is given to that uid (all of it, the first time, except directories that belong
  to other harness users), mode 0700, so no other harness can enter it;
- the process has that uid and gid and no supplementary groups: no capability, so it cannot read
  the worker's /proc/<pid>/environ (another user's), nor anything of the worker's that "others"
  cannot read; var/ (the SQLite database, the secret key, the uid registry) and the SQLite
  database file are made private to the worker first (go-rwx).

A worker that is not root cannot do that, nor can a root worker start a program other users
cannot reach (a Python under /root). By default (`auto`) it then refuses to start the harness in
production mode (a server DATABASE_URL); on the embedded SQLite default (a developer's `make
run`) it runs the harness as its own user and says so in the child's transcript. `uid`
always asks for the separate user (a worker that is not root refuses); `none` always runs a
harness as the worker's own user: an explicit choice to trust every allowed harness with the
worker's secrets.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from .harnesses import Harness, HarnessError

log = logging.getLogger("openclaw.acp")

MODES = ("auto", "uid", "none")
REGISTRY = "uids.json"


@dataclass(frozen=True)
class RunAs:
    """The user a harness process runs as; uid None: the worker's own (unsandboxed)."""

    uid: int | None
    note: str = ""  # said in the child's transcript when the harness is not sandboxed

    def popen_kwargs(self) -> dict:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.uid, "extra_groups": []}


def mode() -> str:
    value = str(getattr(settings, "OPENCLAW_ACP_SANDBOX", "auto")).strip().lower() or "auto"
    if value not in MODES:
        raise HarnessError(
            f"OPENCLAW_ACP_SANDBOX must be one of {', '.join(MODES)} (it is {value!r})"
        )
    return value


def uid_range() -> range:
    raw = str(getattr(settings, "OPENCLAW_ACP_UIDS", "")).strip()
    try:
        first, last = (int(part) for part in raw.split("-"))
    except ValueError:
        raise HarnessError(
            f"OPENCLAW_ACP_UIDS must be FIRST-LAST, two uids (it is {raw!r})"
        ) from None
    if not 1000 <= first <= last < 2**32 - 1:
        raise HarnessError("OPENCLAW_ACP_UIDS must be a range of uids from 1000 to 4294967294")
    return range(first, last + 1)


def run_as_for(harness: Harness, cwd: str) -> RunAs:
    """Who the harness starts as in `cwd` (already resolved inside its root); HarnessError when
    the deployment's setting cannot be honoured."""
    harness_id = harness.id
    chosen = mode()
    if chosen == "none":
        return RunAs(None)
    if _worker_uid() != 0:
        if chosen == "auto" and not _production():
            return RunAs(
                None,
                note=(
                    "This harness runs as the worker's own user (the worker is not root), so it "
                    "could read the worker's environment and files. Run the worker as root to "
                    "give each harness a user of its own (OPENCLAW_ACP_SANDBOX, docs/acp.md)."
                ),
            )
        raise HarnessError(
            f'ACP harness "{harness_id}" was not started: the worker runs as uid {_worker_uid()}, '
            "not root, so it cannot start the harness as a user of its own, and as the worker's "
            "user it could read the worker's secrets. Run the worker as root, or set "
            "OPENCLAW_ACP_SANDBOX=none to trust every allowed harness with them (docs/acp.md)"
        )
    try:
        program = harness.executable()
    except HarnessError:
        program = None  # not on the PATH: the start says so, as without a sandbox
    blocked = unreachable_part(program) if program else None
    if blocked:
        if chosen == "auto" and not _production():
            # The embedded demo as root (`make run` in a root shell, whose Python is often under
            # /root): the harness runs, and its transcript says what that costs.
            return RunAs(
                None,
                note=(
                    f"This harness runs as the worker's own user: its command {program} is not "
                    f"open to other users ({blocked}), so it could not run as a user of its own, "
                    "and it could read the worker's environment and files. Install it where "
                    "every user can run it (OPENCLAW_ACP_SANDBOX, docs/acp.md)."
                ),
            )
        raise HarnessError(
            f'ACP harness "{harness_id}" was not started: it runs as a user of its own, which '
            f"cannot run its command {program}: {blocked} is not open to other users (their x "
            "permission). Install the harness where every user can run it (docs/acp.md)"
        )
    make_private()
    uid = directory_uid(Path(cwd))
    return RunAs(uid)


def _worker_uid() -> int:
    return os.geteuid()


def _production() -> bool:
    return connection.vendor != "sqlite"


def make_private() -> None:
    """var/ and the SQLite database file(s): nothing for "group" or "others" (a harness user)."""
    paths = [Path(settings.VAR_DIR)]
    if connection.vendor == "sqlite":
        name = str(connection.settings_dict.get("NAME") or "")
        if name and not name.startswith(":memory:") and "mode=memory" not in name:
            paths += [Path(name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            current = stat.S_IMODE(path.stat().st_mode)
            if current & 0o077:
                os.chmod(path, current & 0o700)
                log.info("ACP sandbox: %s made private to the worker (was %o)", path, current)


def directory_uid(cwd: Path) -> int:
    """The uid of `cwd`'s harnesses (allocated on first use), with the directory given to it."""
    acp_dir = Path(settings.VAR_DIR) / "acp"
    acp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(acp_dir / "uids.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        registry = _load(acp_dir / REGISTRY)
        owners: dict[str, int] = registry["directories"]
        key = str(cwd)
        uid = owners.get(key)
        if uid is not None and cwd.stat().st_uid != uid:
            # Not the directory its user was given (removed and made again, or taken back by
            # the operator): a new directory gets a new user, never its predecessor's.
            uid = None
        first_time = uid is None
        if uid is None:
            span = uid_range()
            uid = max(int(registry.get("next") or span.start), span.start)
            if uid not in span:
                raise HarnessError(
                    "OPENCLAW_ACP_UIDS is used up: every uid of it has been given to a working "
                    "directory once (var/acp/uids.json); widen the range"
                )
            owners[key] = uid
            registry["next"] = uid + 1
            # Directories gone since are forgotten (their uids are not handed out again).
            registry["directories"] = {p: u for p, u in owners.items() if os.path.isdir(p)}
            _save(acp_dir / REGISTRY, registry)
        others = {Path(p) for p, u in owners.items() if u != uid}
    _give(cwd, uid, others, recursive=first_time)
    return uid


def _give(cwd: Path, uid: int, others: set[Path], *, recursive: bool) -> None:
    """`cwd` to `uid` (mode 0700); the first time, what is inside it too, except directories
    that are other harness users' (their own sessions' working directories)."""
    os.chown(cwd, uid, uid)
    os.chmod(cwd, 0o700)
    if not recursive:
        return
    for top, dirs, files in os.walk(cwd):
        dirs[:] = [d for d in dirs if Path(top, d) not in others]
        for name in [*dirs, *files]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {"next": None, "directories": {}}
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("directories"), dict):
        # Started afresh it would hand out uids again: refuse until an operator looks.
        raise HarnessError(f"{path} is damaged: the harness users' registry cannot be read")
    return data


def _save(path: Path, data: dict) -> None:
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(aside, path)


def unreachable_part(path: str) -> str | None:
    """The first directory (or the file) on the way to `path` that a user with no group of the
    owner's cannot search (execute); None when "others" can reach and run it."""
    real = Path(os.path.realpath(path))
    for part in [*reversed(real.parents), real]:
        try:
            if not stat.S_IMODE(part.stat().st_mode) & 0o001:
                return str(part)
        except OSError:
            return str(part)
    return None
