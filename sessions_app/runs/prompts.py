"""The exact texts the engine gives agents (reference §4.3, §4.5, §5.3, §5.4). Pure functions."""

from __future__ import annotations

import re

ANNOUNCE_STEP_MESSAGE = "Agent-to-agent announce step."
SUBAGENT_ANNOUNCE_MESSAGE = "Sub-agent announce step."


def _lines(*lines: str | None) -> str:
    return "\n".join(line for line in lines if line)


def a2a_context(*, requester_key: str, requester_channel: str, target_key: str) -> str:
    """Injected into the primary run of a sessions_send."""
    return _lines(
        "Agent-to-agent message context:",
        f"Agent 1 (requester) session: {requester_key}." if requester_key else None,
        f"Agent 1 (requester) channel: {requester_channel}." if requester_channel else None,
        f"Agent 2 (target) session: {target_key}.",
    )


def reply_step_context(
    *,
    speaker_is_requester: bool,
    turn: int,
    max_turns: int,
    requester_key: str,
    requester_channel: str,
    target_key: str,
    target_channel: str,
) -> str:
    return _lines(
        "Agent-to-agent reply step:",
        "Current agent: Agent 1 (requester)."
        if speaker_is_requester
        else "Current agent: Agent 2 (target).",
        f"Turn {turn} of {max_turns}.",
        f"Agent 1 (requester) session: {requester_key}.",
        f"Agent 1 (requester) channel: {requester_channel}." if requester_channel else None,
        f"Agent 2 (target) session: {target_key}.",
        f"Agent 2 (target) channel: {target_channel}." if target_channel else None,
        'If you want to stop the ping-pong, reply exactly "REPLY_SKIP".',
    )


def announce_context(
    *,
    requester_key: str,
    requester_channel: str,
    target_key: str,
    target_channel: str,
    original: str,
    round_one: str | None,
    latest: str | None,
) -> str:
    return _lines(
        "Agent-to-agent announce step:",
        f"Agent 1 (requester) session: {requester_key}." if requester_key else None,
        f"Agent 1 (requester) channel: {requester_channel}." if requester_channel else None,
        f"Agent 2 (target) session: {target_key}.",
        f"Agent 2 (target) channel: {target_channel}." if target_channel else None,
        f"Original request: {original}",
        f"Round 1 reply: {round_one}" if round_one else "Round 1 reply: (not available).",
        f"Latest reply: {latest}" if latest else "Latest reply: (not available).",
        'If you want to remain silent, reply exactly "ANNOUNCE_SKIP".',
        "Any other reply will be posted to the target channel.",
        "After this reply, the agent-to-agent conversation is over.",
    )


def subagent_system_prompt(
    *, task: str, label: str, requester_key: str, requester_channel: str, child_key: str
) -> str:
    """The baseline sub-agent prompt (reference §5.4), with the seeds' Status/Result/Notes."""
    collapsed = re.sub(r"\s+", " ", task).strip()
    return _lines(
        "# Subagent Context",
        "You are a sub-agent spawned by another session to handle one task.",
        "",
        "## Your Role",
        f"You were created to handle: {collapsed}",
        "",
        "## Rules",
        "- Stay on the task; do not start unrelated work.",
        "- You cannot spawn further sub-agents.",
        "",
        "## Output Format",
        "End with: Status: success | failed | blocked, then Result:, then Notes:.",
        "",
        "## What You DON'T Do",
        "- Talk to the user directly; your result is announced to the requester.",
        "",
        "## Session Context",
        f"- Label: {label}" if label else None,
        f"- Requester session: {requester_key}.",
        f"- Requester channel: {requester_channel}." if requester_channel else None,
        f"- Your session: {child_key}.",
    )


def subagent_announce_context(
    *, requester_key: str, requester_channel: str, task: str, result: str | None
) -> str:
    """The announce step run inside the child (reference §5.3, the seeds' generation)."""
    return _lines(
        "Sub-agent announce step:",
        f"Requester session: {requester_key}.",
        f"Requester channel: {requester_channel}." if requester_channel else None,
        f"Original task: {task}",
        f"Sub-agent result: {result}" if result else "Sub-agent result: (not available).",
        'Reply exactly "ANNOUNCE_SKIP" to stay silent.',
        "Any other reply will be posted to the requester chat channel.",
    )


def status_line(status: str, error: str = "") -> str:
    """Status from the run outcome, never from the model's text."""
    if status == "ok":
        return "success"
    if status == "timeout":
        return "timed out"
    if status == "aborted":
        return "aborted"
    if status == "error":
        return f"failed: {error or 'unknown error'}"
    return "finished with unknown status"


def format_tokens(value: int | None) -> str:
    if not value:
        return "0"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}m"
    if value >= 1_000:
        return f"{value / 1_000:.1f}k"
    return str(round(value))


def format_duration(ms: int | None) -> str:
    """Compact duration, e.g. 850ms, 42s, 5m12s, 1h3m."""
    if ms is None or ms < 0:
        return "n/a"
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def stats_line(
    *,
    runtime_ms: int | None,
    input_tokens: int | None,
    output_tokens: int | None,
    total_tokens: int | None,
    session_key: str,
    session_id: str | None,
    transcript: str | None,
    cost_usd: float | None = None,
) -> str:
    parts = [f"runtime {format_duration(runtime_ms)}"]
    total = total_tokens
    if total is None and input_tokens is not None and output_tokens is not None:
        total = input_tokens + output_tokens
    if total is None:
        parts.append("tokens n/a")
    else:
        parts.append(
            f"tokens {format_tokens(total)} (in {format_tokens(input_tokens)} / out {format_tokens(output_tokens)})"
        )
    if cost_usd is not None:
        parts.append(f"est ${cost_usd:.2f}" if cost_usd >= 0.01 else f"est ${cost_usd:.4f}")
    parts.append(f"sessionKey {session_key}")
    if session_id:
        parts.append(f"sessionId {session_id}")
    if transcript:
        parts.append(f"transcript {transcript}")
    return "Stats: " + " • ".join(parts)


def subagent_report(*, status: str, result: str, notes: str, stats: str) -> str:
    """The message posted to the requester when a sub-agent finishes (seeds: Status/Result/Notes)."""
    return "\n".join([f"Status: {status}", f"Result: {result}", f"Notes: {notes}", stats])
