"""An ACP child's harness facts: recorded by the spawn and the worker's turns, shown by the admin
and the transcript browser (docs/acp.md "What the pages show").

Recorded (models/acp.py): at the spawn, the harness and the cwd (AcpChild); as a turn starts, its
ACP session, cwd, user, process and how it was reached; each permission request and how
`permissionMode` answered it (AcpPermission); as the turn ends, whether the worker kept its
process warm and until when. The pool of warm processes lives in the worker, and the pages are
served by the web process: they show what the worker last said, never ask the pool. A turn that
ends a process (a failure in it) also marks every child whose ACP session lived there as cold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from openclaw_common import keys

from ..lib import sanitize, when
from ..models import AcpChild, AcpPermission, Run, Session
from ..runs.engine import worker_name

TITLE_CHARS = 500
OPTIONS_KEPT = 20
DECISIONS_SHOWN = 50


def spawned(session: Session, *, harness: str, cwd: str) -> AcpChild:
    """The child's row, with the spawn (in its transaction)."""
    return AcpChild.objects.create(session=session, harness=harness, cwd=cwd)


@dataclass
class TurnFacts:
    """What one turn (acp/runtime.py) records as its events come, and when it ends."""

    run: Run
    harness: str
    warm_seconds: int
    pid: int | None = None
    started: bool = False
    acp_session_id: str = ""
    worker: str = field(default_factory=worker_name)

    def seen(self, events: list[tuple[str, dict]]) -> None:
        for kind, data in events:
            if kind == "started":
                self._started(data)
            elif kind == "permission":
                self._permission(data)

    def _started(self, data: dict[str, Any]) -> None:
        self.started = True
        self.pid = data.get("pid") if isinstance(data.get("pid"), int) else None
        resumed = data.get("resumed")
        self.acp_session_id = str(data.get("sessionId") or "")[:512]
        facts = {
            "harness": self.harness,
            "acp_session_id": self.acp_session_id,
            "turn_cwd": str(data.get("cwd") or "")[:4096],
            "reached": resumed if resumed in ("warm", "load") else "new",
            "not_continued": str(data.get("notContinued") or "")[:512],
            "warm_start": bool(data.get("warm")),
            "uid": data.get("uid") if isinstance(data.get("uid"), int) else None,
            "worker": self.worker,
            "pid": self.pid,
            "run": self.run,
            "turn_started_at": timezone.now(),
            "turn_ended_at": None,
            "warm_until": None,
            "warm_seconds": self.warm_seconds,
        }
        # A child spawned before these rows were kept has none yet: its cwd is this turn's.
        AcpChild.objects.update_or_create(
            session_id=self.run.session_id,
            defaults=facts,
            create_defaults={**facts, "cwd": facts["turn_cwd"]},
        )

    def _permission(self, data: dict[str, Any]) -> None:
        call = data.get("toolCall")
        call = call if isinstance(call, dict) else {}
        offered = data.get("options")
        offered = offered if isinstance(offered, list) else []
        options = [
            {k: str(o.get(k) or "")[:200] for k in ("optionId", "name", "kind")}
            for o in offered[:OPTIONS_KEPT]
            if isinstance(o, dict)
        ]
        AcpPermission.objects.create(
            session_id=self.run.session_id,
            run=self.run,
            acp_session_id=self.acp_session_id,
            tool_call_id=str(call.get("toolCallId") or "")[:200],
            tool_kind=str(call.get("kind") or "")[:32],
            title=str(call.get("title") or "")[:TITLE_CHARS],
            options=options,
            mode=str(data.get("mode") or ""),
            option_id=str(data.get("optionId") or "")[:200],
            allowed=bool(data.get("allowed")),
        )

    def ended(self, *, kept_warm: bool, pid: int | None) -> None:
        """The turn is over: its process kept warm (until now + warmSeconds) or ended. Every
        child whose ACP session is in that process shares its fate."""
        now = timezone.now()
        pid = pid if pid is not None else self.pid
        until = now + timedelta(seconds=self.warm_seconds) if kept_warm else None
        with transaction.atomic():
            AcpChild.objects.filter(session_id=self.run.session_id, run=self.run).update(
                turn_ended_at=now
            )
            if pid is not None:
                AcpChild.objects.filter(worker=self.worker, pid=pid).update(warm_until=until)


# --- what the pages show ------------------------------------------------------------------


def acp_harness_of(key: str) -> str | None:
    """The harness of `agent:<harness>:acp:<uuid>`, or None for any other key."""
    parsed = keys.parse_agent_key(key)
    return parsed[0] if parsed is not None and parsed[1].startswith("acp:") else None


def page_facts(session: Session, *, now: datetime | None = None) -> dict[str, Any] | None:
    """The ACP panel of a child's page (admin and browser say the same), or None when the
    session is no ACP child. Two queries for a child, none for any other session."""
    harness = acp_harness_of(session.key)
    if harness is None:
        return None
    row = AcpChild.objects.select_related("run").filter(session_id=session.pk).first()
    if row is None:
        # Spawned before the worker kept these facts (or its spawn was undone): the key says
        # which harness; its transcript's start notes say the rest.
        return {"harness": harness, "recorded": False, "decisions": []}
    now = now or timezone.now()
    decisions = list(
        AcpPermission.objects.filter(session_id=session.pk).order_by("-decided_at", "-id")[
            : DECISIONS_SHOWN + 1
        ]
    )
    state, state_text = _warmth(row, now)
    return {
        "recorded": True,
        "harness": row.harness,
        "acp_session_id": row.acp_session_id,
        "cwd": row.turn_cwd or row.cwd,
        "spawn_cwd": row.cwd if row.turn_cwd and row.turn_cwd != row.cwd else "",
        "uid": row.uid,
        "pid": row.pid,
        "worker": row.worker,
        "reached": _reached_text(row),
        "not_continued": row.not_continued,
        "turn_started_at": row.turn_started_at,
        "turn_ended_at": row.turn_ended_at,
        "state": state,
        "state_text": state_text,
        "warm_until": _until(row.warm_until, now) if state == "warm" else "",
        "warm_seconds": row.warm_seconds,
        "decisions": [_decision(d) for d in decisions[:DECISIONS_SHOWN]],
        "decisions_more": len(decisions) > DECISIONS_SHOWN,
    }


def _warmth(row: AcpChild, now: datetime) -> tuple[str, str]:
    """warm | running | cold | waiting, and a sentence saying so (as the worker last said)."""
    in_flight = row.run is not None and row.run.status in (Run.QUEUED, Run.RUNNING)
    if row.turn_started_at is None:
        return "waiting", "no turn has started yet"
    if row.turn_ended_at is None and in_flight:
        return "running", f"a turn is running in process {row.pid} ({row.worker})"
    if row.warm_until is not None and row.warm_until > now:
        return "warm", (
            f"its process {row.pid} is kept warm by worker {row.worker} "
            f"(warmSeconds {row.warm_seconds}): the next turn continues this ACP session there"
        )
    if row.warm_until is not None:
        return "cold", "its process was kept warm after the last turn, and has ended since"
    return "cold", "its process has ended: the next turn starts a new one"


def _until(at: datetime | None, now: datetime) -> str:
    """ "06:30:15 UTC (about 4 min from now)": lib/when's times say how long ago, and this one
    is ahead."""
    if at is None:
        return ""
    seconds = max(0, int((at - now).total_seconds()))
    left = f"{seconds // 60} min" if seconds >= 60 else f"{seconds} s"
    return f"{when.absolute(when.to_ms(at))} (about {left} from now)"


def _reached_text(row: AcpChild) -> str:
    process = "a warm process" if row.warm_start else "a new process"
    return {
        "new": f"a new ACP session, in {process}",
        "warm": f"continued in {process}",
        "load": f"loaded with session/load, in {process}",
    }.get(row.reached, "")


def _shown(text: str) -> str:
    return sanitize.redact(text)[0]


def _decision(decision: AcpPermission) -> dict[str, Any]:
    chosen = next((o for o in decision.options if o.get("optionId") == decision.option_id), None)
    return {
        "decided_at": decision.decided_at,
        "title": _shown(decision.title or decision.tool_kind or "a tool call"),
        "tool_kind": decision.tool_kind,
        "tool_call_id": decision.tool_call_id,
        "mode": decision.mode,
        "allowed": decision.allowed,
        "verdict": "allowed" if decision.allowed else "denied",
        "chosen": _shown(
            (chosen.get("name") or decision.option_id)
            if chosen
            else (decision.option_id or "cancelled")
        ),
        "options": [
            {"name": _shown(o.get("name") or o.get("optionId") or ""), "kind": o.get("kind", "")}
            for o in decision.options
        ],
        "run_id": decision.run_id,
    }
