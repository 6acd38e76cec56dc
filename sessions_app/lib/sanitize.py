"""Bounding transcript messages for tool output (reference §3.3–3.4).

Per message: drop `details`/`usage`/`cost`, cut long text to 4000 UTF-16 units (baseline rule:
prefix + suffix ≤ 4000), drop thinking signatures, replace image data by its size, and mask
credential-like text. Per page: keep the newest messages within 80 KiB of JSON.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .jsontext import byte_size

TEXT_LIMIT = 4000
TRUNCATION_SUFFIX = "\n…(truncated)…"
MAX_BYTES = 80 * 1024
TOO_LARGE_PLACEHOLDER = "[sessions_history omitted: message too large]"
# A stored message no encoder can write as JSON (the live hub's events, the JSONL export).
NOT_ENCODABLE_PLACEHOLDER = "[sessions_history omitted: message could not be encoded]"
_DROPPED_KEYS = ("details", "usage", "cost")
_TEXT_FIELDS = ("text", "thinking", "partialJson")

# Credential-like text (our choice; the reference names the behaviour, not the patterns).
_SECRET_PATTERNS = [
    # (pattern, group holding the secret)
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"), 0),
    (re.compile(r"\b(?:sk|rk|pk)-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}"), 0),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), 0),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), 0),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), 0),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), 0),
    (re.compile(r"\bocs_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}"), 0),
    (re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{16,})"), 2),
    (
        re.compile(
            r"(?i)(\b[\w-]*?(?:api[_-]?key|secret|token|password|passwd)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{8,})"
        ),
        2,
    ),
]


def _mask(secret: str) -> str:
    if secret.startswith("-----BEGIN"):
        return "[redacted private key]"
    if len(secret) >= 18:
        return f"{secret[:6]}…{secret[-4:]}"
    return "***"


def _mask_group(match: re.Match, group: int) -> str:
    whole = match.group(0)
    offset = match.start(0)
    head = whole[: match.start(group) - offset]
    tail = whole[match.end(group) - offset :]
    return head + _mask(match.group(group)) + tail


# One pass that finds whether any pattern could match, so clean text costs a single search.
def _scoped(pattern: str) -> str:
    # A leading global (?i) is not allowed inside an alternation; scope it to the branch.
    return f"(?i:{pattern[4:]})" if pattern.startswith("(?i)") else f"(?:{pattern})"


_ANY_SECRET = re.compile("|".join(_scoped(p.pattern) for p, _ in _SECRET_PATTERNS))


# Every pattern above needs one of these (lowercased) substrings: checking them is a few fast
# `in` scans, so clean text never runs the regexes.
_MARKERS = (
    "-----begin",
    "sk-",
    "rk-",
    "pk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "akia",
    "aiza",
    "ocs_",
    "bearer",
    "api",
    "secret",
    "token",
    "passw",
)


def looks_secret(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _MARKERS) and bool(_ANY_SECRET.search(text))


def redact(text: str) -> tuple[str, bool]:
    if not looks_secret(text):
        return text, False
    changed = False
    for pattern, group in _SECRET_PATTERNS:
        if pattern.search(text):
            text = pattern.sub(functools.partial(_mask_group, group=group), text)
            changed = True
    return text, changed


def utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def truncate_text(text: str, limit: int = TEXT_LIMIT) -> tuple[str, bool]:
    """Cut so that prefix + suffix fit in `limit` UTF-16 units, never splitting a surrogate pair."""
    if len(text) <= limit // 2 or utf16_len(text) <= limit:
        return text, False
    budget = limit - len(TRUNCATION_SUFFIX)
    units = 0
    cut = 0
    for index, ch in enumerate(text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > budget:
            break
        units += width
        cut = index + 1
    return text[:cut] + TRUNCATION_SUFFIX, True


class Flags:
    __slots__ = ("truncated", "redacted", "scan")

    def __init__(self):
        self.truncated = False
        self.redacted = False
        self.scan = True  # run the redaction scan on the message being sanitised

    def text(self, value: str) -> str:
        value, cut = truncate_text(value)
        self.truncated |= cut
        if self.scan:
            value, masked = redact(value)
            self.redacted |= masked
        return value


_SHORT = TEXT_LIMIT // 2  # no text this long or shorter is ever cut (UTF-16 units ≤ 2 × chars)


def _block_unchanged(block) -> bool:
    """Whether _sanitize_block() would return an equal block without the redaction scan: short
    texts, no thinking signature, no image data. (The common case, checked without copying.)"""
    if not isinstance(block, dict):
        return True
    for field in _TEXT_FIELDS:
        value = block.get(field)
        if isinstance(value, str) and len(value) > _SHORT:
            return False
    kind = block.get("type")
    if kind == "thinking":
        return "thinkingSignature" not in block
    return kind != "image" or not isinstance(block.get("data"), str)


def _sanitize_block(block, flags: Flags):
    if not isinstance(block, dict):
        return block
    block = dict(block)
    for field in _TEXT_FIELDS:
        if isinstance(block.get(field), str):
            block[field] = flags.text(block[field])
    if block.get("type") == "thinking" and "thinkingSignature" in block:
        del block["thinkingSignature"]
        flags.truncated = True
    if block.get("type") == "image" and isinstance(block.get("data"), str):
        data = block.pop("data")
        block["omitted"] = True
        block["bytes"] = len(data.encode())
        flags.truncated = True
    return block


def texts_of(message: dict):
    """Every text sanitize_message() bounds and redacts."""
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                for field in _TEXT_FIELDS:
                    if isinstance(block.get(field), str):
                        yield block[field]
    if isinstance(message.get("text"), str):
        yield message["text"]


def redact_message(message: dict) -> tuple[dict, bool]:
    """`message` with credential-like text masked as sessions_history masks it, and nothing else
    changed (no cut, images kept): what an export holds unless an operator asks for it raw.
    Returns (message, whether anything was masked); an unchanged message is returned as is."""
    masked = False

    def text(value: str) -> str:
        nonlocal masked
        value, changed = redact(value)
        masked |= changed
        return value

    out = dict(message)
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = text(content)
    elif isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, dict) and any(isinstance(block.get(f), str) for f in _TEXT_FIELDS):
                block = dict(block)
                for field in _TEXT_FIELDS:
                    if isinstance(block.get(field), str):
                        block[field] = text(block[field])
            blocks.append(block)
        out["content"] = blocks
    if isinstance(out.get("text"), str):
        out["text"] = text(out["text"])
    return (out, True) if masked else (message, False)


def needs_redaction(message: dict) -> bool:
    return any(looks_secret(text) for text in texts_of(message))


def sanitize_message(message: dict, flags: Flags, *, scan: bool = True) -> dict:
    """A shallow copy of `message`, bounded for tool output; marks `flags`. `scan=False` skips
    the redaction scan (the message is known to hold nothing credential-like). Content that
    needs no change is shared with `message`, not copied."""
    flags.scan = scan
    out = dict(message)
    for key in _DROPPED_KEYS:
        if key in out:
            del out[key]
            flags.truncated = True
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = flags.text(content)
    elif isinstance(content, list) and (scan or not all(map(_block_unchanged, content))):
        out["content"] = [_sanitize_block(b, flags) for b in content]
    if isinstance(out.get("text"), str):
        out["text"] = flags.text(out["text"])
    return out


def json_bytes(value) -> int:
    return byte_size(value)


def cap_messages(messages: list[dict], max_bytes: int = MAX_BYTES) -> tuple[list[dict], bool, int]:
    """Keep the newest messages whose JSON array fits in `max_bytes`.

    Returns (kept, hard_capped, bytes). When even the newest message alone is too large it is
    replaced by a placeholder that keeps its `__openclaw.seq`.
    """
    if not messages:
        return [], False, 2
    sizes = [json_bytes(m) for m in messages]
    total = 2 + sum(sizes) + len(sizes) - 1
    start = 0
    while total > max_bytes and len(messages) - start > 1:
        total -= sizes[start] + 1
        start += 1
    kept = messages[start:]
    if total <= max_bytes:
        return kept, False, total
    placeholder: dict[str, Any] = {"role": "assistant", "content": TOO_LARGE_PLACEHOLDER}
    meta = kept[-1].get("__openclaw")
    if meta is not None:
        # It keeps the source's position and id (9.6 §4.2), nothing else of it.
        placeholder["__openclaw"] = {k: meta[k] for k in ("id", "seq") if k in meta}
    return [placeholder], True, 2 + json_bytes(placeholder)


def message_text(content: Any) -> str:
    """What the search index (and a state event's summary) holds of a message: its string, or its text blocks joined by spaces."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""
