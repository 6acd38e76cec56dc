"""Zed's `codex-acp` for the tests: installed from npm once, into a cache reused across runs.

`install()` returns the platform binary (`@zed-industries/codex-acp-<os>-<arch>/bin/codex-acp`,
run directly: no node on the harness's PATH). It installs the pinned version into
`$OPENCLAW_TEST_CACHE` (default `~/.cache/openclaw-tests`, or `/var/cache/openclaw-tests` for
root with a home others cannot enter: see cache_dir) under a file lock, so parallel test
runs (CI runs SQLite and PostgreSQL side by side) install it once; the install goes to a
temporary directory renamed into place, so a run interrupted mid-install leaves nothing half
there. When npm is missing or the registry cannot be reached, the test is skipped with the reason,
or fails with it under OPENCLAW_REQUIRE_CODEX_ACP=1 (CI, .ci/run). An install that fails while
the registry answers is a failure.

`harness()` is the `acp.agents` entry that points Codex at a scripted Responses server
(tests/fake_responses.py) with nothing else to reach (docs/acp.md, "A third-party harness").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessions_app.acp.sandbox import unreachable_part

PACKAGE = "@zed-industries/codex-acp"
VERSION = "0.16.0"
# A model Codex knows (its bundled metadata: no warning in the reply, its usual tools); the
# provider is the fake, whatever the name.
MODEL = "gpt-5.4"
PROVIDER = "fake"
NPM_TIMEOUT = 600


def cache_dir() -> Path:
    """$OPENCLAW_TEST_CACHE, else ~/.cache/openclaw-tests, unless the tests run as root with a
    home other users cannot enter (/root, mode 0700): the worker then runs the harness as a user
    of its own (sessions_app/acp/sandbox.py), who could not run a binary kept there, so it goes
    to /var/cache/openclaw-tests, which every user can reach."""
    configured = os.environ.get("OPENCLAW_TEST_CACHE")
    if configured:
        return Path(configured)
    home = Path.home()
    if os.geteuid() == 0 and unreachable_part(str(home)) is not None:
        return Path("/var/cache/openclaw-tests")
    return home / ".cache" / "openclaw-tests"


def _platform_package() -> str | None:
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    return f"codex-acp-{system}-{machine}" if system and machine else None


def _unavailable(reason: str):
    if os.environ.get("OPENCLAW_REQUIRE_CODEX_ACP") == "1":
        pytest.fail(f"codex-acp is required (OPENCLAW_REQUIRE_CODEX_ACP=1): {reason}")
    pytest.skip(f"codex-acp end-to-end test skipped: {reason}")


def install() -> Path:
    package = _platform_package()
    if package is None:
        _unavailable(f"no {PACKAGE} binary for {sys.platform} {platform.machine()}")
    target = cache_dir() / f"codex-acp-{VERSION}"
    binary = target / "node_modules" / "@zed-industries" / str(package) / "bin" / "codex-acp"
    if os.access(binary, os.X_OK):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is not installed (it installs codex-acp from the npm registry)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "codex-acp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be installing it right now
        if os.access(binary, os.X_OK):
            return binary
        reach = _npm(npm, "view", f"{PACKAGE}@{VERSION}", "version", timeout=120)
        if reach.returncode != 0 or VERSION not in reach.stdout:
            tail = (reach.stderr or reach.stdout).strip()[-500:]
            _unavailable(f"the npm registry cannot be reached (npm view: {tail})")
        staging = target.parent / f".codex-acp-{VERSION}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        done = _npm(
            npm,
            "install",
            "--prefix",
            str(staging),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--ignore-scripts",
            f"{PACKAGE}@{VERSION}",
            timeout=NPM_TIMEOUT,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(f"npm install {PACKAGE}@{VERSION} failed: {done.stderr[-2000:]}")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(target)
        staging.rename(target)
    if not os.access(binary, os.X_OK):
        pytest.fail(f"npm installed {PACKAGE}@{VERSION} but {binary} is not there")
    return binary


def _npm(npm: str, *args: str, timeout: int) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [npm, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([npm, *args], 1, "", f"timed out after {timeout}s")


def harness(binary: Path, base_url: str, root: Path, *, mode: str = "allow-all") -> dict:
    """Codex on the fake Responses server: commands it does not trust and every patch ask
    permission (`approval_policy` untrusted), answered by `mode`; its own sandbox off (it needs
    bubblewrap, and the cwd is ours to confine); nothing reached but the provider. Its state goes
    to CODEX_HOME, which the worker's environment sets and the harness's `env` lets through."""
    settings = [
        f'model_providers.{PROVIDER}.name="Scripted Responses server"',
        f'model_providers.{PROVIDER}.base_url="{base_url}"',
        f'model_providers.{PROVIDER}.wire_api="responses"',
        f"model_providers.{PROVIDER}.request_max_retries=0",
        f"model_providers.{PROVIDER}.stream_max_retries=0",
        f"model_provider={PROVIDER}",
        f'model="{MODEL}"',
        'approval_policy="untrusted"',
        'sandbox_mode="danger-full-access"',
        "analytics.enabled=false",
        "feedback.enabled=false",
        'web_search="disabled"',
        "check_for_update_on_startup=false",
    ]
    return {
        "command": str(binary),
        "args": [arg for setting in settings for arg in ("-c", setting)],
        "env": ["CODEX_HOME"],
        "cwdRoot": str(root),
        "permissionMode": mode,
        "startTimeoutSeconds": 60,
    }
