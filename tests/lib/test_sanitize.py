"""The sanitiser's shortcut for content that needs no change agrees with the full pass."""

import pytest

from sessions_app.lib import sanitize

BLOCKS = [
    {"type": "text", "text": "short"},
    {"type": "text", "text": "x" * 2000},
    {"type": "text", "text": "x" * 2001},
    {"type": "text", "text": "😀" * 2001},  # 4002 UTF-16 units
    {"type": "text", "text": "😀" * 1999},
    {"type": "thinking", "thinking": "hmm"},
    {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
    {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
    {"type": "image", "url": "https://example.invalid/a.png"},
    {"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"cmd": "ls"}},
    {"type": "toolCall", "partialJson": "y" * 3000},
    {"type": "text", "text": 42},
    "a bare string",
]


@pytest.mark.parametrize("block", BLOCKS)
def test_a_block_taken_as_unchanged_is_what_the_full_pass_returns(block):
    flags = sanitize.Flags()
    flags.scan = False
    full = sanitize._sanitize_block(block, flags)
    if sanitize._block_unchanged(block):
        assert full == block and not flags.truncated


def test_unchanged_content_is_shared_and_changed_content_is_copied():
    content = [{"type": "text", "text": "hello"}]
    message = {"role": "assistant", "content": content, "usage": {"input": 1}}
    flags = sanitize.Flags()
    out = sanitize.sanitize_message(message, flags, scan=False)
    assert out["content"] is content and "usage" not in out and "usage" in message
    long = [{"type": "text", "text": "x" * 5000}]
    out = sanitize.sanitize_message({"role": "user", "content": long}, flags, scan=False)
    assert out["content"] is not long and long[0]["text"] == "x" * 5000
    assert out["content"][0]["text"].endswith(sanitize.TRUNCATION_SUFFIX)
    # with the scan on, every block goes through the full pass (redaction)
    secret = [{"type": "text", "text": "password=hunter2hunter2"}]
    out = sanitize.sanitize_message({"role": "user", "content": secret}, flags, scan=True)
    assert out["content"][0]["text"] != secret[0]["text"] and flags.redacted
