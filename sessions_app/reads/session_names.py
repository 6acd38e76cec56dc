"""What a session is called where a person reads it: the browser and the admin ask here, so a
sub-agent or an ACP child reads the same in both (issue 29.5).

OpenClaw's sessions_list row says kind `other` and channel `unknown` for a sub-agent's session
and an ACP harness's (reference §1.4), which the tools and the API keep. A person is told what
it is instead: `sub-agent`, or `ACP` with the harness that runs it; titled by the task label its
spawn gave (sessions_spawn `label`), else its display name, else its key. Pure: no queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from openclaw_common import keys

from ..acp.runtime import is_acp_session

SUBAGENT = "sub-agent"
ACP = "ACP"


@dataclass(frozen=True)
class SessionName:
    title: str
    kind: str  # "sub-agent", "ACP", or the row's kind (main, group, cron, hook, node, other)
    css: str  # the kind as a class name: subagent, acp, main…
    harness: str  # the ACP harness's id; "" for any other session
    task: str  # the task label of a spawned session; ""
    parent: str  # the key of the session that spawned it; ""
    # The channel worth showing: "" for spawned sessions, whose row says `unknown`.
    channel: str

    @property
    def spawned(self) -> bool:
        return self.kind in (SUBAGENT, ACP)

    @property
    def kind_text(self) -> str:
        """One phrase for the kind: "ACP · codex", "sub-agent", "group"."""
        return f"{ACP} · {self.harness}" if self.harness else self.kind


def name_of(
    *,
    key: str,
    kind: str,
    channel: str = "",
    label: str = "",
    display_name: str = "",
    spawned_by: str = "",
    spawn_depth: int | None = 0,
) -> SessionName:
    """The name of a session from its row's fields (a Session, a sessions_list row or a tree
    row give them under their own names; the callers map them)."""
    acp = is_acp_session(key)
    spawned = acp or keys.is_subagent_key(key) or bool(spawned_by) or (spawn_depth or 0) > 0
    if spawned:
        title = label or display_name or key
        return SessionName(
            title=title,
            kind=ACP if acp else SUBAGENT,
            css="acp" if acp else "subagent",
            harness=keys.agent_id_of(key) if acp else "",
            task=label,
            parent=spawned_by,
            channel="",
        )
    return SessionName(
        title=display_name or label or key,
        kind=kind,
        css=kind,
        harness="",
        task="",
        parent="",
        channel=channel,
    )


def name_of_row(row: dict) -> SessionName:
    """name_of() for a sessions_list row (rows.session_row)."""
    return name_of(
        key=row.get("key") or "",
        kind=row.get("kind") or "",
        channel=row.get("channel") or "",
        label=row.get("label") or "",
        display_name=row.get("displayName") or "",
        spawned_by=row.get("spawnedBy") or "",
        spawn_depth=row.get("spawnDepth") or 0,
    )


def name_of_session(session) -> SessionName:
    """name_of() for a Session (or a rows.SessionRow)."""
    return name_of(
        key=session.key,
        kind=session.kind,
        channel=session.row_channel,
        label=session.label,
        display_name=session.display_name,
        spawned_by=session.spawned_by,
        spawn_depth=session.spawn_depth,
    )
