"""sessions_spawn context="fork" (9.6 §4.4): the child starts from a copy of its requester's
transcript, including the current turn and its completed tool results.

The copy is appended to the child's own transcript before the task message, each copied message
marked `forkOf: <requester key>`: the child's turns read their context from their transcript
(engine.recent_messages), so the model sees the fork as ordinary history, a restarted worker
sees it too, and sessions_history shows what the child was given. The copy is what the
requester's model sees (its last CONTEXT_MESSAGES - 1 stored messages plus its turn so far), so
the child's first turn sees all of it next to the task.
"""

from __future__ import annotations

import json
from typing import Any

from .. import store
from ..models import Session
from ..transcript import context_messages
from .chain import current_run, current_turn_messages
from .engine import CONTEXT_MESSAGES

# 9.6's fixed fork cap, in tokens, estimated as characters / 4.
FORK_MAX_TOKENS = 100_000
CHARS_PER_TOKEN = 4


def fork_messages(requester_key: str) -> list[dict[str, Any]]:
    """The requester's transcript as its model sees it now: its stored messages, then what the
    calling turn has produced so far (when the call comes from that turn)."""
    row = Session.objects.filter(key=requester_key).only("pk").first()
    stored = context_messages(row.pk, up_to=None, limit=CONTEXT_MESSAGES) if row else []
    run = current_run.get()
    in_turn = current_turn_messages.get() if run and run.session.key == requester_key else None
    messages = [*stored, *completed_only(in_turn or [])]
    return messages[-(CONTEXT_MESSAGES - 1) :]


def completed_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turn's messages without tool calls that have no result yet (the spawn call itself
    among them): a copied call never lacks its answer."""
    answered = {m.get("toolCallId") for m in messages if m.get("role") == "toolResult"}
    out = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            kept = [
                b
                for b in content
                if not (isinstance(b, dict) and b.get("type") == "toolCall")
                or b.get("id") in answered
            ]
            if not kept:
                continue
            message = {**message, "content": kept}
        out.append(message)
    return out


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    chars = sum(len(json.dumps(m.get("content"), ensure_ascii=False)) for m in messages)
    return chars // CHARS_PER_TOKEN


def too_large_note(tokens: int) -> str:
    return (
        f'context="fork" was not applied: the requester transcript (~{tokens} tokens) is over '
        f'the {FORK_MAX_TOKENS}-token fork cap, so the child started with context="isolated".'
    )


def append_fork(child: Session, messages: list[dict[str, Any]], requester_key: str) -> None:
    """Copy `messages` into the child's transcript (inside the spawn's transaction)."""
    if not messages:
        return
    copies = [store.read_message(i, {**m, "forkOf": requester_key}) for i, m in enumerate(messages)]
    store.append_to_session(child, copies)
