"""A tool declared once: name, description, parameters and the shape of its result.

Everything a caller sees of a tool comes from its declaration: the argument checking the tool
runs (`Declaration.read`, with the error texts of sessions_app/lib/args.py), the JSON schema a model
is offered (tools/offer.py), the `/tools/invoke` request and response documented in the
OpenAPI schema (api/schema.py), the WebSocket RPC table (live/consumer.py) and any later
protocol (MCP). tests/tools/test_tool_declarations.py checks that they all agree.

Numbers are JSON type `number`, not `integer`, as OpenClaw's schemas are (Gemini refuses
`integer` in some positions); the reader floors finite numbers (args.py). Schemas carry no
`additionalProperties` (some OpenAI-compatible servers refuse the keyword); the reader refuses
unknown names itself. Clamps (a `limit` above its ceiling is lowered, not refused) are told in
the description, never as a schema `maximum`, which strict clients would enforce.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, TypeVar

from openclaw_common.errors import InvalidArgument

from ..access.identity import Requester
from ..lib.args import Args
from ..runs.tool_policy import Policy

log = logging.getLogger("openclaw.tools")

T = TypeVar("T")


@dataclass(frozen=True)
class Param:
    """One argument. `advertised=False`: accepted for OpenClaw compatibility but offered to no
    one (an alias, or a value this service can only refuse); the description says why."""

    name: str
    description: str
    advertised: bool = field(default=True, kw_only=True)
    required: bool = field(default=False, kw_only=True)

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, args: Args) -> Any:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Integer(Param):
    minimum: int = 0
    default: int | None = None
    maximum: int | None = None

    def schema(self) -> dict[str, Any]:
        schema = {"type": "number", "minimum": self.minimum, "description": self.description}
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema

    def read(self, args: Args) -> int | None:
        return args.integer(
            self.name, minimum=self.minimum, default=self.default, maximum=self.maximum
        )


@dataclass(frozen=True, kw_only=True)
class Boolean(Param):
    default: bool | None = False  # None: absent means "not given" (a filter left off)

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean", "description": self.description}

    def read(self, args: Args) -> bool | None:
        if self.default is None and not args.has(self.name):
            return None
        return args.boolean(self.name, default=bool(self.default))


@dataclass(frozen=True, kw_only=True)
class String(Param):
    max_length: int = 10_000
    # Schema-only hints; the reader trims, and treats a blank string as absent unless
    # `blank_ok` (then "" is a value of its own).
    min_length: int | None = None
    enum: tuple[str, ...] = ()
    blank_ok: bool = False

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "description": self.description}
        if self.enum:
            schema["enum"] = list(self.enum)
        if self.min_length is not None:
            schema["minLength"] = self.min_length
        schema["maxLength"] = self.max_length
        return schema

    def read(self, args: Args) -> str | None:
        return args.string(
            self.name, required=self.required, max_length=self.max_length, blank_ok=self.blank_ok
        )


@dataclass(frozen=True, kw_only=True)
class StringList(Param):
    """An array of strings (a comma-separated string too, as REST query strings carry them),
    read trimmed and lowercased."""

    max_items: int = 50
    max_length: int = 64
    item_enum: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        items: dict[str, Any] = {"type": "string"}
        if self.item_enum:
            items["enum"] = list(self.item_enum)
        return {"type": "array", "items": items, "description": self.description}

    def read(self, args: Args) -> list[str] | None:
        return args.string_list(self.name, max_items=self.max_items, max_length=self.max_length)


@dataclass(frozen=True, kw_only=True)
class Choice(Param):
    """One of a fixed set: `choices` maps each accepted input to the value the tool gets;
    `enum` is what the schema offers; `describe` ends the error text ("x must be <describe>")."""

    choices: Mapping[Any, Any]
    enum: tuple[str, ...]
    describe: str
    default: Any = None

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.enum), "description": self.description}

    def read(self, args: Args) -> Any:
        return args.choice(self.name, self.choices, default=self.default, describe=self.describe)


@dataclass(frozen=True, kw_only=True)
class Structured(Param):
    """A value with its own shape (an array of objects, an object): the schema is given, and the
    tool checks the value itself (it gets it as sent, or None)."""

    shape: dict[str, Any]

    def schema(self) -> dict[str, Any]:
        return {**self.shape, "description": self.description}

    def read(self, args: Args) -> Any:
        return args.raw.get(self.name) if args.has(self.name) else None


_unknown_logged: set[tuple[str, str]] = set()
_UNKNOWN_LOGGED_MAX = 1000


def _log_unknown_once(tool: str, name: str) -> None:
    if (tool, name) in _unknown_logged or len(_unknown_logged) >= _UNKNOWN_LOGGED_MAX:
        return
    _unknown_logged.add((tool, name))
    log.warning("%s: unknown argument %r ignored", tool, name[:100])


@dataclass(frozen=True)
class Declaration:
    name: str
    description: str
    params: tuple[Param, ...]
    # JSON schema of the details the tool returns (refusals aside: {status, error}).
    result: dict[str, Any]
    # Argument names refused before anything else, with a text that points somewhere better.
    refused: Mapping[str, str] = field(default_factory=dict)
    # The gateway RPC method that calls this tool over the WebSocket, if any.
    rpc: str | None = None
    # Prefixes of argument names the tool reads from the raw arguments itself (sessions_spawn's
    # `worktree*` family): known() keeps them.
    raw_prefixes: tuple[str, ...] = ()
    # How a run's offer treats the tool (runs/tool_policy.py): groups, orchestrator default,
    # never denied, owner only. Tools only the MCP server offers leave it at the default.
    policy: Policy = Policy()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    def read(self, raw: Any, into: type[T]) -> T:
        """Check `raw` and return each parameter's value by name, in declaration order (so the
        first bad argument is the one named), as `into`: the tool's frozen dataclass of its
        arguments (checked by `arguments`), so mypy knows each one's type. Raises
        InvalidArgument."""
        if isinstance(raw, Mapping):
            for name, message in self.refused.items():
                if name in raw:
                    raise InvalidArgument(message.format(name=name))
        args = Args(self.camel(raw), self.names, tool=self.name)
        values = {param.name: param.read(args) for param in self.params}
        if RAW in _field_names(into):
            values[RAW] = args.raw
        return into(**values)

    def arguments(self, cls: type[T]) -> type[T]:
        """Class decorator for a tool's dataclass of arguments: its fields must be exactly the
        parameters (plus `raw`, the arguments as sent, for a tool that reads them itself), so a
        parameter added, renamed or misspelt on one side fails at import, not at the call."""
        fields_ = _field_names(cls) - {RAW}
        if fields_ != self.names:
            missing = sorted(self.names - fields_)
            extra = sorted(fields_ - self.names)
            raise TypeError(
                f"{cls.__name__} does not match the {self.name} declaration:"
                f" missing {missing}, not parameters {extra}"
            )
        ARGUMENTS[self.name] = cls
        return cls

    def known(self, raw: Any) -> Any:
        """`raw` without the names this tool does not take, each logged once per tool and name
        (so an operator sees a typo): how a tool *call* treats an unknown argument, as OpenClaw
        2026.9.6 does, so a client written against a newer OpenClaw keeps working (the tool
        registry's call and invoke, every protocol's way to a tool). A name the declaration
        refuses with a text of its own, or a snake_case spelling, stays for read() to judge.
        REST bodies and query strings stay closed: their views use Tool.call_closed."""
        if not isinstance(raw, Mapping):
            return raw
        unknown = [name for name in raw if not self._takes(name)]
        if not unknown:
            return raw
        for name in unknown:
            _log_unknown_once(self.name, str(name))
        return {name: value for name, value in raw.items() if self._takes(name)}

    def _takes(self, name: Any) -> bool:
        if name in self.names or name in self.refused or name in self.snake_names:
            return True
        return isinstance(name, str) and name.startswith(self.raw_prefixes)

    def camel(self, raw: Any) -> Any:
        """`raw` with the snake_case spelling of each parameter renamed to the parameter (9.6
        §0: every string, number and array parameter also accepts its snake_case spelling,
        `timeout_seconds`; booleans and objects do not). The camelCase one wins when both are sent. A name
        neither spelling knows stays as it is, for the reader to refuse; anything but an object
        is returned untouched. Adapters that check names before the tool does (REST bodies)
        call this first."""
        if not isinstance(raw, Mapping):
            return raw
        spelled = self.snake_names
        if not any(name in spelled for name in raw):
            return raw
        out = dict(raw)
        for snake, name in spelled.items():
            if snake in out:
                value = out.pop(snake)
                out.setdefault(name, value)
        return out

    @cached_property
    def snake_names(self) -> dict[str, str]:
        return {
            _snake(p.name): p.name
            for p in self.params
            if _snake(p.name) != p.name and _SNAKE_TYPES & _types(p.schema())
        }

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as every protocol offers it."""
        advertised = [p for p in self.params if p.advertised]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in advertised},
        }
        required = [p.name for p in advertised if p.required]
        if required:
            schema["required"] = required
        return schema


# Each declaration's arguments dataclass by the declaration's name (tests check the field types).
ARGUMENTS: dict[str, type] = {}

# The field of a tool's arguments dataclass that holds the arguments as sent (after camel()).
RAW = "raw"


def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


# The JSON types whose parameters 9.6 also reads by their snake_case name (booleans and objects
# it reads by the one name only).
_SNAKE_TYPES = frozenset({"string", "number", "array"})


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


# A tool's function: keyword-only requester and raw args, returns the details dict.
RunTool = Callable[..., dict[str, Any]]
RunToolAsync = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    """A declaration and the function that does it. `run_async`, for tools that wait: async
    adapters call it so the wait holds no thread."""

    declaration: Declaration
    run: RunTool
    run_async: RunToolAsync | None = None

    @property
    def name(self) -> str:
        return self.declaration.name

    def call(self, *, requester: Requester, args: Any) -> dict[str, Any]:
        """A tool *call* (the registry's call and invoke: /tools/invoke, the /ws/ RPCs, MCP, a
        run's own calls): an unknown argument is ignored and logged once, as OpenClaw 2026.9.6
        does (Declaration.known)."""
        return self.run(requester=requester, args=self.declaration.known(args))

    def call_closed(self, *, requester: Requester, args: Any) -> dict[str, Any]:
        """A REST body or query string: a closed object, where an unknown name is a 400 ("Unknown
        argument for …", the declaration's reader) rather than ignored."""
        return self.run(requester=requester, args=args)
