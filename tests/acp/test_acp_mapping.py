"""ACP updates → transcript messages, and permission answers (pure: no process, no database)."""

from __future__ import annotations

import pytest

from sessions_app.acp.client import decide_permission
from sessions_app.acp.transcript import Mapper

OPTIONS = [
    {"optionId": "a1", "kind": "allow_once"},
    {"optionId": "a2", "kind": "allow_always"},
    {"optionId": "r1", "kind": "reject_once"},
]


def chunk(text: str) -> tuple[str, dict]:
    return (
        "update",
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
    )


def call(call_id: str, **fields) -> tuple[str, dict]:
    return ("update", {"sessionUpdate": "tool_call", "toolCallId": call_id, **fields})


def done(call_id: str, status: str = "completed", text: str = "ok") -> tuple[str, dict]:
    content = [{"type": "content", "content": {"type": "text", "text": text}}]
    return (
        "update",
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": status,
            "content": content,
        },
    )


@pytest.mark.parametrize(
    "mode, kind, expected",
    [
        ("deny", "read", "r1"),
        ("deny", "execute", "r1"),
        ("read-only", "read", "a1"),
        ("read-only", "search", "a1"),
        ("read-only", "edit", "r1"),
        ("read-only", None, "r1"),
        ("allow-all", "execute", "a1"),
    ],
)
def test_permission_answers_by_mode(mode, kind, expected):
    assert decide_permission(mode, kind, OPTIONS) == expected


def test_no_matching_option_cancels_the_request():
    assert decide_permission("deny", "read", [{"optionId": "a", "kind": "allow_once"}]) is None
    assert (
        decide_permission("allow-all", "read", [{"optionId": "r", "kind": "reject_once"}]) is None
    )


def thought(text: str) -> tuple[str, dict]:
    return (
        "update",
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}},
    )


def test_a_text_segment_is_one_message_however_many_batches_it_came_in():
    mapper = Mapper("echo")
    assert mapper.messages([chunk("Say ")]) == []  # still streaming: not a row yet
    assert mapper.messages([chunk("this "), chunk("back ")]) == []
    assert mapper.segment is not None and mapper.segment.text == "Say this back "
    out = mapper.messages([chunk("to me"), call("c1", kind="read"), chunk("c")])
    # The call closes the segment, stored before the call; "c" opens the next one.
    assert [m["role"] for m in out] == ["assistant", "assistant"]
    assert out[0]["content"] == [{"type": "text", "text": "Say this back to me"}]
    assert out[0]["stopReason"] == "stop"
    assert out[1]["content"][0]["type"] == "toolCall"
    assert mapper.final_text == "c" and mapper.all_text == "Say this back to mec"
    end = mapper.finish("the turn ended")
    assert [m["content"] for m in end[:1]] == [[{"type": "text", "text": "c"}]]


def test_thoughts_are_one_block_per_segment_and_a_switch_closes_the_other():
    mapper = Mapper("echo")
    out = mapper.messages([thought("hm"), thought("m"), chunk("a")])
    assert out == [
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hmm"}],
            "stopReason": "stop",
        }
    ]
    out = mapper.messages([chunk("b"), thought("again")])
    assert out[0]["content"] == [{"type": "text", "text": "ab"}]


def test_a_permission_or_a_result_closes_the_segment_so_the_order_reads_right():
    mapper = Mapper("echo")
    mapper.messages([call("c1", kind="read")])
    out = mapper.messages([chunk("reading"), ("permission", {"mode": "deny", "toolCall": {}})])
    assert [m["role"] for m in out] == ["assistant", "system"]
    out = mapper.messages([chunk("still"), done("c1")])
    assert [m["role"] for m in out] == ["assistant", "toolResult"]


def test_a_segment_cut_by_the_end_of_the_turn_is_marked():
    mapper = Mapper("echo")
    mapper.messages([call("c1", kind="execute"), chunk("partial")])
    out = mapper.finish("the harness failed", stop_reason="error", error="it crashed")
    assert out[0] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "partial"}],
        "stopReason": "error",
        "errorMessage": "it crashed",
    }
    assert out[1]["toolCallId"] == "c1" and out[1]["isError"] is True
    assert mapper.segment is None and mapper.finish("again") == []


def test_a_call_and_its_result_are_paired_by_id():
    mapper = Mapper("echo")
    out = mapper.messages(
        [
            call("c1", kind="edit", title="Edit a.py", rawInput={"path": "a.py"}),
            (
                "update",
                {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"},
            ),
            done("c1", "failed", "no such file"),
        ]
    )
    assert len(out) == 2
    block = out[0]["content"][0]
    assert block == {
        "type": "toolCall",
        "id": "c1",
        "name": "edit",
        "arguments": {"path": "a.py"},
        "title": "Edit a.py",
    }
    assert out[1] == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "edit",
        "content": [{"type": "text", "text": "no such file"}],
        "isError": True,
    }
    assert mapper.open_calls == {}


def test_a_result_without_a_start_still_gets_its_call():
    out = Mapper("echo").messages([done("c9")])
    assert [m["role"] for m in out] == ["assistant", "toolResult"]
    assert out[0]["content"][0]["id"] == out[1]["toolCallId"] == "c9"


def test_calls_left_open_are_closed_when_the_turn_ends():
    mapper = Mapper("echo")
    mapper.messages([call("c1", kind="execute"), call("c2", kind="read"), done("c2")])
    closed = mapper.close_open_calls("the run was stopped")
    assert [(m["toolCallId"], m["isError"]) for m in closed] == [("c1", True)]
    assert closed[0]["content"][0]["text"] == "(no result: the run was stopped)"
    assert mapper.close_open_calls("again") == []


def test_a_call_that_starts_completed_is_paired_at_once():
    out = Mapper("echo").messages([call("c1", kind="read", status="completed", rawOutput={"n": 1})])
    assert [m["role"] for m in out] == ["assistant", "toolResult"]
    assert out[1]["content"][0]["text"] == '{"n": 1}'


def test_a_command_result_in_raw_output_reads_as_its_output():
    # Codex (codex-acp 0.16) sends a command's result with no `content`, only `rawOutput`.
    def result(raw) -> str:
        update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}
        out = Mapper("codex").messages([call("c1", kind="read"), ("update", {**update, **raw})])
        return out[-1]["content"][0]["text"]

    raw = {"command": ["/bin/bash", "-lc", "cat a"], "stdout": "hi\n", "exit_code": 0}
    assert result({"rawOutput": {**raw, "formatted_output": "hi\n"}}) == "hi\n"
    assert result({"rawOutput": {**raw, "aggregated_output": "hi and err\n"}}) == "hi and err\n"
    assert result({"rawOutput": raw}) == "hi\n"
    assert result({"rawOutput": {"formatted_output": "", "stdout": ""}}) == "(completed)"
    assert result({"rawOutput": "plain"}) == "plain"


def test_a_refused_file_request_is_a_system_note():
    out = Mapper("x").messages(
        [
            chunk("reading"),
            ("refused", {"method": "fs/read_text_file", "path": "/etc/passwd", "reason": "no"}),
        ]
    )
    assert [m["role"] for m in out] == ["assistant", "system"]
    assert out[1]["content"][0]["text"] == "Refused fs/read_text_file: no"
    assert out[1]["acp"]["event"] == "refused"
