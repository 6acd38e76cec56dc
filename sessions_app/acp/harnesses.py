"""ACP harnesses: the coding agents an operator lets sessions_spawn start (`acp.agents`).

A harness is configured only by an operator (PATCH /api/v1/config/ with an operator key, or the
admin's gateway settings), never by an agent: it names a program this service will execute.

    "acp.agents": {
      "echo": {
        "command": "/usr/bin/python3",          # absolute, or a name found on the minimal PATH
        "args": ["/srv/app/sessions_app/acp_echo_agent.py"],
        "env": ["HOME", "ANTHROPIC_API_KEY"],   # names passed through from the worker's env
        "cwdRoot": "/srv/workspaces/echo",      # every session's cwd stays inside it
        "permissionMode": "deny",               # deny (default) | read-only | allow-all
        "startTimeoutSeconds": 30,              # initialize + session/new must answer by then
        "warmSeconds": 300,                     # idle time a process stays up for the next turn
        "sessionTools": false                   # hand it our MCP server with a key per turn
      }
    }
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from openclaw_common.errors import InvalidArgument

PATH = "acp.agents"
PERMISSION_MODES = ("deny", "read-only", "allow-all")
# What a harness process gets as PATH: enough to find interpreters, nothing from our own env.
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_HARNESSES = 50
HARNESS_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
KNOWN_KEYS = (
    "command",
    "args",
    "env",
    "cwdRoot",
    "permissionMode",
    "startTimeoutSeconds",
    "warmSeconds",
    "sessionTools",
)
DEFAULT_WARM_SECONDS = 300
MAX_WARM_SECONDS = 86400


# `acp.agents` in the API schema (/api/v1/schema/): what clean_agents() accepts.
HARNESS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Absolute path, or a name on the PATH."},
        "args": {"type": "array", "items": {"type": "string"}, "maxItems": 100},
        "env": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 50,
            "description": "Environment variable names passed through to the process.",
        },
        "cwdRoot": {"type": "string", "description": "Absolute directory; every cwd inside."},
        "permissionMode": {"type": "string", "enum": list(PERMISSION_MODES), "default": "deny"},
        "startTimeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 300, "default": 30},
        "warmSeconds": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_WARM_SECONDS,
            "default": DEFAULT_WARM_SECONDS,
            "description": "How long an idle process stays up for the next turn (0: never).",
        },
        "sessionTools": {
            "type": "boolean",
            "default": False,
            "description": "Hand each turn this service's MCP server (/mcp/, OPENCLAW_MCP_URL) "
            "with a key pinned to the child session, revoked when the turn ends: the harness "
            "can call the session tools as the child (docs/acp.md).",
        },
    },
    "required": ["command", "cwdRoot"],
    "additionalProperties": False,
}
AGENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": HARNESS_SCHEMA,
    "maxProperties": MAX_HARNESSES,
}


@dataclass(frozen=True)
class Harness:
    id: str
    command: str
    args: tuple[str, ...]
    env: tuple[str, ...]  # names allowed through from the worker's environment
    cwd_root: Path
    permission_mode: str = "deny"
    start_timeout: int = 30
    warm_seconds: int = DEFAULT_WARM_SECONDS
    session_tools: bool = False  # our MCP server, with a key for the turn (session_tools.py)

    def environment(self, source: Mapping[str, str] | None = None) -> dict[str, str]:
        """Only the allowlisted variables (when set), plus the minimal PATH."""
        values: Mapping[str, str] = os.environ if source is None else source
        env = {name: values[name] for name in self.env if name in values}
        env.setdefault("PATH", MINIMAL_PATH)
        return env

    def executable(self) -> str:
        """The command as a path: absolute as given, or looked up on the harness's PATH."""
        if os.path.isabs(self.command):
            return self.command
        found = shutil.which(self.command, path=self.environment()["PATH"])
        if not found:
            raise HarnessError(
                f'ACP harness "{self.id}": command "{self.command}" was not found on PATH '
                f"({self.environment()['PATH']})"
            )
        return found

    def resolve_cwd(self, cwd: str | None) -> Path:
        """The session's working directory: the root, or `cwd` (relative to the root, or
        absolute) when it stays inside the root after resolving `..` and symlinks."""
        root = self.cwd_root.resolve()
        if not cwd:
            return root
        wanted = Path(cwd)
        target = (wanted if wanted.is_absolute() else root / wanted).resolve()
        if target != root and root not in target.parents:
            raise HarnessError(
                f'cwd "{cwd}" is outside the working-directory root of ACP harness '
                f'"{self.id}" ({root})'
            )
        if not target.is_dir():
            raise HarnessError(f'cwd "{cwd}" is not an existing directory')
        return target

    def as_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "args": list(self.args),
            "env": list(self.env),
            "cwdRoot": str(self.cwd_root),
            "permissionMode": self.permission_mode,
            "startTimeoutSeconds": self.start_timeout,
            "warmSeconds": self.warm_seconds,
            "sessionTools": self.session_tools,
        }


class HarnessError(Exception):
    """A harness cannot be used as asked (unknown, command missing, cwd outside its root)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def deployment_refusal(harness: Harness) -> str | None:
    """Why the deployment does not let `harness` run (None: it does). Its command and args must
    begin with an entry of OPENCLAW_ACP_COMMANDS (programs compared as resolved paths), and its
    `env` may name only OPENCLAW_ACP_ENV: an operator key configures harnesses, but which
    programs run on the worker, and with which of its secrets, is the deployment's to say."""
    allowed_env = set(getattr(settings, "OPENCLAW_ACP_ENV", ()))
    for name in harness.env:
        if name not in allowed_env:
            return f"env {name} is not one the deployment lets a harness have (OPENCLAW_ACP_ENV)"
    program = _program(harness.command, harness.environment()["PATH"])
    for entry in getattr(settings, "OPENCLAW_ACP_COMMANDS", ()):
        if not entry:
            continue
        fixed = tuple(entry[1:])
        if (
            _program(entry[0], os.environ.get("PATH", MINIMAL_PATH)) == program
            and harness.args[: len(fixed)] == fixed
        ):
            return None
    return (
        f"command {harness.command!r} with these args is not a program the deployment lets a "
        "harness run (OPENCLAW_ACP_COMMANDS)"
    )


def _program(command: str, path: str) -> str:
    found = command if os.path.isabs(command) else shutil.which(command, path=path)
    return os.path.realpath(found) if found else command


def clean_agents(value: Any) -> dict[str, dict[str, Any]]:
    """Validate `acp.agents` (InvalidArgument names the bad entry); returns it normalised."""
    if not isinstance(value, dict):
        raise InvalidArgument(f"{PATH} must be an object of harness id → definition")
    if len(value) > MAX_HARNESSES:
        raise InvalidArgument(f"{PATH} must have at most {MAX_HARNESSES} harnesses")
    cleaned: dict[str, dict[str, Any]] = {}
    for harness_id, definition in value.items():
        if not isinstance(harness_id, str) or not HARNESS_ID.match(harness_id):
            raise InvalidArgument(
                f"{PATH}: harness id {harness_id!r} must be 1-64 lowercase letters, digits, "
                "_ or -, starting with a letter or digit"
            )
        harness = parse_harness(harness_id, definition)
        refused = deployment_refusal(harness)
        if refused:
            raise InvalidArgument(f"{PATH}.{harness_id}: {refused}")
        cleaned[harness_id] = harness.as_json()
    return cleaned


def parse_harness(harness_id: str, definition: Any) -> Harness:
    where = f"{PATH}.{harness_id}"
    if not isinstance(definition, dict):
        raise InvalidArgument(f"{where} must be an object")
    unknown = sorted(set(definition) - set(KNOWN_KEYS))
    if unknown:
        raise InvalidArgument(f"{where}: unknown key {unknown[0]} (known: {', '.join(KNOWN_KEYS)})")
    command = definition.get("command")
    if not isinstance(command, str) or not command.strip() or len(command) > 1000:
        raise InvalidArgument(f"{where}.command must be a non-empty string")
    args = _strings(f"{where}.args", definition.get("args", []), limit=100)
    env = _strings(f"{where}.env", definition.get("env", []), limit=50)
    bad = [name for name in env if not ENV_NAME.match(name)]
    if bad:
        raise InvalidArgument(f"{where}.env: {bad[0]!r} is not an environment variable name")
    root = definition.get("cwdRoot")
    if not isinstance(root, str) or not os.path.isabs(root):
        raise InvalidArgument(f"{where}.cwdRoot must be an absolute directory path")
    mode = definition.get("permissionMode", "deny")
    if mode not in PERMISSION_MODES:
        raise InvalidArgument(
            f"{where}.permissionMode must be one of {', '.join(PERMISSION_MODES)}"
        )
    timeout = definition.get("startTimeoutSeconds", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 300:
        raise InvalidArgument(f"{where}.startTimeoutSeconds must be an integer from 1 to 300")
    warm = definition.get("warmSeconds", DEFAULT_WARM_SECONDS)
    if isinstance(warm, bool) or not isinstance(warm, int) or not 0 <= warm <= MAX_WARM_SECONDS:
        raise InvalidArgument(
            f"{where}.warmSeconds must be an integer from 0 to {MAX_WARM_SECONDS}"
        )
    tools = definition.get("sessionTools", False)
    if not isinstance(tools, bool):
        raise InvalidArgument(f"{where}.sessionTools must be true or false")
    if any("\x00" in s for s in (command, root, *args)):
        raise InvalidArgument(f"{where} must not contain NUL characters")
    return Harness(
        id=harness_id,
        command=command.strip(),
        args=tuple(args),
        env=tuple(env),
        cwd_root=Path(root),
        permission_mode=mode,
        start_timeout=timeout,
        warm_seconds=warm,
        session_tools=tools,
    )


def _strings(where: str, value: Any, *, limit: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{where} must be an array of strings")
    if len(value) > limit or any(len(v) > 4000 for v in value):
        raise InvalidArgument(f"{where} must have at most {limit} entries")
    return list(value)


def clean_default_agent(value: Any) -> str:
    """`acp.defaultAgent`: a harness id, or "" for none."""
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidArgument("acp.defaultAgent must be a string of at most 64 characters")
    value = value.strip().lower()
    if value and not HARNESS_ID.match(value):
        raise InvalidArgument("acp.defaultAgent must be a harness id (or empty for none)")
    return value


def configured(config) -> dict[str, Harness]:
    """The harnesses of a GatewayConfig, by id (stored values were validated on the way in)."""
    return {hid: parse_harness(hid, d) for hid, d in (config.acp_agents or {}).items()}


def echo_definition(workspace: Path) -> dict[str, Any]:
    """The demo harness `echo` (sessions_app/acp_agents/echo.py), run by this Python."""
    import sys

    script = Path(__file__).resolve().parent.parent / "acp_agents" / "echo.py"
    return {
        "command": sys.executable,
        "args": [str(script)],
        "env": [],
        "cwdRoot": str(workspace),
        # Its one tool call reads; read-only lets it, and shows a permission being answered.
        "permissionMode": "read-only",
        "startTimeoutSeconds": 30,
    }
