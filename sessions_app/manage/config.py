"""Gateway settings by their OpenClaw config path (api.md §5): read, validate, update.

The registry below is the single description of every setting: the REST config endpoint and
the admin both use it, so names, defaults and ranges cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Field

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..acp import harnesses
from ..models import ApiKey, GatewayConfig, Session
from ..runs import model_catalog
from ..runs.tool_policy import clean_tool_policy
from ..store import require_scope
from . import send_policy_api
from .retention import clean_policy


@dataclass(frozen=True)
class Setting:
    path: str  # OpenClaw config name
    field: str  # GatewayConfig field
    kind: str  # "choice" | "bool" | "int" | "str" | "list" | "json"
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    help: str = ""
    # A setting whose rules live with its feature (acp.agents): the check, instead of kind's.
    cleaner: Callable[[Any], Any] | None = None
    shape: dict[str, Any] | None = None  # a "json" setting's JSON schema (the API schema)

    @property
    def default(self):
        field = GatewayConfig._meta.get_field(self.field)
        assert isinstance(field, Field), self.field  # a column of the row
        return field.get_default()


def _tool_policy(value: Any) -> dict:
    return clean_tool_policy("tools.subagents.tools", value)


def _maintenance(value: Any) -> dict:
    return clean_policy(value)


def _default_models(value: Any) -> dict[str, dict]:
    return model_catalog.clean_default_models("agents.defaults.models", value)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "session.scope",
        "session_scope",
        "choice",
        ("per-sender", "global"),
        help='"global" makes every tool read the literal "main" as the shared global session.',
    ),
    Setting("session.mainKey", "main_key", "str", help="The rest of an agent's main session key."),
    Setting(
        "agents.defaultAgentId",
        "default_agent_id",
        "str",
        help="Agent that owns bare keys (cron:…, hook:…, discord:group:…). Ours, not OpenClaw's.",
    ),
    Setting(
        "tools.sessions.visibility",
        "visibility",
        "choice",
        ("self", "tree", "agent", "all"),
        help="Which sessions the session tools can see.",
    ),
    Setting(
        "agents.defaults.sandbox.sessionToolsVisibility",
        "sandbox_visibility",
        "choice",
        ("spawned", "all"),
        help='"spawned" clamps sandboxed callers to their own tree.',
    ),
    Setting(
        "tools.agentToAgent.enabled",
        "a2a_enabled",
        "bool",
        help="Allow cross-agent listing, history and sends.",
    ),
    Setting(
        "tools.agentToAgent.allow",
        "a2a_allow",
        "list",
        help='Agent id patterns allowed to talk to each other ("*" globs; empty = all).',
    ),
    Setting(
        "session.agentToAgent.maxPingPongTurns",
        "max_ping_pong_turns",
        "int",
        minimum=0,
        maximum=5,
        help="Reply-back turns after a sessions_send.",
    ),
    Setting(
        "agents.defaults.subagents.archiveAfterMinutes",
        "subagent_archive_after_minutes",
        "int",
        minimum=0,
        maximum=525_600,
        help="Archive finished sub-agent sessions after N minutes (0 = never).",
    ),
    Setting(
        "agents.defaults.subagents.maxSpawnDepth",
        "max_spawn_depth",
        "int",
        minimum=1,
        maximum=5,
        help="How deep sessions_spawn may nest (1: sub-agents cannot spawn).",
    ),
    Setting(
        "agents.defaults.subagents.maxChildrenPerAgent",
        "max_children_per_agent",
        "int",
        minimum=1,
        maximum=100,
        help="Active children one session may have.",
    ),
    Setting(
        "agents.defaults.subagents.maxConcurrent",
        "max_concurrent",
        "int",
        minimum=1,
        maximum=1000,
        help="Sub-agent runs running at once, across every worker (a safety valve).",
    ),
    Setting(
        "agents.defaults.subagents.runTimeoutSeconds",
        "subagent_run_timeout_seconds",
        "int",
        minimum=0,
        maximum=7 * 24 * 3600,
        help="A sub-agent run's timeout when sessions_spawn gives none (0 = none).",
    ),
    Setting(
        "agents.defaults.subagents.announceTimeoutMs",
        "announce_timeout_ms",
        "int",
        minimum=1,
        maximum=24 * 3600 * 1000,
        help="How long one completion turn of a requester may take before it is retried.",
    ),
    Setting(
        "agents.defaults.subagents.completionDelivery",
        "completion_delivery",
        "choice",
        ("both", "report", "reply"),
        help="What reaches the requester's channel when a sub-agent ends: the Status/Result/"
        "Notes report, the requester's own reply to it, or both. Ours.",
    ),
    Setting(
        "tools.subagents.tools",
        "subagent_tools",
        "json",
        cleaner=_tool_policy,
        help='{"allow"?: [...], "deny"?: [...]} for every sub-agent run: deny adds denies, allow '
        'is a final filter (tool names, "group:sessions", "*"). Empty: the default set.',
    ),
    Setting(
        "agents.defaults.models",
        "default_models",
        "json",
        cleaner=_default_models,
        shape={"type": ["object", "array"]},
        help='{"<model id>": {"alias"?}} (or a list of ids): when set, every agent\'s model '
        "catalog is narrowed to these ids, and an alias names its model in sessions_spawn.",
    ),
    Setting(
        "tools.sessions_spawn.attachments.enabled",
        "attachments_enabled",
        "bool",
        help="Allow inline files on sessions_spawn.",
    ),
    Setting(
        "tools.sessions_spawn.attachments.maxTotalBytes",
        "attachments_max_total_bytes",
        "int",
        minimum=0,
        maximum=64 * 1024 * 1024,
        help="Total bytes of one spawn's attachments.",
    ),
    Setting(
        "tools.sessions_spawn.attachments.maxFiles",
        "attachments_max_files",
        "int",
        minimum=0,
        maximum=1000,
        help="Files per spawn.",
    ),
    Setting(
        "tools.sessions_spawn.attachments.maxFileBytes",
        "attachments_max_file_bytes",
        "int",
        minimum=0,
        maximum=64 * 1024 * 1024,
        help="Bytes per attachment.",
    ),
    Setting(
        "acp.enabled",
        "acp_enabled",
        "bool",
        help='Allow sessions_spawn runtime="acp" (ACP harnesses, docs/acp.md).',
    ),
    Setting(
        "acp.defaultAgent",
        "acp_default_agent",
        "str",
        help='The harness runtime="acp" uses when sessions_spawn gives no agentId ("" = none).',
        cleaner=harnesses.clean_default_agent,
    ),
    Setting(
        "acp.allowedAgents",
        "acp_allowed_agents",
        "list",
        help="Harness ids sessions_spawn may start (separate from subagents.allowAgents; "
        '"*" = every configured harness).',
    ),
    Setting(
        "acp.maxConcurrentSessions",
        "acp_max_concurrent_sessions",
        "int",
        minimum=1,
        maximum=100,
        help="ACP sessions running at once, across every worker.",
    ),
    Setting(
        "acp.agents",
        "acp_agents",
        "json",
        help="ACP harnesses by id: {command, args?, env? (names passed through), cwdRoot, "
        "permissionMode? (deny | read-only | allow-all), startTimeoutSeconds?, warmSeconds?, "
        "sessionTools? (default false; true hands each turn this service's MCP server at "
        "OPENCLAW_MCP_URL with a key pinned to the child session, under the child's visibility, "
        "send policy, spawn limits and sandbox, revoked when the turn ends)}. Operators only.",
        cleaner=harnesses.clean_agents,
        shape=harnesses.AGENTS_SCHEMA,
    ),
    Setting(
        "session.agentToAgent.maxChainTurns",
        "chain_max_turns",
        "int",
        minimum=1,
        maximum=1000,
        help="Turns one send/spawn chain may take across agents. Ours (loop safety).",
    ),
    Setting(
        "session.maintenance",
        "session_maintenance",
        "json",
        cleaner=_maintenance,
        shape={"type": "object"},
        help='Retention (9.6 §6.1): {mode?: "warn"|"enforce", pruneAfter?: "30d"|false, '
        'archiveDashboardAfter?: "7d"|false (no dashboard sessions here: no effect), '
        'maxEntries?: 5000 (0: no cap), preserveRecent?: false|"7d", '
        'resetArchiveRetention?: "keep"|"90d", maxDiskBytes?: "10gb"|false, '
        'highWaterBytes?: 0 (80% of maxDiskBytes)|"8gb", coldStorage?: {enabled, afterDays}}. '
        "Omitted keys take 9.6's defaults. The admin's retention preview shows what a policy "
        "would do before it is saved.",
    ),
)
BY_PATH = {s.path: s for s in SETTINGS}
# Settings kept in rows of their own rather than GatewayConfig fields: path → (read the value,
# check a new one (None resets it), write what the check gave).
SEND_POLICY = "session.sendPolicy"
STORED_ELSEWHERE = {
    SEND_POLICY: (
        send_policy_api.as_openclaw,
        send_policy_api.read_openclaw,
        send_policy_api.write_openclaw,
    ),
}


def as_dict(config: GatewayConfig) -> dict[str, Any]:
    values = {s.path: getattr(config, s.field) for s in SETTINGS}
    return values | {path: read() for path, (read, _, _) in STORED_ELSEWHERE.items()}


def clean_value(setting: Setting, value: Any) -> Any:
    if setting.cleaner is not None:
        return setting.cleaner(value)
    return _clean_by_kind(setting, value)


def _clean_by_kind(setting: Setting, value: Any) -> Any:
    path = setting.path
    if setting.kind == "bool":
        if not isinstance(value, bool):
            raise InvalidArgument(f"{path} must be a boolean")
        return value
    if setting.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"{path} must be an integer")
        if not setting.minimum <= value <= setting.maximum:
            raise InvalidArgument(f"{path} must be between {setting.minimum} and {setting.maximum}")
        return value
    if setting.kind == "choice":
        if not isinstance(value, str) or value.strip().lower() not in setting.choices:
            raise InvalidArgument(f"{path} must be one of {', '.join(setting.choices)}")
        return value.strip().lower()
    if setting.kind == "list":
        return _clean_list(path, value)
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        raise InvalidArgument(f"{path} must be a non-empty string of at most 64 characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        # These values become part of session keys, which refuse control characters.
        raise InvalidArgument(f"{path} must not contain control characters")
    if setting.field == "main_key":
        return keys.normalize_main_key(value)
    if setting.field == "default_agent_id":
        return keys.normalize_agent_id(value)
    return value.strip()


def _clean_list(path: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidArgument(f"{path} must be an array of non-empty strings")
    if len(value) > 100 or any(len(v) > 64 for v in value):
        raise InvalidArgument(f"{path} must have at most 100 entries of at most 64 characters")
    return [v.strip() for v in value]


def update_config(*, api_key: ApiKey | None, changes: Any) -> GatewayConfig:
    """Apply {path: value}; all or nothing; null resets a setting to its default. Reclassifies
    sessions when key reading changes."""
    if api_key is not None:
        require_scope(api_key, ApiKey.OPERATOR)
    if not isinstance(changes, dict) or not changes:
        raise InvalidArgument("body must be a non-empty JSON object of settings")
    with transaction.atomic():
        # The row is locked before anything is read from it: two `acp.agents.<id>` writes at
        # once each merge onto what the other wrote.
        config = GatewayConfig.objects.select_for_update().get(pk=GatewayConfig.load().pk)
        changes = _one_harness_paths(changes, config.acp_agents)
        unknown = sorted(p for p in changes if p not in BY_PATH and p not in STORED_ELSEWHERE)
        if unknown:
            raise InvalidArgument(f"Unknown setting: {', '.join(unknown)}")
        cleaned = {
            BY_PATH[p].field: BY_PATH[p].default if v is None else clean_value(BY_PATH[p], v)
            for p, v in changes.items()
            if p in BY_PATH
        }
        elsewhere = [
            (STORED_ELSEWHERE[p][2], STORED_ELSEWHERE[p][1](v))
            for p, v in changes.items()
            if p in STORED_ELSEWHERE
        ]
        before = config.key_settings
        for field, value in cleaned.items():
            setattr(config, field, value)
        config.save()
        if config.key_settings != before:
            reclassify_sessions(config.key_settings)
        for write, value in elsewhere:
            write(api_key=api_key, value=value)
    return config


HARNESS_PATH = "acp.agents."


def _one_harness_paths(changes: dict, current: dict | None) -> dict:
    """`acp.agents.<id>` sets (or, with null, removes) one harness and keeps the others of
    `current` (the locked row's), as OpenClaw's `config set acp.agents.<id>` does;
    `acp.agents` itself replaces the whole set."""
    one = {p[len(HARNESS_PATH) :]: v for p, v in changes.items() if p.startswith(HARNESS_PATH)}
    if not one:
        return changes
    if "acp.agents" in changes:
        raise InvalidArgument("acp.agents and acp.agents.<id> cannot be combined")
    if not all(one):
        raise InvalidArgument("acp.agents.<id> needs a harness id")
    agents = dict(current or {})
    for harness, definition in one.items():
        if definition is None:
            agents.pop(harness, None)
        else:
            agents[harness] = definition
    rest = {p: v for p, v in changes.items() if not p.startswith(HARNESS_PATH)}
    return {**rest, "acp.agents": agents}


def reclassify_sessions(settings: keys.KeySettings, *, batch_size: int = 2000) -> int:
    """Recompute the stored kind/channel of every session (after scope or mainKey changes)."""
    changed = 0
    last_id = 0
    while True:
        batch = list(Session.objects.filter(id__gt=last_id).order_by("id")[:batch_size])
        if not batch:
            return changed
        for session in batch:
            session.refresh_derived(settings)
        Session.objects.bulk_update(batch, ["kind", "row_channel"])
        changed += len(batch)
        last_id = batch[-1].id
