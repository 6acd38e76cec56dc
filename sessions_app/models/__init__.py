"""Agents, sessions, transcripts, runs, the gateway settings, and the rows the logic modules
keep (state events, watchers, completions, deliveries). Every model class of the app is defined
in this package, so Django registers them all by importing it, and no logic module is imported
to do so.

Rules about one row live on the model, rules about many on its QuerySet (STYLE.md rule 2).
"""

# Migrations name default_acp_allowed_agents, new_session_id and now_ms by this dotted path.
from .acp import AcpChild, AcpPermission
from .completions import Completion, CompletionQuerySet
from .core import (
    Agent,
    ApiKey,
    GatewayConfig,
    Message,
    Run,
    Session,
    SessionGroup,
    SessionQuerySet,
    default_acp_allowed_agents,
    live_hint,
    new_session_id,
    now_ms,
    total_tokens_of,
    unlisted_keys,
)
from .delivery import ChannelConfig, Delivery, DeliveryQuerySet
from .events import SessionEvent
from .watchers import SessionNotification, SessionWatcher

__all__ = [
    "AcpChild",
    "AcpPermission",
    "Agent",
    "ApiKey",
    "ChannelConfig",
    "Completion",
    "CompletionQuerySet",
    "Delivery",
    "DeliveryQuerySet",
    "GatewayConfig",
    "Message",
    "Run",
    "Session",
    "SessionEvent",
    "SessionGroup",
    "SessionNotification",
    "SessionQuerySet",
    "SessionWatcher",
    "default_acp_allowed_agents",
    "live_hint",
    "new_session_id",
    "now_ms",
    "total_tokens_of",
    "unlisted_keys",
]
