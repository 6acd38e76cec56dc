"""Reading tool arguments: strict about types, named in every error, lenient where OpenClaw is.

Numbers: JSON schemas say `number` (Gemini compatibility), so finite floats are floored as
OpenClaw does, and decimal strings are accepted because REST query parameters are strings.
Booleans, NaN, infinities and values past JavaScript's safe-integer range are refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, overload

from openclaw_common.errors import InvalidArgument

MAX_SAFE_INTEGER = 2**53 - 1
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
# ASCII digits only: str.isdigit() also accepts "²" and "--1" passes lstrip("-"), and int() refuses
# both. Twenty digits is past any limit already (and int() refuses past 4300).
_DECIMAL = re.compile(r"-?[0-9]{1,20}")
# A number too large to be any argument's value, written as digits or with an exponent (`1e25`,
# `99…9`): refused with the bound ("at most N"), not as if it were not a number. (A small
# exponent form such as `1e3` stays a non-integer, as before.)
_HUGE = re.compile(r"[0-9]{21,}|[0-9]+(?:\.[0-9]*)?[eE]\+?[0-9]{1,6}")


def _too_large(text: str) -> bool:
    return bool(_HUGE.fullmatch(text)) and float(text) > MAX_SAFE_INTEGER


def closed(body: Mapping[str, Any], allowed: Iterable[str], *, where: str = "") -> None:
    """A closed object: a field it does not take is a 400 naming it, never ignored (a REST
    body, a stored entry, a setting). `where` names the object inside a larger one."""
    allowed = allowed if isinstance(allowed, set | frozenset) else set(allowed)
    unknown = sorted(str(k) for k in body if k not in allowed)
    if unknown:
        place = f" in {where}" if where else ""
        raise InvalidArgument(f"Unknown field{place}: {', '.join(unknown)}")


class Args:
    """A validated view of one call's arguments. Unknown names are refused up front."""

    def __init__(self, raw: Any, allowed: frozenset[str] | set[str], *, tool: str):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InvalidArgument("args must be a JSON object")
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            raise InvalidArgument(f"Unknown argument for {tool}: {', '.join(unknown)}")
        self.raw = raw
        self.tool = tool

    def has(self, name: str) -> bool:
        return name in self.raw and self.raw[name] is not None

    # With an int default the result is never None.
    @overload
    def integer(
        self, name: str, *, minimum: int = 0, default: int, maximum: int | None = None
    ) -> int: ...
    @overload
    def integer(
        self, name: str, *, minimum: int = 0, default: None = None, maximum: int | None = None
    ) -> int | None: ...
    def integer(
        self, name: str, *, minimum: int = 0, default: int | None = None, maximum: int | None = None
    ) -> int | None:
        """`maximum`: a hard maximum, past which 9.6's generic validator gives the same text as
        a bad value (`<name> must be a non-negative integer`)."""
        if not self.has(name):
            return default
        value = self.raw[name]
        what = "a positive integer" if minimum >= 1 else "a non-negative integer"
        number: int | None = None
        if isinstance(value, bool):
            number = None
        elif isinstance(value, int):
            number = value
        elif isinstance(value, float) and math.isfinite(value):
            number = math.floor(value)
        elif isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
            number = int(value.strip())
        elif isinstance(value, str) and _too_large(value.strip()) or value == math.inf:
            number = MAX_SAFE_INTEGER + 1
        if number is None or number < minimum or maximum is not None and number > maximum:
            raise InvalidArgument(f"{name} must be {what}")
        if number > MAX_SAFE_INTEGER:
            raise InvalidArgument(f"{name} must be at most {MAX_SAFE_INTEGER}")
        return number

    def boolean(self, name: str, *, default: bool = False) -> bool:
        if not self.has(name):
            return default
        value = self.raw[name]
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise InvalidArgument(f"{name} must be a boolean")

    def string(
        self, name: str, *, required: bool = False, max_length: int = 10_000, blank_ok: bool = False
    ) -> str | None:
        if not self.has(name):
            if required:
                raise InvalidArgument(f"{name} required")
            return None
        value = self.raw[name]
        if not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a string")
        value = value.strip()
        if not value and not blank_ok:
            if required:
                raise InvalidArgument(f"{name} required")
            return None
        if len(value) > max_length:
            raise InvalidArgument(f"{name} must be at most {max_length} characters")
        if "\x00" in value:
            raise InvalidArgument(f"{name} must not contain NUL characters")
        return value

    def string_list(
        self, name: str, *, max_items: int = 50, max_length: int = 64
    ) -> list[str] | None:
        if not self.has(name):
            return None
        value = self.raw[name]
        if isinstance(value, str):
            # REST query strings carry lists comma-separated.
            value = [part for part in value.split(",") if part.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidArgument(f"{name} must be an array of strings")
        if len(value) > max_items:
            raise InvalidArgument(f"{name} must have at most {max_items} items")
        if any(len(v) > max_length for v in value):
            raise InvalidArgument(f"{name} items must be at most {max_length} characters")
        if any("\x00" in v for v in value):  # as string() refuses: no query can take one
            raise InvalidArgument(f"{name} must not contain NUL characters")
        return [v.strip().lower() for v in value]

    def choice(self, name: str, choices: Mapping[Any, Any], *, default: Any, describe: str) -> Any:
        """A value from a fixed set; `choices` maps accepted inputs to results."""
        if not self.has(name):
            return default
        value = self.raw[name]
        if isinstance(value, str):
            value = value.strip().lower()
        for accepted, result in choices.items():
            if type(accepted) is type(value) and accepted == value:
                return result
        raise InvalidArgument(f"{name} must be {describe}")
