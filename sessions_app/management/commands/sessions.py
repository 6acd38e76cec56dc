"""python manage.py sessions <verb>: OpenClaw's `openclaw sessions` verbs (9.6 §6.2) on this store.

  list [--agent ID] [--active MIN] [--limit N|all] [--json]
  tail KEY [--tail N] [--no-follow] [--timeout S]      follows new messages (polls by seq)
  archive KEY... [--dry-run] [--json]
  delete KEY... --yes [--dry-run] [--json]
  export DIR [--agent ID]                               sessions.json + JSONL, as import_openclaw reads
  cleanup [--enforce] [--json]                          retention; a dry run unless --enforce

Each verb calls one function (retention.py, state_export.py, cold_storage.py); this file parses
and prints. Long work prints progress on stderr.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument
from sessions_app.lib import sanitize
from sessions_app.manage import retention, session_admin
from sessions_app.models import GatewayConfig, Message, Session
from sessions_app.reads import internal_rows
from sessions_app.storage import cold_storage, state_export
from sessions_app.transcript import payload

NOT_FOUND = "Session not found. Run openclaw sessions list --json to choose a valid key."
DEFAULT_LIMIT = 100
TAIL_POLL_SECONDS = 0.5
TEXT_WIDTH = 200


class ProgressLine:
    """Plain-text progress on stderr: `export: 120/300 (40%)`, at most every half second and
    at the end (a log reads it as well as a terminal)."""

    def __init__(self, stream, *, every: float = 0.5):
        self.stream, self.every, self.last = stream, every, 0.0

    def __call__(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.every:
            return
        self.last = now
        percent = 100 * done // total if total else 100
        bar = "#" * (percent // 5)
        self.stream.write(f"{label}: [{bar:<20}] {done}/{total} ({percent}%)\n")
        self.stream.flush()


class Command(BaseCommand):
    help = "List, follow, archive, delete, export and clean up sessions (openclaw sessions)."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="Sessions, most recently active first.")
        listing.add_argument("--agent", help="Only this agent's sessions.")
        listing.add_argument("--active", type=int, metavar="MIN", help="Active in the last MIN.")
        listing.add_argument("--limit", default=str(DEFAULT_LIMIT), help='A number or "all".')
        listing.add_argument("--json", action="store_true")
        tail = verbs.add_parser("tail", help="A session's last messages, then new ones.")
        tail.add_argument("key")
        tail.add_argument("--tail", type=int, default=80, metavar="N")
        tail.add_argument("--no-follow", action="store_true", help="Print and exit.")
        tail.add_argument("--timeout", type=float, default=0, help="Stop following after S.")
        for name in ("archive", "delete"):
            verb = verbs.add_parser(name, help=f"{name.capitalize()} sessions by key.")
            verb.add_argument("keys", nargs="+", metavar="KEY")
            verb.add_argument("--dry-run", action="store_true")
            verb.add_argument("--json", action="store_true")
            if name == "delete":
                verb.add_argument("--yes", action="store_true", help="Really delete.")
        export = verbs.add_parser("export", help="Write an OpenClaw state dir.")
        export.add_argument("directory", metavar="DIR")
        export.add_argument("--agent", help="Only this agent's sessions.")
        cleanup = verbs.add_parser("cleanup", help="Retention (session.maintenance).")
        cleanup.add_argument("--enforce", action="store_true", help="Apply (default: dry run).")
        cleanup.add_argument("--dry-run", action="store_true", help="The default.")
        cleanup.add_argument("--json", action="store_true")

    def handle(self, *args, verb: str, **options):
        return getattr(self, f"do_{verb}")(**options) or None

    @property
    def progress(self) -> ProgressLine:
        return ProgressLine(self.stderr)

    # --- list --------------------------------------------------------------------------------

    def do_list(self, *, agent, active, limit, json: bool, **_):
        limit_value = _limit(limit)
        if active is not None and active <= 0:
            raise CommandError("--active must be a positive number of minutes")
        sessions = Session.objects.by_activity()
        if agent:
            sessions = sessions.filter(agent_id=agent)
        if active:
            since = int((time.time() - active * 60) * 1000)
            sessions = sessions.filter(updated_at__gte=since)
        total = sessions.count()
        page = list(sessions[:limit_value] if limit_value else sessions)
        rows = [_row(s) for s in page]
        if json:
            out = {
                "allAgents": not agent,
                "count": len(rows),
                "totalCount": total,
                "limitApplied": limit_value,
                "hasMore": len(rows) < total,
                "activeMinutes": active,
                "sessions": rows,
            }
            self.stdout.write(_dumps(out))
            return
        for row in rows:
            flags = "".join(
                [" archived" if row["archived"] else "", " cold" if row["cold"] else ""]
            )
            self.stdout.write(
                f"{row['key']}  {row['messages']} messages  {_ago(row['updatedAt'])}{flags}"
            )
        self.stdout.write(f"{len(rows)} of {total} sessions")

    # --- tail --------------------------------------------------------------------------------

    def do_tail(self, *, key, tail, no_follow, timeout, **_):
        session = _find(key)
        if session is None:
            raise CommandError(NOT_FOUND)
        if tail < 0:
            raise CommandError("--tail must be a non-negative integer")
        after = max(0, session.last_seq - tail)
        stop_at = time.monotonic() + timeout if timeout else None
        while True:
            messages = Message.objects.filter(session_id=session.pk, seq__gt=after).order_by("seq")
            for message in messages[:1000]:
                self.stdout.write(_tail_line(message))
                after = message.seq
            self.stdout.flush()
            if no_follow or (stop_at is not None and time.monotonic() >= stop_at):
                return
            time.sleep(TAIL_POLL_SECONDS)

    # --- archive / delete ---------------------------------------------------------------------

    def do_archive(self, *, keys: list[str], dry_run: bool, json: bool, **_):
        self._each("archive", keys, dry_run=dry_run, as_json=json)

    def do_delete(self, *, keys: list[str], dry_run: bool, json: bool, yes: bool, **_):
        if not yes and not dry_run:
            raise CommandError("delete needs --yes (a deleted session cannot be restored)")
        self._each("delete", keys, dry_run=dry_run, as_json=json)

    def _each(self, operation: str, raw_keys: list[str], *, dry_run: bool, as_json: bool):
        results = [_apply(operation, key, dry_run=dry_run) for key in raw_keys]
        ok = all(r["ok"] for r in results)
        if as_json:
            out = {"ok": ok, "operation": operation, "dryRun": dry_run, "results": results}
            self.stdout.write(_dumps(out))
        else:
            for r in results:
                self.stdout.write(
                    f"{r['key']}: {r['status']}" + (f" ({r['error']})" if not r["ok"] else "")
                )
        if not ok:
            raise CommandError(f"{operation}: {sum(not r['ok'] for r in results)} failed")

    # --- export ------------------------------------------------------------------------------

    def do_export(self, *, directory, agent, **_):
        try:
            done = state_export.export_state_dir(directory, agent_id=agent, progress=self.progress)
        except (OSError, cold_storage.ColdStorageError) as exc:
            raise CommandError(f"export failed: {exc}") from None
        self.stdout.write(
            f"exported {done['sessions']} sessions ({done['messages']} messages) of "
            f"{done['agents']} agents to {directory}"
        )

    # --- cleanup -----------------------------------------------------------------------------

    def do_cleanup(self, *, enforce: bool, dry_run: bool, json: bool, **_):
        if enforce and dry_run:
            raise CommandError("--enforce and --dry-run exclude each other")
        policy = retention.load_policy()
        if enforce and policy.mode == "warn":
            # --enforce is the operator's explicit say-so for this one pass.
            policy = retention.Policy(**{**policy.__dict__, "mode": "enforce"})
        # One plan, shown and applied: its rows are read before the sweep deletes any of them.
        now = timezone.now()
        plan = retention.plan(policy, now=now)
        lines = [] if json else self.plan_lines(plan)
        report = retention.sweep(
            policy, dry_run=not enforce, progress=self.progress, now=now, planned=plan
        )
        if json:
            self.stdout.write(_dumps(report))
            return
        for line in lines:
            self.stdout.write(line)
        what = "would be" if not enforce else "were"
        self.stdout.write(
            f"{report['archiveAge'] + report['archiveCap']} sessions {what} archived, "
            f"{report['deleteArchived'] + report['deleteDisk']} deleted, "
            f"{report['keepRecent']} kept by preserveRecent, {report['cold']} transcripts moved cold "
            f"(mode {report['mode']}{', dry run: nothing changed' if not enforce else ''})"
        )

    @staticmethod
    def plan_lines(plan: retention.Plan) -> list[str]:
        lines = []
        for action, pks in (
            ("archive-age", plan.archive_age),
            ("archive-dashboard", plan.archive_dashboard),
            ("archive-cap", plan.archive_cap),
            ("keep", plan.keep_recent),
            ("delete-archived", plan.delete_archived),
            ("delete-disk", plan.delete_disk),
            ("cold", plan.cold),
        ):
            for row in retention.preview_rows(pks, limit=DEFAULT_LIMIT):
                lines.append(f"{action}  {row['key']}  {_ago(row['updated_at'])}")
            if len(pks) > DEFAULT_LIMIT:
                lines.append(f"{action}  … {len(pks) - DEFAULT_LIMIT} more")
        return lines


def _limit(raw: str) -> int | None:
    if raw == "all":
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise CommandError('--limit must be a positive integer or "all"')
    return int(raw)


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _find(raw_key: str) -> Session | None:
    try:
        key = keys.canonical_key(raw_key, settings=GatewayConfig.load().key_settings)
    except keys.InvalidKey:
        return None
    return Session.objects.filter(key=key).first()


def _apply(operation: str, raw_key: str, *, dry_run: bool) -> dict[str, Any]:
    """One key of `archive` / `delete`: session_admin's archive (stops the session's work, 9.6
    `sessions.patch archived:true`) and delete (9.6 `sessions.delete`; an operator's, so the
    session need not be archived first)."""
    session = _find(raw_key)
    if session is None:
        return {"key": raw_key, "ok": False, "status": "not_found", "error": NOT_FOUND}
    settings = GatewayConfig.load().key_settings
    try:
        if operation == "archive":
            session_admin.check_archivable(session, settings)
            status = "would-archive" if dry_run else session_admin.archive(session)
        elif dry_run:
            session_admin.check_deletable(session, settings)
            status = "would-delete"
        else:
            session_admin.delete(session, archived_only=False, settings=settings)
            status = "deleted"
    except InvalidArgument as exc:
        return {"key": session.key, "ok": False, "status": "refused", "error": exc.message}
    return {"key": session.key, "ok": True, "status": status}


def _row(session: Session) -> dict[str, Any]:
    return {
        "key": session.key,
        "sessionId": session.session_id,
        "agentId": session.agent_id,
        "kind": session.kind,
        "label": session.label or None,
        "updatedAt": session.updated_at,
        "messages": session.last_seq,
        "archived": session.archived,
        "cold": session.cold_at is not None,
    }


def _ago(ms: int) -> str:
    seconds = max(0, int(time.time() - ms / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _tail_line(message: Message) -> str:
    """One message as a redacted line: text, tool calls as `name {...redacted...}`."""
    data, _ = sanitize.redact_message(payload(message))
    content = data.get("content")
    parts: list[str] = []
    # A completion prompt, an announce step, a silent reply, a harness note: its summary.
    internal = internal_rows.of_message(data)
    if internal is not None:
        parts.append(f"[internal] {internal.summary}")
    elif isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") in ("toolCall", "tool_use"):
                parts.append(f"{block.get('name', 'tool')} {{...redacted...}}")
    if message.role == "toolResult":
        status = "error" if data.get("isError") else "ok"
        parts = [f"{message.tool_name or 'tool'}: {status}"]
    text = " ".join(" ".join(parts).split())
    if len(text) > TEXT_WIDTH:
        text = text[: TEXT_WIDTH - 1] + "…"
    when = datetime.fromtimestamp(message.timestamp / 1000, tz=UTC)
    return f"#{message.seq} {when:%H:%M:%S} {message.role}: {text}"
