"""Retention's other 9.6 keys (§6.1): archiveDashboardAfter, preserveRecent, maxDiskBytes,
highWaterBytes and resetArchiveRetention, accepted with 9.6's defaults and checks, what each
does here, and the dry runs (admin preview, `sessions cleanup`) showing it."""

from __future__ import annotations

import html
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from sessions_app.manage import retention, session_admin
from sessions_app.models import GatewayConfig, Session
from sessions_app.storage import cold_storage, disk_budget
from tests.conftest import assistant, user
from tests.manage.test_retention import aged

GIB = 1024**3
NINE_SIX = {
    "mode": "enforce",
    "pruneAfter": "30d",
    "archiveDashboardAfter": "7d",
    "maxEntries": 5000,
    "preserveRecent": "7d",
    "resetArchiveRetention": "30d",
    "maxDiskBytes": "10gb",
    "highWaterBytes": "8gb",
    "coldStorage": {"enabled": False, "afterDays": 30},
}


def exchange(words: int) -> tuple[dict, dict]:
    """A user message and its reply, `words` words each: bytes on disk."""
    return user("hello " * words), assistant("reply " * words)


def archived(key: str, days: float, reason: str, *, archived_days: float, words: int = 50):
    session = aged(key, days, *exchange(words))
    Session.objects.filter(pk=session.pk).update(
        archived_at=timezone.now() - timedelta(days=archived_days), archive_reason=reason
    )
    return session


# --- the setting ----------------------------------------------------------------------------


def test_a_96_config_is_accepted(operator):
    response = operator.patch("/api/v1/config/", {"session.maintenance": NINE_SIX})
    assert response.status_code == 200, response.content
    policy = retention.load_policy()
    assert policy.archive_dashboard_after == timedelta(days=7)
    assert policy.preserve_recent == timedelta(days=7)
    assert policy.max_disk_bytes == 10 * GIB and policy.high_water_bytes == 8 * GIB
    assert policy.reset_archive_retention == timedelta(days=30)
    assert operator.get("/api/v1/config/").json()["session.maintenance"]["maxDiskBytes"] == "10gb"


def test_defaults_are_96s(db):
    shown = retention.effective_setting({})
    assert shown["archiveDashboardAfter"] == "7d" and shown["preserveRecent"] is False
    assert shown["maxDiskBytes"] == "10gb" and shown["highWaterBytes"] == 0
    assert shown["resetArchiveRetention"] == "keep"
    policy = retention.Policy.from_setting({})
    assert policy.max_disk_bytes == 10 * GIB and policy.preserve_recent is None
    assert disk_budget.target_bytes(policy.max_disk_bytes, policy.high_water_bytes) == int(8 * GIB)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"maxDiskBytes": False}, {"max_disk_bytes": None}),
        ({"maxDiskBytes": 0}, {"max_disk_bytes": None}),
        ({"maxDiskBytes": "0"}, {"max_disk_bytes": None}),
        ({"maxDiskBytes": 5000}, {"max_disk_bytes": 5000}),
        ({"maxDiskBytes": "1.5 MB"}, {"max_disk_bytes": 1_572_864}),
        ({"highWaterBytes": 0}, {"high_water_bytes": None}),  # zero: 80% of maxDiskBytes
        ({"archiveDashboardAfter": False}, {"archive_dashboard_after": None}),
        ({"archiveDashboardAfter": 0}, {"archive_dashboard_after": None}),
        ({"preserveRecent": "off"}, {"preserve_recent": None}),
        ({"preserveRecent": "12h"}, {"preserve_recent": timedelta(hours=12)}),
        ({"resetArchiveRetention": False}, {"reset_archive_retention": None}),
    ],
)
def test_values_9_6_accepts(db, value, expected):
    policy = retention.Policy.from_setting(value)
    assert {name: getattr(policy, name) for name in expected} == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"maxDiskBytes": "lots"}, 'maxDiskBytes must be a size such as "10gb" or "500mb"'),
        ({"maxDiskBytes": -1}, "maxDiskBytes must be a size"),
        ({"maxDiskBytes": True}, "maxDiskBytes must be a size"),
        ({"highWaterBytes": -5}, 'highWaterBytes must be a size such as "8gb" or a non-negative'),
        ({"highWaterBytes": "8 parsecs"}, "highWaterBytes must be a size"),
        ({"preserveRecent": "soon"}, "preserveRecent must be a duration"),
        ({"archiveDashboardAfter": 7}, "archiveDashboardAfter must be a duration"),
        ({"resetArchiveRetention": "sometimes"}, "resetArchiveRetention must be a duration"),
    ],
)
def test_bad_values_are_a_400(operator, value, message):
    response = operator.patch("/api/v1/config/", {"session.maintenance": value})
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


# --- preserveRecent -------------------------------------------------------------------------


def test_preserve_recent_keeps_interactive_sessions_from_age_and_count(agents):
    dm = aged("agent:main:discord:dm:ann", 10)  # interactive, active 10 days ago
    cron = aged("agent:main:cron:nightly", 10)  # automation: not preserved
    old_dm = aged("agent:main:discord:dm:bob", 40)  # outside the window
    policy = retention.Policy(
        prune_after=timedelta(days=7), preserve_recent=timedelta(days=30), max_disk_bytes=None
    )
    planned = retention.plan(policy)
    assert planned.archive_age == [old_dm.pk, cron.pk]
    assert planned.keep_recent == [dm.pk]
    retention.sweep(policy)
    assert set(Session.objects.archived().values_list("pk", flat=True)) == {old_dm.pk, cron.pk}

    # Count: the cap takes the oldest, but not a recent interactive session.
    for n, days in enumerate((3, 2, 1)):
        aged(f"agent:main:discord:dm:u{n}", days)
    hook = aged("agent:main:hook:h1", 1)
    capped = retention.Policy(
        prune_after=None, max_entries=2, preserve_recent=timedelta(days=30), max_disk_bytes=None
    )
    planned = retention.plan(capped)
    assert planned.archive_cap == [hook.pk]  # 5 unarchived, cap 2: only the hook may go
    assert len(planned.keep_recent) == 3 and dm.pk in planned.keep_recent
    assert retention.sweep(capped)["keepRecent"] == 3


# --- maxDiskBytes / highWaterBytes ----------------------------------------------------------


def test_disk_budget_deletes_reset_then_cap_archives_down_to_the_high_water(
    agents, settings, tmp_path
):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    live = aged("agent:main:discord:dm:live", 1, *exchange(400))
    manual = archived("agent:main:discord:dm:manual", 50, "manual", archived_days=40)
    reset_old = archived("agent:main:discord:dm:r1", 50, "reset", archived_days=30)
    reset_new = archived("agent:main:discord:dm:r2", 50, "reset", archived_days=20)
    cap_old = archived("agent:main:discord:dm:c1", 50, "active-session-cap", archived_days=25)
    cap_new = archived("agent:main:discord:dm:c2", 50, "active-session-cap", archived_days=10)
    other = archived("agent:other:discord:dm:r", 50, "reset", archived_days=30)
    assert cold_storage.freeze(cap_new.pk)  # a cold transcript counts by its file
    used = disk_budget.usage_by_agent(["main"])["main"]
    sizes = disk_budget.session_bytes([reset_old.pk, reset_new.pk, cap_old.pk, cap_new.pk])
    assert (
        sizes[cap_new.pk]
        == (settings.COLD_STORAGE_DIR / Session.objects.get(pk=cap_new.pk).cold_file).stat().st_size
    )
    # Over by one byte; the high water needs both reset archives and one cap archive gone.
    target = used - sizes[reset_old.pk] - sizes[reset_new.pk] - 1
    policy = retention.Policy(
        prune_after=None, max_entries=0, max_disk_bytes=used - 1, high_water_bytes=target
    )
    planned = retention.plan(policy)
    assert planned.delete_disk == [reset_old.pk, reset_new.pk, cap_old.pk]
    assert planned.disk["main"]["bytes"] == used
    assert planned.disk["main"]["afterBytes"] == target + 1 - sizes[cap_old.pk]
    # Another agent has its own budget: under it, its reset archive stays.
    assert planned.disk["other"]["afterBytes"] == planned.disk["other"]["bytes"] < used

    report = retention.sweep(policy)
    assert report["deleteDisk"] == 3 and report["deleted"] == 3
    left = set(Session.objects.values_list("pk", flat=True))
    assert left == {live.pk, manual.pk, cap_new.pk, other.pk}  # manual archives never go
    assert disk_budget.usage_by_agent(["main"])["main"] <= target
    assert retention.plan(policy).delete_disk == []  # under the budget now: nothing more


def test_warn_mode_and_dry_run_only_report_the_disk_tier(agents):
    archived("agent:main:discord:dm:r1", 50, "reset", archived_days=30)
    policy = retention.Policy(mode="warn", prune_after=None, max_disk_bytes=1)
    assert retention.sweep(policy)["deleteDisk"] == 1
    assert (
        retention.sweep(retention.Policy(prune_after=None, max_disk_bytes=1), dry_run=True)[
            "deleteDisk"
        ]
        == 1
    )
    assert Session.objects.count() == 1


def test_disk_tier_keeps_protected_archives(agents):
    pinned = archived("agent:main:discord:dm:r1", 50, "reset", archived_days=30)
    Session.objects.filter(pk=pinned.pk).update(pinned_at=timezone.now())
    recent = archived("agent:main:discord:dm:c1", 1, "active-session-cap", archived_days=1)
    policy = retention.Policy(prune_after=None, max_disk_bytes=1, preserve_recent=timedelta(days=7))
    assert retention.plan(policy).delete_disk == []
    report = retention.sweep(policy)
    assert report["deleteDisk"] == 0 and report["deleted"] == 0
    assert set(Session.objects.values_list("pk", flat=True)) == {pinned.pk, recent.pk}


# --- archiveDashboardAfter, resetArchiveRetention -------------------------------------------


def test_archive_dashboard_after_archives_nothing_here(agents):
    aged("agent:main:webchat:dm:x", 30)
    policy = retention.Policy(prune_after=None, archive_dashboard_after=timedelta(days=1))
    assert retention.plan(policy).archive_dashboard == []
    assert retention.sweep(policy)["archiveDashboard"] == 0
    assert not Session.objects.archived().exists()


def test_reset_archive_retention_ages_a_real_reset_archive(agents):
    kept = aged("agent:main:discord:dm:a", 1, *exchange(5))
    previous = Session.objects.get(key=session_admin.reset(kept)["previousKey"])
    policy = retention.Policy(prune_after=None, reset_archive_retention=timedelta(days=30))
    assert retention.plan(policy).delete_archived == []  # archived just now
    Session.objects.filter(pk=previous.pk).update(archived_at=timezone.now() - timedelta(days=31))
    assert retention.plan(policy).delete_archived == [previous.pk]


# --- the dry runs ---------------------------------------------------------------------------


def test_the_admin_preview_shows_each_new_rule(agents):
    from tests.manage.test_retention import RETENTION_URL, _staff

    recent = aged("agent:main:discord:dm:recent", 10)
    reset = archived("agent:main:discord:dm:r1", 50, "reset", archived_days=30)
    op = _staff("olivia", "Operators")
    policy = {
        "pruneAfter": "7d",
        "preserveRecent": "30d",
        "archiveDashboardAfter": "1d",
        "maxDiskBytes": 1,
        "highWaterBytes": 0,
    }
    page = op.post(RETENTION_URL, {"policy": json.dumps(policy), "_preview": "1"})
    assert page.status_code == 200
    text = html.unescape(page.text)
    sections = text.split('data-tier="')
    by_tier = {part.split('"', 1)[0]: part for part in sections[1:]}
    assert recent.key in by_tier["keep_recent"] and recent.key not in by_tier["archive_age"]
    assert reset.key in by_tier["delete_disk"]
    assert 'tier-count">0<' in by_tier["archive_dashboard"]
    assert 'id="retention-disk"' in text
    assert Session.objects.filter(pk=reset.pk).exists()  # a preview deletes nothing
    assert GatewayConfig.load().session_maintenance == {}


def test_sessions_cleanup_dry_run_names_the_actions(agents):
    from sessions_app.manage.config import update_config

    recent = aged("agent:main:discord:dm:recent", 10)
    reset = archived("agent:main:discord:dm:r1", 50, "reset", archived_days=30)
    update_config(
        api_key=None,
        changes={
            "session.maintenance": {"pruneAfter": "7d", "preserveRecent": "30d", "maxDiskBytes": 1}
        },
    )
    out = StringIO()
    call_command("sessions", "cleanup", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert f"keep  {recent.key}" in text and f"delete-disk  {reset.key}" in text
    assert "1 kept by preserveRecent" in text
    out = StringIO()
    call_command("sessions", "cleanup", "--json", stdout=out, stderr=StringIO())
    report = json.loads(out.getvalue())
    assert report["keepRecent"] == 1 and report["deleteDisk"] == 1 and "main" in report["disk"]
    assert Session.objects.filter(pk=reset.pk).exists()
    # Enforced, it lists what it deleted: the plan's rows are read before the sweep.
    out = StringIO()
    call_command("sessions", "cleanup", "--enforce", stdout=out, stderr=StringIO())
    assert f"delete-disk  {reset.key}" in out.getvalue() and "1 deleted" in out.getvalue()
    assert not Session.objects.filter(pk=reset.pk).exists()
