"""Agents, sessions, transcripts, runs and the gateway settings.

Rules about one row live on the model, rules about many on its QuerySet (STYLE.md rule 2).
"""

from __future__ import annotations

import functools
import hashlib
import secrets
import time
import uuid
from datetime import timedelta
from typing import Any

from django.db import models, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from openclaw_common import keys

from ..lib import rawsql
from ..lib.hints import session_changed
from ..lib.shared_version import ACCESS
from .fields import TranscriptJSONField


def live_hint(session_pk: int, reason: str, *, last_seq: int | None = None) -> None:
    session_changed(session_pk, reason, last_seq=last_seq)


def now_ms() -> int:
    return int(time.time() * 1000)


def new_session_id() -> str:
    return str(uuid.uuid4())


# --- Who may call, as what: keys, agents, settings ------------------------------------------


class AccessQuerySet(models.QuerySet):
    """Writes of the rows an API request's caller is read from (API keys, agents, the gateway
    settings), which every process caches (access/key_cache.py): each write moves the shared
    version (lib/shared_version.ACCESS), so every process reads them again on its next request.
    The models' save() and delete() do the same; a write that bypasses both (SQL by hand) is
    seen within key_cache.MAX_AGE_SECONDS."""

    QUIET_FIELDS: frozenset[str] = frozenset()  # updates of these alone change no access

    def update(self, **kwargs):
        if not set(kwargs) <= self.QUIET_FIELDS:
            ACCESS.changed()
        return super().update(**kwargs)

    update.alters_data = True  # type: ignore[attr-defined]

    def delete(self):
        ACCESS.changed()
        return super().delete()

    delete.alters_data = True  # type: ignore[attr-defined]
    delete.queryset_only = True  # type: ignore[attr-defined]

    def bulk_create(self, *args, **kwargs):
        ACCESS.changed()
        return super().bulk_create(*args, **kwargs)


class AccessModel(models.Model):
    """See AccessQuerySet."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        ACCESS.changed()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        ACCESS.changed()
        return super().delete(*args, **kwargs)


# --- Gateway settings -----------------------------------------------------------------------


def default_acp_allowed_agents() -> list[str]:
    # The demo's echo harness (seed_demo registers it): a fresh install can try runtime="acp".
    return ["echo"]


class GatewayConfig(AccessModel):
    """The one editable row of gateway settings (api.md §5); `config.py` maps them to OpenClaw names."""

    SCOPES = [("per-sender", "per-sender"), ("global", "global")]
    VISIBILITIES = [("self", "self"), ("tree", "tree"), ("agent", "agent"), ("all", "all")]
    SANDBOX_VISIBILITIES = [("spawned", "spawned"), ("all", "all")]

    session_scope = models.CharField(max_length=16, choices=SCOPES, default="per-sender")
    main_key = models.CharField(max_length=64, default="main")
    default_agent_id = models.CharField(max_length=64, default="main")
    visibility = models.CharField(max_length=8, choices=VISIBILITIES, default="tree")
    sandbox_visibility = models.CharField(
        max_length=8, choices=SANDBOX_VISIBILITIES, default="spawned"
    )
    a2a_enabled = models.BooleanField(default=False)
    a2a_allow = models.JSONField(default=list, blank=True)
    max_ping_pong_turns = models.PositiveSmallIntegerField(default=5)
    subagent_archive_after_minutes = models.PositiveIntegerField(default=60)
    max_spawn_depth = models.PositiveSmallIntegerField(default=1)
    max_children_per_agent = models.PositiveSmallIntegerField(default=5)
    attachments_enabled = models.BooleanField(default=False)
    attachments_max_total_bytes = models.PositiveIntegerField(default=5 * 1024 * 1024)
    attachments_max_files = models.PositiveIntegerField(default=50)
    attachments_max_file_bytes = models.PositiveIntegerField(default=1024 * 1024)
    chain_max_turns = models.PositiveIntegerField(default=20)
    # Sub-agent orchestration (9.6 agents.defaults.subagents.*; docs/orchestration.md).
    max_concurrent = models.PositiveSmallIntegerField(default=8)
    subagent_run_timeout_seconds = models.PositiveIntegerField(default=0)
    announce_timeout_ms = models.PositiveIntegerField(default=120_000)
    COMPLETION_DELIVERIES = [("both", "both"), ("report", "report"), ("reply", "reply")]
    completion_delivery = models.CharField(
        max_length=8, choices=COMPLETION_DELIVERIES, default="both"
    )
    # ACP harnesses for sessions_spawn runtime="acp" (docs/acp.md; acp/harnesses.py validates).
    acp_enabled = models.BooleanField(default=True)
    acp_default_agent = models.CharField(max_length=64, blank=True, default="echo")
    acp_allowed_agents = models.JSONField(default=default_acp_allowed_agents, blank=True)
    acp_max_concurrent_sessions = models.PositiveSmallIntegerField(default=4)
    acp_agents = models.JSONField(default=dict, blank=True)
    # tools.subagents.tools {allow?, deny?}: narrows every sub-agent run's tools (runs/tool_policy.py).
    subagent_tools = models.JSONField(default=dict, blank=True)
    # agents.defaults.models {"<model id>": {"alias"?}}: narrows every agent's model catalog
    # (model_catalog.py); empty = no narrowing.
    default_models = models.JSONField(default=dict, blank=True)
    # session.maintenance (9.6 §6.1): retention and cold storage; retention.clean_policy checks
    # it and fills in the defaults (empty = every default).
    session_maintenance = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AccessQuerySet.as_manager()

    class Meta:
        verbose_name = "gateway settings"
        verbose_name_plural = "gateway settings"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="gatewayconfig_singleton")]

    def __str__(self):
        return "Gateway settings"

    @classmethod
    def load(cls) -> GatewayConfig:
        config, _ = cls.objects.get_or_create(id=1)
        return config

    @property
    def key_settings(self) -> keys.KeySettings:
        return keys.KeySettings(
            scope=self.session_scope,
            main_key=keys.normalize_main_key(self.main_key),
            default_agent_id=keys.normalize_agent_id(self.default_agent_id),
        )


# --- Agents ---------------------------------------------------------------------------------


class AgentQuerySet(AccessQuerySet):
    pass


class Agent(AccessModel):
    """One entry of OpenClaw's `agents.list[]`."""

    id = models.CharField(primary_key=True, max_length=64)
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    # {"type": "scripted", "rules": [...], "delayMs": n} or
    # {"type": "openai", "baseUrl": ..., "model": ..., "apiKeyEnv": ...}
    backend = models.JSONField(default=dict, blank=True)
    # subagents.allowAgents: agent ids this agent may spawn under; ["*"] allows any.
    allow_agents = models.JSONField(default=list, blank=True)
    sandboxed = models.BooleanField(default=False)
    tools_allow = models.JSONField(default=list, blank=True)
    tools_deny = models.JSONField(default=list, blank=True)
    # Per-agent overrides of agents.defaults.subagents.* (agents.entries.<id>.subagents in 9.6):
    # maxSpawnDepth, maxChildrenPerAgent, runTimeoutSeconds, announceTimeoutMs.
    subagent_settings = models.JSONField(default=dict, blank=True)
    # Where finished sends and spawns this agent's sessions asked for are POSTed (signed with
    # webhook_secret, HMAC-SHA256); set by an operator only.
    webhook_url = models.URLField(max_length=2000, blank=True)
    webhook_secret = models.CharField(max_length=100, blank=True)
    # What an OpenAI-compatible backend answered at /v1/models (backend.refreshModels), and when
    # (model_catalog.refresh_models).
    discovered_models = models.JSONField(default=list, blank=True)
    models_refreshed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.id


# --- Sessions -------------------------------------------------------------------------------


def unlisted_keys(settings: keys.KeySettings) -> list[str]:
    """The reserved keys SessionQuerySet.listable() leaves out."""
    return ["unknown"] if settings.scope == "global" else ["unknown", "global"]


class SessionQuerySet(models.QuerySet["Session"]):
    def listable(self, *, settings: keys.KeySettings) -> SessionQuerySet:
        """Reserved keys are never listed; `global` is, when it is the main alias (scope=global)."""
        return self.exclude(key__in=unlisted_keys(settings))

    def active(self) -> SessionQuerySet:
        return self.filter(archived_at__isnull=True)

    def archived(self) -> SessionQuerySet:
        return self.filter(archived_at__isnull=False)

    def by_activity(self) -> SessionQuerySet:
        return self.order_by("-updated_at", "-id")

    def update_changed(self, pks: list[int], reason: str, **fields) -> int:
        """UPDATE the sessions `pks` (within this queryset's filter) and record a change that
        live subscribers see: changed_ms moves in the same statement and a hint goes out after
        commit. Every row-level write a subscriber could notice comes through here (or through
        Session.mark_changed before a save, the allocate_*seq* methods for appends, and the
        run-status methods of Session and Run, which all record the change in their UPDATE)."""
        changed_ms = RawSQL(*_next_changed_ms())
        updated = self.filter(pk__in=pks).update(
            **fields, changed_ms=changed_ms, change_reason=reason
        )
        if updated:
            for pk in pks:
                live_hint(pk, reason)
        return updated


def total_tokens_of(total: int | None, tokens_in: int | None, tokens_out: int | None) -> int:
    """A session's totalTokens, the one definition (reference §2.3, the gateway's totals):
    the entry's totalTokens, else input + output."""
    return total if total is not None else (tokens_in or 0) + (tokens_out or 0)


class Session(models.Model):
    """A chat session: OpenClaw's `SessionEntry` plus its key, with transcript bookkeeping."""

    SEND_POLICIES = [("allow", "allow"), ("deny", "deny")]

    key = models.CharField(max_length=keys.MAX_KEY_LENGTH, unique=True)
    session_id = models.CharField(max_length=128, default=new_session_id, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="sessions")
    # Derived from the key at write time so lists filter in SQL (see refresh_derived()).
    kind = models.CharField(max_length=8, default="other")
    row_channel = models.CharField(max_length=64, default=keys.UNKNOWN_CHANNEL)

    label = models.CharField(max_length=200, blank=True)
    display_name = models.CharField(max_length=300, blank=True)
    subject = models.CharField(max_length=300, blank=True)
    channel = models.CharField(max_length=64, blank=True)
    chat_type = models.CharField(max_length=16, blank=True)
    origin = models.JSONField(null=True, blank=True)
    delivery_context = models.JSONField(null=True, blank=True)
    last_channel = models.CharField(max_length=64, blank=True)
    last_to = models.CharField(max_length=300, blank=True)
    last_account_id = models.CharField(max_length=200, blank=True)
    last_thread_id = models.CharField(max_length=200, blank=True)

    model = models.CharField(max_length=200, blank=True)
    model_provider = models.CharField(max_length=100, blank=True)
    context_tokens = models.BigIntegerField(null=True, blank=True)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    thinking_level = models.CharField(max_length=32, blank=True)
    verbose_level = models.CharField(max_length=32, blank=True)
    reasoning_level = models.CharField(max_length=32, blank=True)
    system_sent = models.BooleanField(null=True, blank=True)
    aborted_last_run = models.BooleanField(null=True, blank=True)
    # The per-session override; blank means inherit the send policy.
    send_policy = models.CharField(max_length=8, choices=SEND_POLICIES, blank=True)

    # The sessions tool's organisation fields (9.6 §2.3); `category` is the group's name.
    icon = models.TextField(blank=True)
    color = models.CharField(max_length=64, blank=True)
    category = models.CharField(max_length=512, blank=True)
    status_note = models.CharField(max_length=120, blank=True)

    spawned_by = models.CharField(max_length=keys.MAX_KEY_LENGTH, blank=True)
    spawn_depth = models.PositiveSmallIntegerField(default=0)

    # Other SessionEntry fields, kept as given so an export or a re-import loses nothing.
    extra = models.JSONField(default=dict, blank=True)

    last_seq = models.PositiveIntegerField(default=0)
    # Status of the latest run, kept here so lists need no join (running|done|failed|timeout|aborted).
    run_status = models.CharField(max_length=16, blank=True)
    # OpenClaw's updatedAt, in milliseconds since the epoch.
    updated_at = models.BigIntegerField(default=now_ms)
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Why it was archived (9.6 archiveReason: manual, age-retention, active-session-cap, …).
    archive_reason = models.CharField(max_length=24, blank=True)
    # Pinned sessions are kept by retention (9.6 pinnedAt).
    pinned_at = models.DateTimeField(null=True, blank=True)
    # Cold storage (retention.py, cold_storage.py): when its transcript's rows moved to a
    # compressed JSONL file, and that file's name under settings.COLD_STORAGE_DIR.
    cold_at = models.DateTimeField(null=True, blank=True)
    cold_file = models.CharField(max_length=200, blank=True)
    # Cold storage leaves the transcript in the database until then: 24 h after a read thawed
    # it, or after a read of an idle hot one (9.6: "then hot for 24 h"; cold_storage.ensure_hot).
    hot_until = models.DateTimeField(null=True, blank=True)
    # When anything a sessions.subscribe client sees last changed (row, run status, archive,
    # appended messages), in ms, strictly increasing per session. Live updates poll it by index
    # when no Redis carries the hint (sessions_app/live).
    changed_ms = models.BigIntegerField(default=0)
    change_reason = models.CharField(max_length=16, blank=True)
    # Some serial run of this session (a completion turn) waits for its runs in flight to end:
    # whoever finishes one starts it. Read with the session under the finishing lock, so a
    # finish costs no extra query when nothing waits.
    turns_waiting = models.BooleanField(default=False)

    objects = SessionQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["-updated_at", "-id"], name="session_activity"),
            models.Index(fields=["agent", "-updated_at", "-id"], name="session_agent_activity"),
            models.Index(fields=["spawned_by"], name="session_spawned_by"),
            # A parent's active children newest first (the list's own order), from the index
            # alone: rows.children_of reads at most CHILD_SESSIONS_MAX + 1 entries of it per
            # listed row however many children the parent has, and a `tree` list its page
            # (visibility.activity_branches). INCLUDE is PostgreSQL's; SQLite builds it without.
            models.Index(
                fields=["spawned_by", "-updated_at", "-id"],
                include=["key"],
                condition=Q(archived_at__isnull=True),
                name="session_active_children",
            ),
            models.Index(fields=["label"], name="session_label"),
            models.Index(fields=["changed_ms"], name="session_changed"),
            # Few sessions are cold: search counts those it skips (archivedTranscriptsExcluded).
            models.Index(
                fields=["cold_at"], condition=Q(cold_at__isnull=False), name="session_cold"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(send_policy__in=["", "allow", "deny"]), name="session_send_policy_valid"
            ),
        ]

    def __str__(self):
        return self.key

    @property
    def tokens_total(self) -> int:
        """totalTokens as every surface shows it (total_tokens_of())."""
        return total_tokens_of(self.total_tokens, self.input_tokens, self.output_tokens)

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def pinned(self) -> bool:
        return self.pinned_at is not None

    @property
    def owner(self) -> dict[str, Any] | None:
        """Who answers for it (the sessions tool's assign_owner; 9.6 `owner.actor`)."""
        owner = (self.extra or {}).get("owner")
        return owner if isinstance(owner, dict) else None

    def archive(self, reason: str = "manual") -> bool:
        """Archive in place, recording why (9.6 archiveReason) and clearing the pin (9.6:
        "Archiving clears the pin"). False when it already was archived (a no-op)."""
        if self.archived_at is not None:
            return False
        self.archived_at, self.archive_reason, self.pinned_at = timezone.now(), reason, None
        Session.objects.update_changed(
            [self.pk],
            "archived",
            archived_at=self.archived_at,
            archive_reason=reason,
            pinned_at=None,
        )
        return True

    def restore(self) -> None:
        if self.archived_at is not None:
            self.archived_at = None
            Session.objects.update_changed([self.pk], "restored", archived_at=None)

    def show_run_queued(self) -> None:
        """Show a run starting on the session when no input message is appended with it (an
        ingest with run=true: the message is already there). One UPDATE."""
        _update_session(self.pk, [_run_status_set(Run.SESSION_STATUS[Run.QUEUED])], "run")

    def mark_changed(self, reason: str) -> None:
        """The same for a Session about to be saved (upsert, patch)."""
        self.changed_ms = max(self.changed_ms + 1, now_ms())
        self.change_reason = reason

    def refresh_derived(self, settings: keys.KeySettings) -> None:
        """Recompute kind and row channel from the key and the routing fields."""
        self.kind = keys.classify_kind(self.key, chat_type=self.chat_type, settings=settings)
        delivery = self.delivery_context if isinstance(self.delivery_context, dict) else {}
        origin = self.origin if isinstance(self.origin, dict) else {}
        self.row_channel = keys.derive_channel(
            kind=self.kind,
            key=self.key,
            channel=self.channel,
            origin_provider=origin.get("provider"),
            delivery_channel=delivery.get("channel"),
            last_channel=self.last_channel,
        )[:64]

    def allocate_seqs(self, count: int, *, touch: bool = True) -> int:
        """Reserve `count` contiguous seq values; returns the first. Call inside a transaction.

        The UPDATE … SET last_seq = last_seq + n takes the row lock (PostgreSQL) or the write lock
        (SQLite, IMMEDIATE), so concurrent appenders get disjoint, gap-free ranges. The same
        statement moves updatedAt (unless `touch` is off, for imports) and the live change mark;
        subscribers hear of the new seqs after commit.
        """
        return self._allocate(count, touch=touch)

    def allocate_run_input_seq(self) -> int:
        """allocate_seqs(1) for a starting run's input message, in the UPDATE that also shows
        the run queued on the session (a run touches its session row once to start)."""
        queued = _run_status_set(Run.SESSION_STATUS[Run.QUEUED])
        return self._allocate(1, touch=True, sets=[queued], reason="run")

    def allocate_run_reply_seqs(self, run: Run, count: int) -> int:
        """allocate_seqs(count) for the reply of `run`, just finished by Run.mark_replied, in the
        UPDATE that also shows its outcome and adds its token usage (once to finish)."""
        return self._allocate(count, touch=True, sets=_outcome_sets(run), reason="run")

    def _allocate(
        self,
        count: int,
        *,
        touch: bool,
        sets: list[_SetClause] | None = None,
        reason: str = "messages",
    ) -> int:
        assert transaction.get_connection().in_atomic_block, "allocate_seqs needs a transaction"
        # One statement that also returns the new last_seq (both backends have RETURNING; the
        # ORM's update() does not): it runs for every message appended.
        columns, params = ["last_seq = last_seq + %s"], [count]
        for sql, sql_params in [*(sets or []), _change_set(reason)]:
            columns.append(sql)
            params.extend(sql_params)
        if touch:
            columns.append(f"updated_at = {rawsql.greatest()}(updated_at, %s)")
            params.append(now_ms())
        (self.last_seq,) = rawsql.fetchall(
            f"UPDATE {rawsql.table(Session)} SET {', '.join(columns)} WHERE id = %s"
            " RETURNING last_seq",
            [*params, self.pk],
        )[0]
        live_hint(self.pk, "messages", last_seq=self.last_seq)
        if reason != "messages":
            live_hint(self.pk, reason)
        return self.last_seq - count + 1


# The session's share of starting and finishing a run, as plain-SQL SET clauses (sql, params)
# that go into the one UPDATE of the session a run start or finish makes (rawsql says why plain
# SQL). Private to this module: callers use the named operations above and on Run.
_SetClause = tuple[str, list[Any]]


def _next_changed_ms() -> _SetClause:
    """The row's next changed_ms, as SQL and its parameters. It only grows, so a poller that saw
    (pk, changed_ms) never mistakes a later change for it. (Session.mark_changed() is the same
    rule for an instance about to be saved.)"""
    return f"{rawsql.greatest()}(changed_ms + 1, %s)", [now_ms()]


def _change_set(reason: str) -> _SetClause:
    """Record a change live subscribers should see."""
    sql, params = _next_changed_ms()
    return f"changed_ms = {sql}, change_reason = %s", [*params, reason]


def _run_status_set(run_status: str, *, unless_newer_than: Run | None = None) -> _SetClause:
    """Show `run_status`; with `unless_newer_than`, only if no run of the session was created
    after that one (the row shows its latest run)."""
    if unless_newer_than is None:
        return "run_status = %s", [run_status]
    run = unless_newer_than
    return (
        f"run_status = CASE WHEN EXISTS (SELECT 1 FROM {rawsql.table(Run)} AS newer"
        " WHERE newer.session_id = %s AND newer.created_at > %s) THEN run_status ELSE %s END",
        [run.session_id, rawsql.prep(Run, "created_at", run.created_at), run_status],
    )


def _usage_sets(usage: dict | None) -> list[_SetClause]:
    """Add a run's token usage to the session's totals."""
    if not usage:
        return []
    tokens_in = int(usage.get("input") or 0)
    tokens_out = int(usage.get("output") or 0)
    total = int(usage.get("totalTokens") or tokens_in + tokens_out)
    return [
        ("input_tokens = COALESCE(input_tokens, 0) + %s", [tokens_in]),
        ("output_tokens = COALESCE(output_tokens, 0) + %s", [tokens_out]),
        # An unset total stands for input + output (total_tokens_of()): a run adds to that,
        # not to 0, or the total would fall below its own parts (SET reads the old values).
        (
            "total_tokens = COALESCE(total_tokens, COALESCE(input_tokens, 0)"
            " + COALESCE(output_tokens, 0)) + %s",
            [total],
        ),
    ]


def _outcome_sets(run: Run) -> list[_SetClause]:
    """The session's share of a finished run: its status (if it is the latest) and its usage."""
    status = _run_status_set(Run.SESSION_STATUS[run.status], unless_newer_than=run)
    return [status, *_usage_sets(run.usage)]


def _update_session(session_pk: int, sets: list[_SetClause], reason: str) -> None:
    """UPDATE one session with such SET clauses, recorded as a live change `reason`."""
    rawsql.update(Session, {}, "id = %s", [session_pk], extra_sets=[*sets, _change_set(reason)])
    live_hint(session_pk, reason)


# --- Transcript -----------------------------------------------------------------------------


class Message(models.Model):
    """One raw transcript message (reference §8.3), at position `seq` (1-based) in its session."""

    # No index of its own: UniqueConstraint(session, seq) serves every lookup by session, and a
    # second, smaller index tempts PostgreSQL into reading whole transcripts.
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=32)
    # A string or a list of content blocks, exactly as given.
    content = TranscriptJSONField(null=True, blank=True)
    provenance = TranscriptJSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    usage = TranscriptJSONField(null=True, blank=True)
    timestamp = models.BigIntegerField(default=now_ms)
    # Every other field of the message (api, provider, model, stopReason, details, isError, …).
    extra = TranscriptJSONField(default=dict, blank=True)
    # Whether its text holds something credential-like, decided once when stored (messages never
    # change), so reads skip the redaction scan for clean messages. None: not known (run it).
    redact_needed = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="message_session_seq_unique"),
        ]

    def __str__(self):
        return f"{self.session_id}#{self.seq} {self.role}"

    # The columns `transcript_from_values()` reads, in order (for .values_list on hot paths).
    TRANSCRIPT_COLUMNS = (
        "seq",
        "role",
        "content",
        "provenance",
        "tool_call_id",
        "tool_name",
        "usage",
        "timestamp",
        "extra",
    )

    def to_transcript(self) -> dict:
        """The message as OpenClaw writes it in a transcript line (`line.message`)."""
        return self.transcript_from_values(
            self.seq,
            self.role,
            self.content,
            self.provenance,
            self.tool_call_id,
            self.tool_name,
            self.usage,
            self.timestamp,
            self.extra,
        )

    @staticmethod
    def transcript_from_values(
        seq, role, content, provenance, tool_call_id, tool_name, usage, timestamp, extra
    ) -> dict:
        payload = {"role": role, **(extra or {})}
        if content is not None:
            payload["content"] = content
        if tool_call_id:
            payload["toolCallId"] = tool_call_id
        if tool_name:
            payload["toolName"] = tool_name
        if usage is not None:
            payload["usage"] = usage
        if provenance is not None:
            payload["provenance"] = provenance
        payload["timestamp"] = timestamp
        return payload


# --- Runs -----------------------------------------------------------------------------------


class SessionGroup(models.Model):
    """One named group of the sessions tool's ordered catalog (group_list / group_set)."""

    name = models.CharField(max_length=512, unique=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self):
        return self.name


class RunQuerySet(models.QuerySet["Run"]):
    def in_flight(self) -> RunQuerySet:
        """Queued or running: not finished yet."""
        return self.filter(status__in=[Run.QUEUED, Run.RUNNING])


class Run(models.Model):
    """One agent turn: queued → running → ok | error | timeout | aborted."""

    QUEUED, RUNNING, OK, ERROR, TIMEOUT, ABORTED = (
        "queued",
        "running",
        "ok",
        "error",
        "timeout",
        "aborted",
    )
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, OK, ERROR, TIMEOUT, ABORTED)]
    FINISHED = frozenset({OK, ERROR, TIMEOUT, ABORTED})
    # completion: a requester's turn carrying its sub-agents' results (docs/orchestration.md).
    KINDS = [(k, k) for k in ("send", "spawn", "ingest", "step", "announce", "completion")]
    MAIN_LANE, SUBAGENT_LANE = "main", "subagent"
    YIELDED_FOR_CHILDREN, YIELDED_FOR_MESSAGE = "children", "message"
    # How a run's status shows on its session row (api.md §1).
    SESSION_STATUS = {
        QUEUED: "running",
        RUNNING: "running",
        OK: "done",
        ERROR: "failed",
        TIMEOUT: "timeout",
        ABORTED: "aborted",
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=16, choices=KINDS, default="send")
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    requester_key = models.CharField(max_length=keys.MAX_KEY_LENGTH, blank=True)
    requester_channel = models.CharField(max_length=64, blank=True)
    parent_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="child_runs"
    )
    idempotency_key = models.CharField(max_length=256, blank=True)
    message = models.TextField(blank=True)
    extra_system_prompt = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    label = models.CharField(max_length=200, blank=True)
    # Loop safety: every send/spawn chain has an id and the agents it passed through.
    chain_id = models.UUIDField(default=uuid.uuid4, db_index=True)
    chain_agents = models.JSONField(default=list, blank=True)
    # State the follow-up steps need (agent-to-agent flow, sub-agent announce, cleanup).
    flow = models.JSONField(default=dict, blank=True)
    deliver = models.BooleanField(default=False)
    timeout_seconds = models.PositiveIntegerField(default=0)  # 0: no run timeout
    deadline = models.DateTimeField(null=True, blank=True)
    input_seq = models.PositiveIntegerField(null=True, blank=True)
    reply_seq = models.PositiveIntegerField(null=True, blank=True)
    reply = models.TextField(blank=True)
    error = models.TextField(blank=True)
    usage = models.JSONField(null=True, blank=True)
    worker = models.CharField(max_length=100, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # --- orchestration (docs/orchestration.md) ---
    # Runs of sub-agent sessions share agents.defaults.subagents.maxConcurrent across workers.
    lane = models.CharField(max_length=10, default=MAIN_LANE)
    # A serial run starts only once no older run of its session is in flight, and its input is
    # appended then (a completion turn waits for a busy requester's current turn, in order).
    serial = models.BooleanField(default=False)
    # A serial run's input message's provenance, kept until the message is appended.
    input_provenance = models.JSONField(null=True, blank=True)
    # When a worker last found the run not startable yet (its lane full, its session busy); such
    # runs are started again when a run of that lane or session finishes.
    deferred_at = models.DateTimeField(null=True, blank=True)
    # This turn ended with sessions_yield: until the children it spawned settle ("children"), or
    # until a continuation message arrives (a paused sub-agent, "message").
    yielded = models.CharField(max_length=10, blank=True)
    # The sub-agent task this turn belongs to: its first (spawn) run. Null for other runs.
    task_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="task_turns"
    )
    # The turn's input came from the gateway's owner (9.6's senderIsOwner): an operator key's
    # send, or an ingested message its gateway marked senderIsOwner. Only such turns of a
    # top-level session are offered the owner-gated `sessions` tool (runs/tool_policy.py).
    sender_is_owner = models.BooleanField(default=False)
    # Started by a sandboxed API key, or by a run that was (its parent_run): the turn's own tool
    # calls are clamped as that key is (identity.requester_for_session), so a sandboxed key
    # cannot reach past its sandbox by asking its agent to.
    sandboxed = models.BooleanField(default=False)

    objects = RunQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["session", "-created_at"], name="run_session_recent"),
            models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat"),
            # Runs waiting for their lane or session: few, looked up whenever a run finishes.
            models.Index(
                fields=["lane", "deferred_at"],
                condition=Q(status="queued", deferred_at__isnull=False),
                name="run_deferred",
            ),
            models.Index(fields=["requester_key", "kind"], name="run_requester_kind"),
            # The last day's runs, for the agents' activity charts (activity.py).
            models.Index(fields=["created_at"], name="run_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "ok", "error", "timeout", "aborted"]),
                name="run_status_valid",
            ),
            models.UniqueConstraint(
                fields=["requester_key", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="run_idempotency_unique",
            ),
        ]

    def __str__(self):
        return f"run {self.id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @classmethod
    def claim(cls, run_id, *, worker: str, max_subagents: int | None = None):
        """queued → running, for one worker only (a conditional UPDATE; plain SQL, see rawsql),
        and only once the run may start: a serial run when no older run of its session is in
        flight; with `max_subagents`, while fewer sub-agent runs are running (runs/lanes.py
        makes that count exact across workers). The claim's time, or None."""
        now = timezone.now()
        values = {"status": cls.RUNNING, "started_at": now, "heartbeat_at": now}
        table = rawsql.table(cls)
        where = (
            "id = %s AND status = %s AND (NOT serial OR NOT EXISTS ("
            f"SELECT 1 FROM {table} AS older WHERE older.session_id = {table}.session_id"
            f" AND older.status IN (%s, %s) AND older.created_at < {table}.created_at))"
        )
        params: list = [rawsql.prep(cls, "id", run_id), cls.QUEUED, cls.QUEUED, cls.RUNNING]
        if max_subagents is not None:
            where += (
                f" AND (lane <> %s OR (SELECT COUNT(*) FROM {table} AS busy"
                " WHERE busy.lane = %s AND busy.status = %s) < %s)"
            )
            params += [cls.SUBAGENT_LANE, cls.SUBAGENT_LANE, cls.RUNNING, max_subagents]
        claimed = rawsql.update(
            cls,
            values | {"worker": worker[:100]},
            where,
            params,
            extra_sets=[("attempts = attempts + 1", [])],
        )
        return now if claimed else None

    @classmethod
    def defer(cls, run_id) -> bool:
        """A queued run a worker could not start yet (its lane full, its session busy): marked,
        so the next finish in its lane or session starts it. False when it is not queued."""
        return bool(
            rawsql.update(
                cls,
                {"deferred_at": timezone.now()},
                "id = %s AND status = %s",
                [rawsql.prep(cls, "id", run_id), cls.QUEUED],
            )
        )

    def mark_yielded(self, kind: str, *, note: str) -> None:
        """This running turn ended with sessions_yield (9.6 §1.7): it waits for the children it
        spawned ("children") or for a continuation ("message"). `note` is for the turn that
        resumes it."""
        self.yielded = kind
        self.flow = {**(self.flow or {}), "yieldNote": note}
        Run.objects.filter(pk=self.pk, status=self.RUNNING).update(yielded=kind, flow=self.flow)

    def set_claimed(self, claimed_at, *, worker: str) -> None:
        """This queued instance as claim() has just changed its row."""
        self.status, self.started_at, self.heartbeat_at = self.RUNNING, claimed_at, claimed_at
        self.worker = worker[:100]
        self.attempts += 1

    def mark_finished(
        self, status: str, *, reply: str = "", error: str = "", usage: dict | None = None
    ) -> bool:
        """queued|running → a final status, once. False when something else finished it first.
        The session row shows the outcome and adds the usage (a second UPDATE)."""
        if not self._finish(status, reply=reply, error=error, usage=usage, reply_seq=None):
            return False
        _update_session(self.session_id, _outcome_sets(self), "run")
        return True

    def mark_replied(self, *, reply: str, usage: dict | None, reply_seq: int) -> bool:
        """queued|running → ok with a reply whose messages end at `reply_seq`, once (False as in
        mark_finished). The session's share is left to the UPDATE that appends those messages
        (Session.allocate_run_reply_seqs): only store.finish_run_with_reply calls this."""
        return self._finish(self.OK, reply=reply, error="", usage=usage, reply_seq=reply_seq)

    def _finish(
        self, status: str, *, reply: str, error: str, usage: dict | None, reply_seq: int | None
    ) -> bool:
        assert status in self.FINISHED
        now = timezone.now()
        values: dict[str, Any] = {"status": status, "reply": reply, "error": error, "usage": usage}
        values |= {"finished_at": now, "reply_seq": reply_seq}
        # Plain SQL (rawsql's docstring says why): every run ends here.
        changed = rawsql.update(
            Run,
            values,
            "id = %s AND status IN (%s, %s)",
            [rawsql.prep(Run, "id", self.pk), self.QUEUED, self.RUNNING],
        )
        if not changed:
            self.refresh_from_db()
            return False
        for name, value in values.items():
            setattr(self, name, value)
        return True

    @property
    def runtime_ms(self) -> int | None:
        if self.started_at and self.finished_at:
            return max(0, int((self.finished_at - self.started_at).total_seconds() * 1000))
        return None


# --- API keys -------------------------------------------------------------------------------


class ApiKeyQuerySet(AccessQuerySet):
    QUIET_FIELDS = frozenset({"last_used_at"})

    def usable(self):
        return self.filter(revoked_at__isnull=True)

    def revoke(self, now=None) -> int:
        """Revoke the usable keys of this set: one UPDATE, which moves the access version (every
        process refuses them on its next request)."""
        return self.usable().update(revoked_at=now or timezone.now())

    def revoke_ended_acp_runs(self, now=None, *, limit: int = 500) -> int:
        """Revoke the session-tools keys of ACP runs that are no longer queued or running (or
        gone): the backstop for a turn that could not revoke its own key (a worker killed
        outright). One read, and a write (moving the access version) only when there is one."""
        in_flight = Run.objects.filter(
            pk=models.OuterRef("acp_run_id"), status__in=[Run.QUEUED, Run.RUNNING]
        )
        ended = self.usable().filter(acp_run_id__isnull=False).filter(~models.Exists(in_flight))
        ids = list(ended.values_list("pk", flat=True)[:limit])
        return self.filter(pk__in=ids).revoke(now) if ids else 0


class ApiKey(AccessModel):
    """A hashed API key with a scope (api.md §4). The plaintext is shown once, at creation."""

    OPERATOR, INGEST, AGENT = "operator", "ingest", "agent"
    SCOPES = [(OPERATOR, "operator"), (INGEST, "ingest"), (AGENT, "agent")]
    PREFIX = "ocs"
    # last_used_at is written at most this often, so reads do not become writes.
    TOUCH_EVERY_SECONDS = 60

    name = models.CharField(max_length=200, blank=True)
    lookup = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scope = models.CharField(max_length=16, choices=SCOPES)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE)
    session_key = models.CharField(max_length=keys.MAX_KEY_LENGTH, blank=True)
    sandboxed = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # A key made for one turn of an ACP child whose harness has `sessionTools` on
    # (acp/session_tools.py): pinned to the child, revoked when that run ends, and by the sweep
    # for a run that ended without it (a worker killed outright). No constraint and nothing done
    # on the run's deletion: deleting sessions and runs costs no query of this table, and a key
    # whose run is gone counts as ended (the sweep revokes it).
    acp_run = models.ForeignKey(
        "Run",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=["operator", "ingest", "agent"]), name="apikey_scope_valid"
            ),
            models.CheckConstraint(
                condition=~Q(scope="agent") | Q(agent__isnull=False),
                name="apikey_agent_scope_has_agent",
            ),
        ]

    def __str__(self):
        return f"{self.PREFIX}_{self.lookup}… ({self.scope})"

    @staticmethod
    def hash_secret(secret: str) -> str:
        # Keys carry 256 bits of randomness, so a fast hash is enough (no dictionary to attack).
        return hashlib.sha256(secret.encode()).hexdigest()

    @classmethod
    def generate(cls, **fields) -> tuple[ApiKey, str]:
        """Create a key; returns (row, plaintext). The plaintext is not stored."""
        lookup = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        plaintext = f"{cls.PREFIX}_{lookup}_{secret}"
        row = cls.objects.create(lookup=lookup, secret_hash=cls.hash_secret(secret), **fields)
        return row, plaintext

    # What authenticate() read beside the key, in the same statement, for this request's
    # requester_for(): the gateway settings and the default agent's (id, sandboxed). Taken once
    # (take_settings), so a key object kept longer never carries old settings into a later call.
    _settings_read: tuple[GatewayConfig, str, bool | None] | None = None

    @classmethod
    def parse(cls, plaintext: str) -> tuple[str, str] | None:
        """(lookup, secret) of a key's plaintext, or None when it is not one."""
        parts = plaintext.strip().split("_", 2)
        if len(parts) != 3 or parts[0] != cls.PREFIX:
            return None
        return parts[1], parts[2]

    @classmethod
    def find_usable(cls, lookup: str) -> ApiKey | None:
        """The unrevoked key with this lookup, with its agent, the gateway settings and the
        default agent's sandbox flag read in the same statement (take_settings): every request
        needs them next, and three ORM statements cost several times the one plain one
        (BENCHMARKS.md, issue 18). The secret is not checked here."""
        return _key_with_settings(lookup)

    def secret_matches(self, secret: str) -> bool:
        return secrets.compare_digest(self.secret_hash, self.hash_secret(secret))

    def take_settings(self) -> tuple[GatewayConfig, str, bool | None] | None:
        """(settings, default agent id, its sandboxed flag or None if there is no such agent)
        as authenticate() read them with this key; once, None after (or if it read none)."""
        read, self._settings_read = self._settings_read, None
        return read

    @classmethod
    def stamp_used(cls, pks: list[int], now) -> int:
        """Record that the keys `pks` were used at `now`: one UPDATE, of the rows not stamped in
        the last TOUCH_EVERY_SECONDS (so several processes stamping one key write it once)."""
        since = now - timedelta(seconds=cls.TOUCH_EVERY_SECONDS)
        return (
            cls.objects.filter(pk__in=pks)
            .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=since))
            .update(last_used_at=now)
        )

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


_KEY_COLUMNS = rawsql.ModelColumns(ApiKey, "k")
_AGENT_COLUMNS = rawsql.ModelColumns(Agent, "a")
_CONFIG_COLUMNS = rawsql.ModelColumns(GatewayConfig, "c")


@functools.cache
def _key_with_settings_sql() -> str:
    return (
        f"SELECT {_KEY_COLUMNS.sql}, {_AGENT_COLUMNS.sql}, {_CONFIG_COLUMNS.sql},"
        " c.default_agent_id, d.sandboxed"
        f" FROM {rawsql.table(ApiKey)} k"
        f" LEFT JOIN {rawsql.table(Agent)} a ON a.id = k.agent_id"
        f" LEFT JOIN {rawsql.table(GatewayConfig)} c ON c.id = 1"
        f" LEFT JOIN {rawsql.table(Agent)} d ON d.id = c.default_agent_id"
        " WHERE k.lookup = %s AND k.revoked_at IS NULL"
    )


def _key_with_settings(lookup: str) -> ApiKey | None:
    """The unrevoked key with this lookup, its agent cached on it (select_related's work), and
    what access/key_cache.authenticate() keeps beside it. One statement."""
    found = rawsql.fetchall(_key_with_settings_sql(), [lookup])
    if not found:
        return None
    row = found[0]
    at = len(_KEY_COLUMNS)
    key = _KEY_COLUMNS.build(row[:at])
    agent_values = row[at : at + len(_AGENT_COLUMNS)]
    at += len(_AGENT_COLUMNS)
    config_values = row[at : at + len(_CONFIG_COLUMNS)]
    default_agent_id, default_sandboxed = row[at + len(_CONFIG_COLUMNS) :]
    ApiKey.agent.field.set_cached_value(
        key, _AGENT_COLUMNS.build(agent_values) if key.agent_id is not None else None
    )
    if default_agent_id is not None:  # else no settings row yet: GatewayConfig.load() makes it
        key._settings_read = (
            _CONFIG_COLUMNS.build(config_values),
            default_agent_id,
            None if default_sandboxed is None else bool(default_sandboxed),
        )
    return key
