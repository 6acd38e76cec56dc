"""Runs the commands of README.md and of every docs/ page as written (issues 17.5 and 29.3).

Each page's `sh` and `python` blocks run top to bottom, unedited, in one bash session of their
own, as a reader pastes them into a new terminal in the repository: against a server on a free
port (never :8000), with `BASE` set to it as the pages tell a reader on another port to do, and
nothing else set (each page sets its keys itself). A `python` block runs as a file, as a reader
would save it. The only things around the commands: `curl` is a shell function that prints each
answer's HTTP status after it (and stops a followed stream, `-N`, after a few seconds), and a
Python example that runs until stopped (a subscription) is stopped after a few seconds.

Two kinds of block do not run:
- one with an `<!-- not run: why -->` line just above its fence;
- a `VAR=value … make run` line alone, which tells a reader to restart the server with that
  environment: the page's server starts with it (`restart_env`), so the blocks after it see it.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?:<!-- not run: (.*?) -->\n)?```(\w*)\n(.*?)^```", re.S | re.M)
RESTART = re.compile(r"^((?:[A-Z_][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|\S+) +)+)make run$")
STATUS = re.compile(r"^@@HTTP (\d{3})$", re.M)
# What a page says a tool answered: `# details: {… "status": "ok" …}`, the first status on the
# line being the result's own (nested ones such as delivery's come after it).
SHOWN_STATUS = re.compile(r'^# details: \{[^\n]*?"status": "(\w+)"', re.M)
REFUSALS = ("error", "forbidden")
BLOCK = re.compile(r"^@@BLOCK (\d+)$", re.M)
# The one place the default address may appear: as the default of BASE.
BASE_DEFAULTS = (
    "${BASE:-http://127.0.0.1:8000}",
    'os.environ.get("BASE", "http://127.0.0.1:8000")',
    "then BASE=http://127.0.0.1:9000",
)
# What a shell has without the page setting it.
GIVEN = {"PWD", "HOME", "PATH"}
MADE_KEY = re.compile(r"^\s*(?:export )?([A-Z_][A-Z0-9_]*)=.*create_api_key", re.M)
ASSIGNED = re.compile(r"^\s*(?:export )?([A-Z_][A-Z0-9_]*)=", re.M)
LOOP_VARIABLE = re.compile(r"\bfor ([A-Za-z_][A-Za-z0-9_]*) in\b")
USED = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)")
# A Python example that runs until stopped (a subscription) is stopped after this long.
FOREVER_SECONDS = 8

CURL = r"""
curl() {
  local follow=0 arg rc
  for arg in "$@"; do [ "$arg" = "-N" ] && follow=1; done
  local limit=60; [ $follow = 1 ] && limit=3
  command curl --max-time $limit -w '\n@@HTTP %{http_code}\n' "$@" && return 0
  rc=$?
  # A followed stream (-N) ends when the time is up: that is how it is meant to end here.
  [ $follow = 1 ] && [ $rc = 28 ] && return 0
  return $rc
}
"""


@dataclass
class Block:
    page: Path
    index: int
    language: str
    text: str
    not_run: str | None = None

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0].strip() if self.text.strip() else ""

    @property
    def restart(self) -> str | None:
        """The environment assignments of a `VAR=… make run` block, else None."""
        lines = [line for line in self.text.splitlines() if line.strip()]
        if self.language != "sh" or len(lines) != 1:
            return None
        found = RESTART.match(lines[0].strip())
        return found.group(1).strip() if found else None

    @property
    def runs(self) -> bool:
        return self.language in ("sh", "python") and not self.not_run and not self.restart

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)} block {self.index}"


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def page_blocks(page: Path) -> list[Block]:
    return [
        Block(page, i, m.group(2), m.group(3), m.group(1))
        for i, m in enumerate(FENCE.finditer(page.read_text()), start=1)
    ]


def readme_blocks() -> list[Block]:
    return page_blocks(README)


def runnable(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.runs]


def pages_with_blocks() -> list[Path]:
    """README.md and every docs page with a block that runs."""
    return [page for page in pages() if runnable(page_blocks(page))]


def restart_env(blocks: list[Block]) -> dict[str, str]:
    """The environment the page says to restart the server with, as bash expands it in the
    repository (`$PWD` is the checkout)."""
    env: dict[str, str] = {}
    for block in blocks:
        if not block.restart:
            continue
        names = [word.split("=", 1)[0] for word in shlex.split(block.restart)]
        shown = subprocess.run(
            ["bash", "-c", f"{block.restart} env -0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        values = dict(item.split("=", 1) for item in shown.split("\0") if "=" in item)
        env.update({name: values[name] for name in names})
    return env


def unpasteable(blocks: list[Block]) -> list[str]:
    """What would stop a page's blocks from passing as pasted into a new terminal: the default
    address written out (a server on another port would not answer), a fixed sleep as a wait
    (too short on a busy machine), a key made twice (the second replaces the first in the
    reader's shell), a variable used before the page sets it."""
    problems = []
    made: dict[str, str] = {}
    assigned = set(GIVEN)
    for block in runnable(blocks):
        text = block.text
        for allowed in BASE_DEFAULTS:
            text = text.replace(allowed, "")
        if ":8000" in text:
            problems.append(f"{block.name} names :8000; use $BASE")
        loops = 0  # a sleep between two looks of a poll is how a poll waits
        for line in block.text.splitlines():
            loops += len(re.findall(r"\bdo\b", line)) - len(re.findall(r"\bdone\b", line))
            if not loops and re.search(r"(^|[;&|]\s*)sleep \S+", line.split("#")[0]):
                problems.append(f"{block.name} waits with {line.strip()!r}; poll instead")
        for name in MADE_KEY.findall(block.text):
            if name in made:
                problems.append(f"{block.name} makes {name} again (first in {made[name]})")
            made.setdefault(name, block.name)
        if block.language != "sh":
            continue
        for line in block.text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            # A name is set for what follows it on the line (`X=$(…)`, `export X=${X:-…}`).
            for name in USED.findall(line):
                if name not in assigned and not re.match(rf"\s*(export )?{name}=", line):
                    problems.append(f"{block.name} uses ${name} before the page sets it")
            assigned.update(ASSIGNED.findall(line))
            assigned.update(LOOP_VARIABLE.findall(line))
    return problems


def script(blocks: list[Block], *, workdir: Path) -> str:
    """One bash script: the curl stand-in, then every runnable block in page order, each after a
    `@@BLOCK n` line. `set -e` stops at the first command that fails (no `pipefail`: a reader's
    shell has none, and a poll's `grep -q` may close its pipe early)."""
    parts = ["set -e", CURL]
    for block in runnable(blocks):
        parts.append(f"echo '@@BLOCK {block.index}'")
        if block.language == "sh":
            parts.append(block.text)
            continue
        path = workdir / f"{block.page.stem}_block_{block.index}.py"
        path.write_text(block.text)
        if "async for frame in ws" in block.text:
            parts.append(f"timeout {FOREVER_SECONDS} .venv/bin/python {path} || [ $? = 124 ]")
        else:
            parts.append(f".venv/bin/python {path}")
    return "\n".join(parts) + "\n"


def run_page(page: Path, *, base: str, env: dict, workdir: Path) -> dict[int, str]:
    """Run a page's blocks; the output of each block by its index. Fails (AssertionError) on a
    command that fails, naming the block, with what it printed."""
    env = {name: value for name, value in env.items() if name not in ("KEY", "ING", "BASE")}
    env["BASE"] = base
    done = subprocess.run(
        ["bash", "-c", script(page_blocks(page), workdir=workdir)],
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
        f"{page.name} block {last} failed ({done.returncode}):\n{outputs.get(last, '')}\n"
        f"{done.stderr}"
    )
    return outputs


def statuses(output: str) -> list[int]:
    return [int(code) for code in STATUS.findall(output)]


def tool_statuses(output: str) -> list[str]:
    """The `details.status` of every /tools/invoke answer a block printed (each a JSON object
    starting a line; it may span lines: `details` is sent as indented as the text's copy)."""
    found = []
    decoder = json.JSONDecoder()
    at = 0
    while (start := output.find("{", at)) >= 0:
        if start and output[start - 1] != "\n":
            at = start + 1
            continue
        try:
            body, at = decoder.raw_decode(output, start)
        except ValueError:
            at = start + 1
            continue
        details = (body.get("result") or {}).get("details") if isinstance(body, dict) else None
        if isinstance(details, dict) and isinstance(details.get("status"), str):
            found.append(details["status"])
    return found


def shown_statuses(block: Block) -> list[str]:
    """The statuses the page shows for the block's tool calls, in its `# details:` lines."""
    return SHOWN_STATUS.findall(block.text)


def unlike_the_page(block: Block, output: str) -> list[str]:
    """How a block's answers differ from what the page shows: a refusal (a tool's `error` or
    `forbidden`, which travels as HTTP 200) that the page does not show, or a status the page
    shows that no answer had."""
    answered, shown = tool_statuses(output), shown_statuses(block)
    problems = [
        f"answered {status!r}, which the page does not show"
        for status in answered
        if status in REFUSALS and status not in shown
    ]
    problems += [
        f"the page shows {status!r}, no answer had it" for status in shown if status not in answered
    ]
    return problems
