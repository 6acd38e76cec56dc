"""Runs README.md's commands as written, top to bottom, in one bash session (issue 17.5).

Nothing in a command is edited. What stands in for "`make run` is running on :8000" is around the
commands, not in them: `curl` is a shell function that connects `localhost:8000` and
`127.0.0.1:8000` to the test server (`--connect-to`, the URL unchanged) and prints each answer's
HTTP status after it, and the Python examples start with a `sitecustomize` that does the same for
their sockets. The commands run in the repository with the test database's `DATABASE_URL`, so
`.venv/bin/python manage.py …` reaches the server's database.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
STATUS = re.compile(r"^@@HTTP (\d{3})$", re.M)
# What the README says a tool answered: `# details: {… "status": "ok" …}`, the first status on
# the line being the result's own (nested ones such as delivery's come after it).
SHOWN_STATUS = re.compile(r'^# details: \{[^\n]*?"status": "(\w+)"', re.M)
REFUSALS = ("error", "forbidden")
BLOCK = re.compile(r"^@@BLOCK (\d+)$", re.M)

# Blocks a test does not paste, each by its first line, with the reason. Everything else in a
# `sh` or `python` fence runs.
NOT_RUN = {
    "make run    # creates .venv, installs what running needs, migrates, loads the demo, serves on :8000 with a worker": (
        "the test's server and worker stand in for `make run`; `make test` is the suite itself"
    ),
    ".venv/bin/python manage.py import_openclaw ~/.openclaw": (
        "needs an OpenClaw state directory (tests/manage/test_import_openclaw.py)"
    ),
    "export SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')": (
        "starts a second server on PostgreSQL (tests/test_production_settings.py)"
    ),
}
# A Python example that runs until stopped (a subscription) is stopped after this long.
FOREVER_SECONDS = 8

CURL = r"""
curl() {
  local follow=0 arg rc
  for arg in "$@"; do [ "$arg" = "-N" ] && follow=1; done
  local limit=60; [ $follow = 1 ] && limit=3
  command curl --connect-to localhost:8000:127.0.0.1:{port} \
    --connect-to 127.0.0.1:8000:127.0.0.1:{port} --max-time $limit \
    -w '\n@@HTTP %{http_code}\n' "$@" && return 0
  rc=$?
  # A followed stream (-N) ends when the time is up: that is how it is meant to end here.
  [ $follow = 1 ] && [ $rc = 28 ] && return 0
  return $rc
}
"""

SITECUSTOMIZE = """
import socket

_getaddrinfo = socket.getaddrinfo


def _to_test_server(host, port, *args, **kwargs):
    if str(port) == "8000" and host in ("localhost", "127.0.0.1", "::1"):
        host, port = "127.0.0.1", {port}
    return _getaddrinfo(host, port, *args, **kwargs)


socket.getaddrinfo = _to_test_server

# asyncio does not resolve an IP literal (127.0.0.1): it connects the socket directly.
_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def _address(address):
    if isinstance(address, tuple) and len(address) >= 2 and address[1] == 8000:
        if address[0] in ("127.0.0.1", "::1"):
            return ("127.0.0.1", {port}) if address[0] == "127.0.0.1" else address
    return address


socket.socket.connect = lambda self, address: _connect(self, _address(address))
socket.socket.connect_ex = lambda self, address: _connect_ex(self, _address(address))
"""


@dataclass
class Block:
    index: int
    language: str
    text: str

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0].strip() if self.text.strip() else ""


def readme_blocks() -> list[Block]:
    text = README.read_text()
    return [Block(i, m.group(1), m.group(2)) for i, m in enumerate(FENCE.finditer(text), start=1)]


def runnable(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.language in ("sh", "python") and b.first_line not in NOT_RUN]


def script(blocks: list[Block], *, port: int, workdir: Path) -> str:
    """One bash script: the curl stand-in, then every runnable block in README order, each
    after a `@@BLOCK n` line. A Python block runs as a file, as a reader would save it."""
    parts = ["set -eo pipefail", CURL.replace("{port}", str(port))]
    for block in runnable(blocks):
        parts.append(f"echo '@@BLOCK {block.index}'")
        if block.language == "sh":
            parts.append(block.text)
            continue
        path = workdir / f"readme_block_{block.index}.py"
        path.write_text(block.text)
        forever = "async for frame in ws" in block.text
        if forever:
            parts.append(
                f"timeout {FOREVER_SECONDS} .venv/bin/python {path} || [ $? = 124 ]",
            )
        else:
            parts.append(f".venv/bin/python {path}")
    return "\n".join(parts) + "\n"


def run_readme(*, port: int, env: dict, workdir: Path) -> dict[int, str]:
    """Run it; the output of each block by its index. Fails (AssertionError) on a command that
    fails, naming the block, with what it printed."""
    (workdir / "sitecustomize.py").write_text(SITECUSTOMIZE.replace("{port}", str(port)))
    env = {**env, "PYTHONPATH": str(workdir)}
    done = subprocess.run(
        ["bash", "-c", script(readme_blocks(), port=port, workdir=workdir)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    outputs: dict[int, str] = {}
    pieces = BLOCK.split(done.stdout)
    for number, output in zip(pieces[1::2], pieces[2::2], strict=True):
        outputs[int(number)] = output
    last = max(outputs, default=0)
    assert done.returncode == 0, (
        f"README block {last} failed ({done.returncode}):\n{outputs.get(last, '')}\n{done.stderr}"
    )
    return outputs


def statuses(output: str) -> list[int]:
    return [int(code) for code in STATUS.findall(output)]


def tool_statuses(output: str) -> list[str]:
    """The `details.status` of every /tools/invoke answer a block printed (one JSON per line)."""
    found = []
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            body = json.loads(line)
        except ValueError:
            continue
        details = (body.get("result") or {}).get("details") if isinstance(body, dict) else None
        if isinstance(details, dict) and isinstance(details.get("status"), str):
            found.append(details["status"])
    return found


def shown_statuses(block: Block) -> list[str]:
    """The statuses the README shows for the block's tool calls, in its `# details:` lines."""
    return SHOWN_STATUS.findall(block.text)


def unlike_the_readme(block: Block, output: str) -> list[str]:
    """How a block's answers differ from what the README shows: a refusal (a tool's `error` or
    `forbidden`, which travels as HTTP 200) that the README does not show, or a status the
    README shows that no answer had."""
    answered, shown = tool_statuses(output), shown_statuses(block)
    problems = [
        f"answered {status!r}, which the README does not show"
        for status in answered
        if status in REFUSALS and status not in shown
    ]
    problems += [
        f"the README shows {status!r}, no answer had it"
        for status in shown
        if status not in answered
    ]
    return problems
