"""Session retention: the `session.maintenance` policy (9.6 §6.1), what it would do (plan) and
doing it (sweep), on a django-q2 schedule, from `manage.py sessions cleanup` and previewed in
the admin.

- `pruneAfter`: sessions idle longer are archived in place (reason `age-retention`), keeping
  their id and transcript. (9.6 deletes disposable automation rows instead; we archive them
  too: nothing is lost, and delete stays an explicit act.)
- `maxEntries`: a cap on unarchived sessions per agent (9.6 keeps a store per agent); the oldest
  unprotected are archived (`active-session-cap`).
- `resetArchiveRetention`: sessions archived as `reset`/`deleted` longer ago than this are
  deleted ("keep": never). A reset keeps the old transcript as such an archive
  (session_admin.reset); a delete keeps none.
- `maxDiskBytes` / `highWaterBytes`: an agent whose transcripts take more than maxDiskBytes
  loses its oldest reset archives, then its oldest `active-session-cap` archives, until it is at
  highWaterBytes (disk_budget.py says what is measured, and why not the files).
- `preserveRecent`: interactive sessions (not cron, hook, node, sub-agent or ACP ones) active
  within this window are kept from the age, count and disk tiers; the dry run lists them
  (`keep`).
- `archiveDashboardAfter`: 9.6 archives idle sessions its dashboard shows (`stale-dashboard`).
  This service has no dashboard that opens sessions (the transcript browser only reads), so no
  session is one: the setting is accepted and checked for 9.6 configs, and archives nothing.
- `coldStorage`: transcripts idle more than `afterDays` leave the database for compressed JSONL
  files (cold_storage.py); it runs in `warn` mode too, as in 9.6.
- `mode: "warn"` only reports.

Protected from all of it: pinned sessions, sessions with a queued or running run, and group
sessions (9.6's durable external pointers); from archiving, an agent's main session; and, from the age, count and disk tiers, the
interactive sessions `preserveRecent` keeps.

Every write is a batch of at most BATCH ids in its own short transaction (a cold transcript is
one transaction of its own), so writers wait for one batch at most, never for the sweep.

Deleting one session is session_admin.delete, as for the `sessions` tool and the CLI.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from openclaw_common.errors import InvalidArgument
from openclaw_common.taskqueue import keep_schedule

from ..models import GatewayConfig, Run, Session
from ..storage import cold_storage, disk_budget
from . import session_admin

SETTING = "session.maintenance"
SCHEDULE_NAME = "openclaw-retention"
COLD_SCHEDULE_NAME = "openclaw-cold-storage"
BATCH = 100
# A pause between two write batches. On SQLite a waiting writer retries on its busy handler's
# schedule (sleeps growing to 100 ms); batches back to back could hold it off for the whole
# sweep (measured: 537 ms with none, bench/retention_bench.py). PostgreSQL writers only wait for
# the rows a batch locks, which are idle sessions.
PAUSE_SECONDS = 0.02
# How long a scheduled pass may move transcripts (django-q2's task timeout is 300 s).
SCHEDULED_BUDGET_SECONDS = 240
PREVIEW_ROWS = 50
DEFAULTS: dict[str, Any] = {
    "mode": "enforce",
    "pruneAfter": "30d",
    "archiveDashboardAfter": "7d",
    "maxEntries": 5000,
    "preserveRecent": False,
    "resetArchiveRetention": "keep",
    "maxDiskBytes": "10gb",
    "highWaterBytes": 0,  # 9.6: zero falls back to the default, 80% of maxDiskBytes
    "coldStorage": {"enabled": False, "afterDays": 30},
}
MAX_ENTRIES_LIMIT = 10_000_000
_DURATION = re.compile(r"^(\d{1,9})\s*(ms|s|m|h|d|w)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Archive reasons (9.6 archiveReason); RESET_ARCHIVES are those resetArchiveRetention deletes.
MANUAL, AGE, CAP = "manual", "age-retention", "active-session-cap"
RESET_ARCHIVES = ("reset", "deleted")
# Not interactive (9.6's disposable automation rows): preserveRecent does not keep these.
AUTOMATION_KINDS = ("cron", "hook", "node")
AUTOMATION_KEY_PARTS = (":subagent:", ":acp:", ":heartbeat")


# --- the policy ------------------------------------------------------------------------------


def parse_duration(value: str) -> timedelta:
    """ "30d", "12h", "90m", "45s", "500ms", "2w" (OpenClaw's duration strings)."""
    match = _DURATION.match(value.strip().lower())
    if not match:
        raise ValueError(value)
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def _duration_or_off(name: str, value: Any, *, off: tuple = (False, 0, "0")) -> str | bool:
    if value in off and value is not True:
        return False
    if isinstance(value, str):
        try:
            if parse_duration(value) > timedelta(0):
                return value.strip().lower()
        except ValueError:
            pass
    raise InvalidArgument(
        f'{SETTING}.{name} must be a duration such as "30d", "12h" or "90m", or false'
    )


def _size(name: str, value: Any, *, allow_off: bool) -> int | str | bool:
    if allow_off and value in (False, 0, "0") and value is not True:
        return False
    try:
        if disk_budget.parse_size(value) > 0 or not allow_off:
            return value.strip().lower() if isinstance(value, str) else value
    except ValueError:
        pass
    if allow_off:
        raise InvalidArgument(
            f'{SETTING}.{name} must be a size such as "10gb" or "500mb", a number of bytes, '
            "or false"
        )
    raise InvalidArgument(
        f'{SETTING}.{name} must be a size such as "8gb" or a non-negative number of bytes '
        "(0: 80% of maxDiskBytes)"
    )


def clean_policy(value: Any) -> dict[str, Any]:
    """The policy as stored: the given keys checked (unknown ones are a 400), defaults omitted
    keys take from DEFAULTS when read (load_policy)."""
    if not isinstance(value, dict):
        raise InvalidArgument(f"{SETTING} must be an object")
    unknown = sorted(set(value) - set(DEFAULTS))
    if unknown:
        raise InvalidArgument(f"Unknown setting: {', '.join(f'{SETTING}.{k}' for k in unknown)}")
    cleaned: dict[str, Any] = {}
    if "mode" in value:
        if value["mode"] not in ("warn", "enforce"):
            raise InvalidArgument(f"{SETTING}.mode must be one of warn, enforce")
        cleaned["mode"] = value["mode"]
    if "pruneAfter" in value:
        cleaned["pruneAfter"] = _duration_or_off("pruneAfter", value["pruneAfter"])
    if "archiveDashboardAfter" in value:
        cleaned["archiveDashboardAfter"] = _duration_or_off(
            "archiveDashboardAfter", value["archiveDashboardAfter"]
        )
    if "preserveRecent" in value:
        cleaned["preserveRecent"] = _duration_or_off(
            "preserveRecent", value["preserveRecent"], off=(False, 0, "0", "off")
        )
    if "maxDiskBytes" in value:
        cleaned["maxDiskBytes"] = _size("maxDiskBytes", value["maxDiskBytes"], allow_off=True)
    if "highWaterBytes" in value:
        cleaned["highWaterBytes"] = _size(
            "highWaterBytes", value["highWaterBytes"], allow_off=False
        )
    if "maxEntries" in value:
        cap = value["maxEntries"]
        if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= MAX_ENTRIES_LIMIT:
            raise InvalidArgument(
                f"{SETTING}.maxEntries must be an integer between 0 and {MAX_ENTRIES_LIMIT}"
                " (0: no cap)"
            )
        cleaned["maxEntries"] = cap
    if "resetArchiveRetention" in value:
        keep = value["resetArchiveRetention"]
        cleaned["resetArchiveRetention"] = (
            "keep"
            if keep in ("keep", False)
            else _duration_or_off("resetArchiveRetention", keep, off=())
        )
    if "coldStorage" in value:
        cleaned["coldStorage"] = _clean_cold(value["coldStorage"])
    return cleaned


def _clean_cold(value: Any) -> dict[str, Any]:
    where = f"{SETTING}.coldStorage"
    if not isinstance(value, dict):
        raise InvalidArgument(f"{where} must be an object")
    unknown = sorted(set(value) - {"enabled", "afterDays"})
    if unknown:
        raise InvalidArgument(f"Unknown setting: {', '.join(f'{where}.{k}' for k in unknown)}")
    cleaned = dict(DEFAULTS["coldStorage"])
    if "enabled" in value:
        if not isinstance(value["enabled"], bool):
            raise InvalidArgument(f"{where}.enabled must be a boolean")
        cleaned["enabled"] = value["enabled"]
    if "afterDays" in value:
        days = value["afterDays"]
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 36500:
            raise InvalidArgument(f"{where}.afterDays must be an integer between 1 and 36500")
        cleaned["afterDays"] = days
    return cleaned


@dataclass(frozen=True)
class Policy:
    mode: str = "enforce"
    prune_after: timedelta | None = timedelta(days=30)
    max_entries: int = 5000  # 0: no cap
    reset_archive_retention: timedelta | None = None  # None: keep
    cold_enabled: bool = False
    cold_after: timedelta = timedelta(days=30)
    archive_dashboard_after: timedelta | None = timedelta(days=7)  # no effect here (above)
    preserve_recent: timedelta | None = None
    max_disk_bytes: int | None = 10 * disk_budget.KIB**3  # None: no disk budget
    high_water_bytes: int | None = None  # None: 80% of max_disk_bytes

    @classmethod
    def from_setting(cls, stored: dict[str, Any]) -> Policy:
        values = {**DEFAULTS, **clean_policy(stored or {})}
        prune, keep = values["pruneAfter"], values["resetArchiveRetention"]
        dashboard, recent = values["archiveDashboardAfter"], values["preserveRecent"]
        disk, high = values["maxDiskBytes"], values["highWaterBytes"]
        return cls(
            mode=values["mode"],
            prune_after=parse_duration(prune) if prune else None,
            max_entries=values["maxEntries"],
            reset_archive_retention=None if keep == "keep" else parse_duration(keep),
            cold_enabled=values["coldStorage"]["enabled"],
            cold_after=timedelta(days=values["coldStorage"]["afterDays"]),
            archive_dashboard_after=parse_duration(dashboard) if dashboard else None,
            preserve_recent=parse_duration(recent) if recent else None,
            max_disk_bytes=disk_budget.parse_size(disk) if disk else None,
            high_water_bytes=disk_budget.parse_size(high) or None,
        )


def load_policy(config: GatewayConfig | None = None) -> Policy:
    return Policy.from_setting((config or GatewayConfig.load()).session_maintenance)


def effective_setting(stored: dict[str, Any]) -> dict[str, Any]:
    """The whole policy in OpenClaw's shape, defaults filled in (what the admin shows)."""
    values = {**DEFAULTS, **clean_policy(stored or {})}
    return {**values, "coldStorage": {**DEFAULTS["coldStorage"], **values["coldStorage"]}}


# --- what it would do -----------------------------------------------------------------------


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def unprotected(
    queryset: QuerySet[Session] | None = None, *, recent_since: datetime | None = None
) -> QuerySet[Session]:
    """Sessions retention may touch: not pinned, no run queued or running, not a group; and,
    with `recent_since` (preserveRecent), no interactive session active since then."""
    busy = Run.objects.in_flight().filter(session=OuterRef("pk"))
    qs = Session.objects.all() if queryset is None else queryset
    qs = qs.filter(pinned_at__isnull=True).exclude(kind="group").exclude(Exists(busy))
    if recent_since is not None:
        qs = qs.exclude(interactive() & Q(updated_at__gte=_ms(recent_since)))
    return qs


def archivable(queryset: QuerySet[Session]) -> QuerySet[Session]:
    """Not an agent's main session: the age and count tiers leave it as a manual archive does
    ("Cannot archive an agent's main session."); its transcript may still go cold."""
    return queryset.exclude(kind="main")


def interactive() -> Q:
    """Sessions people talk in: top level, and not cron, hook, node, sub-agent or ACP rows."""
    q = Q(spawn_depth=0) & ~Q(kind__in=AUTOMATION_KINDS)
    for part in AUTOMATION_KEY_PARTS:
        q &= ~Q(key__contains=part)
    return q


@dataclass
class Plan:
    """What a policy does now: session pks per action, oldest first."""

    mode: str
    archive_age: list[int] = field(default_factory=list)
    # archiveDashboardAfter: always empty here (no dashboard sessions; module docstring).
    archive_dashboard: list[int] = field(default_factory=list)
    archive_cap: list[int] = field(default_factory=list)
    # Interactive sessions the age or count tier would have archived but preserveRecent keeps.
    keep_recent: list[int] = field(default_factory=list)
    delete_archived: list[int] = field(default_factory=list)
    # Over maxDiskBytes: the reset and active-session-cap archives deleted, per agent measured
    # {bytes, afterBytes} (disk_budget.victims).
    delete_disk: list[int] = field(default_factory=list)
    disk: dict[str, dict[str, int]] = field(default_factory=dict)
    cold: list[int] = field(default_factory=list)
    unarchived_before: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "archiveAge": len(self.archive_age),
            "archiveDashboard": len(self.archive_dashboard),
            "archiveCap": len(self.archive_cap),
            "keepRecent": len(self.keep_recent),
            "deleteArchived": len(self.delete_archived),
            "deleteDisk": len(self.delete_disk),
            "cold": len(self.cold),
        }


def plan(policy: Policy, *, now: datetime | None = None) -> Plan:
    """The sessions each tier of `policy` would act on now (read only; the dry run)."""
    now = now or timezone.now()
    result = Plan(mode=policy.mode)
    active = Session.objects.active()
    result.unarchived_before = active.count()
    recent = now - policy.preserve_recent if policy.preserve_recent else None
    if policy.prune_after is not None:
        stale = active.filter(updated_at__lt=_ms(now - policy.prune_after))
        result.archive_age = _oldest(unprotected(archivable(stale), recent_since=recent))
        if recent is not None:
            result.keep_recent = _oldest(
                unprotected(archivable(stale)).exclude(pk__in=result.archive_age)
            )
    if policy.max_entries:
        result.archive_cap = _over_cap(policy.max_entries, set(result.archive_age), recent)
        if recent is not None:
            # What the cap would take with nothing preserved, that it does not take now.
            unpreserved = _over_cap(policy.max_entries, set(result.archive_age), None)
            taken = set(result.archive_cap)
            kept = {*result.keep_recent, *(pk for pk in unpreserved if pk not in taken)}
            result.keep_recent = _oldest(active.filter(pk__in=kept))
    if policy.reset_archive_retention is not None:
        old = Session.objects.filter(
            archive_reason__in=RESET_ARCHIVES,
            archived_at__lt=now - policy.reset_archive_retention,
        )
        result.delete_archived = list(unprotected(old).values_list("pk", flat=True))
    if policy.max_disk_bytes:
        result.delete_disk, result.disk = _disk_tier(policy, result.delete_archived, recent)
    if policy.cold_enabled:
        result.cold = cold_candidates(now - policy.cold_after)
    return result


def _oldest(queryset: QuerySet[Session]) -> list[int]:
    return list(queryset.order_by("updated_at", "id").values_list("pk", flat=True))


def _over_cap(cap: int, leaving: set[int], recent: datetime | None) -> list[int]:
    """Per agent, the oldest unprotected unarchived sessions beyond `cap` (after the age tier)."""
    over: list[int] = []
    per_agent = Session.objects.active().values_list("agent_id").order_by()
    for agent_id in {a for (a,) in per_agent.distinct()}:
        rows = Session.objects.active().filter(agent_id=agent_id)
        excess = rows.count() - len(leaving & set(rows.values_list("pk", flat=True))) - cap
        if excess <= 0:
            continue
        oldest = unprotected(archivable(rows), recent_since=recent).exclude(pk__in=leaving)
        over.extend(oldest.order_by("updated_at", "id").values_list("pk", flat=True)[:excess])
    return over


def _disk_tier(
    policy: Policy, leaving: list[int], recent: datetime | None
) -> tuple[list[int], dict[str, dict[str, int]]]:
    """9.6's disk tiers that apply here: the oldest reset/deleted archives, then the oldest
    active-session-cap archives, per agent over maxDiskBytes, down to highWaterBytes."""
    assert policy.max_disk_bytes
    archived = unprotected(Session.objects.archived(), recent_since=recent).exclude(pk__in=leaving)
    candidates: list[tuple[int, str]] = []
    for reasons in (RESET_ARCHIVES, (CAP,)):
        tier = archived.filter(archive_reason__in=reasons).order_by("archived_at", "id")
        candidates.extend(tier.values_list("pk", "agent_id"))
    going = Session.objects.filter(pk__in=leaving).values_list("pk", "agent_id")
    return disk_budget.victims(
        max_bytes=policy.max_disk_bytes,
        high_water=policy.high_water_bytes,
        candidates=candidates,
        leaving=list(going),
    )


def cold_candidates(idle_before: datetime, *, limit: int | None = None) -> list[int]:
    """Sessions with a hot transcript idle since before `idle_before`, oldest first; not those
    a read thawed or touched in the last 24 h (`hot_until`, cold_storage.ensure_hot)."""
    kept_hot = Q(hot_until__gt=timezone.now())
    qs = unprotected(Session.objects.filter(cold_at__isnull=True, last_seq__gt=0))
    qs = qs.exclude(kept_hot)
    qs = qs.filter(updated_at__lt=_ms(idle_before)).order_by("updated_at", "id")
    pks = qs.values_list("pk", flat=True)
    return list(pks[:limit] if limit else pks)


def preview_rows(pks: list[int], limit: int = PREVIEW_ROWS) -> list[Mapping[str, Any]]:
    """The first sessions of a tier, for the admin preview and the CLI's dry run."""
    rows = Session.objects.filter(pk__in=pks[:limit]).values(
        "pk", "key", "updated_at", "last_seq", "archived_at"
    )
    by_pk = {row["pk"]: row for row in rows}
    return [by_pk[pk] for pk in pks[:limit] if pk in by_pk]


# --- doing it -------------------------------------------------------------------------------

Progress = Callable[[str, int, int], None]


def sweep(
    policy: Policy | None = None,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
    planned: Plan | None = None,
) -> dict[str, Any]:
    """Apply `policy` (the saved one by default): the report `sessions cleanup --json` prints.
    `warn` mode and `dry_run` change nothing but cold storage (which runs in warn mode).
    `planned`: the plan a caller already made (and showed) for `policy` at `now`."""
    policy = policy or load_policy()
    now = now or timezone.now()
    result = planned or plan(policy, now=now)
    report: dict[str, Any] = {
        "mode": policy.mode,
        "dryRun": dry_run,
        "beforeCount": result.unarchived_before,
        **result.counts(),
        "archived": 0,
        "deleted": 0,
        "movedCold": 0,
    }
    if result.disk:
        report["disk"] = result.disk
    if not dry_run and policy.mode == "enforce":
        report["archived"] += archive_many(result.archive_age, AGE, progress=progress)
        report["archived"] += archive_many(result.archive_cap, CAP, progress=progress)
        report["deleted"] = delete_many(result.delete_archived, progress=progress)
        report["deleted"] += delete_many(result.delete_disk, progress=progress)
    if not dry_run and result.cold:
        report["movedCold"] = cold_storage.freeze_many(
            result.cold,
            progress=progress,
            deadline=deadline,
            idle_before=now - policy.cold_after,
        )
    report["afterCount"] = Session.objects.active().count()
    return report


def _batches(pks: list[int], size: int = BATCH):
    for start in range(0, len(pks), size):
        yield pks[start : start + size]


def archive_many(pks: list[int], reason: str, *, progress: Progress | None = None) -> int:
    """Archive these sessions (those still unarchived and unprotected), BATCH per transaction."""
    done = 0
    for batch in _batches(pks):
        with transaction.atomic():
            # Checked again at write time: a run may have started since the plan was made.
            still = list(
                unprotected(archivable(Session.objects.active()))
                .filter(pk__in=batch)
                .values_list("pk", flat=True)
            )
            done += Session.objects.active().update_changed(
                still, "archived", archived_at=timezone.now(), archive_reason=reason
            )
        if progress:
            progress(f"archive ({reason})", min(len(pks), done), len(pks))
        time.sleep(PAUSE_SECONDS)
    return done


def delete_many(pks: list[int], *, progress: Progress | None = None) -> int:
    """Delete these archived sessions through session_admin.delete (cold files too)."""
    settings = GatewayConfig.load().key_settings
    done = 0
    for batch in _batches(pks, 50):
        with transaction.atomic():
            for session in unprotected(Session.objects.archived()).filter(pk__in=batch):
                with contextlib.suppress(InvalidArgument):  # a main session: kept
                    session_admin.delete(session, settings=settings)
                    done += 1
        if progress:
            progress("delete", done, len(pks))
        time.sleep(PAUSE_SECONDS)
    return done


# --- the schedule ---------------------------------------------------------------------------


def scheduled_sweep() -> dict[str, Any]:
    """The 30-minute pass (9.6: "a 30-min recheck"). Its cold moves stop after
    SCHEDULED_BUDGET_SECONDS, inside django-q2's task timeout; the next pass goes on."""
    cold_storage.remove_orphans()
    return sweep(deadline=time.monotonic() + SCHEDULED_BUDGET_SECONDS)


def scheduled_cold_storage() -> int:
    """The minute's cold storage check (9.6: "cold storage is checked every minute"); one
    worker batch (128 transcripts) at a time."""
    policy = load_policy()
    if not policy.cold_enabled:
        return 0

    cold_storage.remove_stale_temporaries()
    idle_before = timezone.now() - policy.cold_after
    pks = cold_candidates(idle_before, limit=cold_storage.WORKER_BATCH)
    return cold_storage.freeze_many(
        pks, deadline=time.monotonic() + SCHEDULED_BUDGET_SECONDS, idle_before=idle_before
    )


def ensure_schedules() -> None:
    """Create or update both schedules (idempotent; migration 0018 and `serve` call it)."""
    keep_schedule(SCHEDULE_NAME, "sessions_app.manage.retention.scheduled_sweep", minutes=30)
    keep_schedule(
        COLD_SCHEDULE_NAME, "sessions_app.manage.retention.scheduled_cold_storage", minutes=1
    )
