"""internal_rows.classify (issue 29.4): which stored rows a person reads as machinery, and the
one line each is shown as. Pure; the surfaces' tests drive a real completion turn."""

import pytest

from sessions_app import send_modes
from sessions_app.reads import history_read, internal_rows
from sessions_app.runs import prompts


def completion(*outcomes: tuple[str, dict], settle: bool = False) -> str:
    children = [(key, None, outcome) for key, outcome in outcomes]
    return prompts.completion_message(
        children, instruction=prompts.INSTRUCTION_TOP_LEVEL, stats=True, settle=settle
    )


COMPLETION = {"kind": "inter_session", "sourceTool": "subagent_announce"}
SETTLE = {"kind": "inter_session", "sourceTool": "subagent_settle"}


@pytest.mark.parametrize(
    ("role", "content", "provenance", "expected"),
    [
        (
            "user",
            completion(("c1", {"label": "papers", "status": "ok", "result": "x"})),
            COMPLETION,
            ("completion", "Sub-agent papers finished: success"),
        ),
        (
            "user",
            completion(("c1", {"task": "run the tests", "status": "error", "error": "boom"})),
            COMPLETION,
            ("completion", "Sub-agent run the tests finished: failed: boom"),
        ),
        (
            "user",
            completion(
                ("c1", {"label": "a", "status": "ok"}),
                ("c2", {"label": "b", "status": "timeout"}),
                settle=True,
            ),
            SETTLE,
            ("completion", "2 sub-agents finished: a: success, b: timed out"),
        ),
        (
            "user",
            prompts.ANNOUNCE_STEP_MESSAGE,
            {"kind": "internal_system", "sourceTool": "sessions_send"},
            ("announce", "Agent-to-agent announce step"),
        ),
        (
            "assistant",
            [{"type": "text", "text": "ANNOUNCE_SKIP"}],
            None,
            ("skip", "Replied ANNOUNCE_SKIP (announce skipped)"),
        ),
        ("assistant", "no_reply.", None, ("skip", "Replied NO_REPLY (nothing to send)")),
        (
            "user",
            send_modes.WAKE_MESSAGE,
            {
                "kind": "inter_session",
                "sourceTool": send_modes.WAKE_TOOL,
                "sourceSessionKey": "agent:main:x",
            },
            ("wake", "Woken: agent:main:x changed"),
        ),
        (
            "system",
            [{"type": "text", "text": "Plan:\n- read\n- write"}],
            {"kind": "internal_system", "sourceTool": "sessions_spawn"},
            ("harness", "Harness note: Plan: - read - write"),
        ),
    ],
)
def test_internal_rows_and_their_summaries(role, content, provenance, expected):
    found = internal_rows.classify(role, content, provenance)
    assert found is not None and (found.kind, found.summary) == expected


@pytest.mark.parametrize(
    ("role", "content", "provenance"),
    [
        ("user", "Sub-agent announce step.", None),  # typed by a person: no internal provenance
        ("user", send_modes.WAKE_MESSAGE, None),
        ("assistant", "No reply needed, NO_REPLY", None),
        # A tool call beside the token is work, not silence.
        (
            "assistant",
            [{"type": "toolCall", "id": "c", "name": "exec"}, {"type": "text", "text": "NO_REPLY"}],
            None,
        ),
        ("system", "compaction summary", None),
        ("toolResult", "REPLY_SKIP", None),
    ],
)
def test_conversation_is_not_internal(role, content, provenance):
    assert internal_rows.classify(role, content, provenance) is None


@pytest.mark.parametrize(
    ("role", "content", "provenance"),
    [
        ("user", completion(("c1", {"status": "ok"})), COMPLETION),
        ("user", prompts.ANNOUNCE_STEP_MESSAGE, None),
        ("assistant", "REPLY_SKIP", None),
    ],
)
def test_every_row_sessions_history_hides_is_internal(role, content, provenance):
    assert history_read.hidden(role, content, provenance)
    assert internal_rows.classify(role, content, provenance) is not None
