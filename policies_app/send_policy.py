"""The send policy as stored, handed to the pure `policy.evaluate()` (reference §6).

Every point that delivers to a channel asks `check_send(session)` first; a deny fails with
`send_blocked_error()`, OpenClaw's exact text.
"""

from __future__ import annotations

from . import policy
from .models import SendPolicy


def check_send(session) -> policy.Decision:
    """May `session` (a sessions_app.Session) be sent to? The decision names what decided it.

    The session's own override wins; a disabled policy (the default) allows everything; else a
    matching deny rule, then a matching allow rule, then the default. Channel and chat type come
    from the session (`channel`, else `lastChannel`; `chatType`), else from its key. Two queries
    at most: the policy row and, when it is enabled, its rules.
    """
    config = SendPolicy.load()
    rules = config.rules_for_evaluate() if config.enabled and not session.send_policy else []
    return policy.evaluate(
        default=config.default_action,
        rules=rules,
        configured=config.enabled,
        target=policy.Target(
            key=session.key,
            channel=session.channel or session.last_channel,
            chat_type=session.chat_type,
            override=session.send_policy,
        ),
    )


def send_blocked_error() -> str:
    """The error text of a blocked send: `send blocked by session policy`."""
    return policy.BLOCKED_TEXT
