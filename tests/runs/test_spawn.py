"""sessions_spawn (reference §5, seeds): validation, allowlist, depth and children limits, the
announce step and the Status/Result/Notes/Stats report, cleanup, attachments, auto-archive."""

import base64
import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Message, Run, Session
from sessions_app.runs.sweeper import archive_finished_subagents
from tests.conftest import make_agent, set_config
from tests.runs.helpers import drain

# `home` (main may spawn the scripted research agent) is in tests/conftest.py.


def spawn(api, **args):
    return api.details("sessions_spawn", {"task": "Find papers on SQLite WAL", **args})


def report_of(requester):
    return (
        Message.objects.filter(session=requester, provenance__sourceTool="sessions_spawn")
        .order_by("-seq")
        .first()
    )


def test_spawn_is_accepted_at_once_with_a_subagent_key(agent_main, home):
    details = spawn(agent_main, agentId="research", label="papers")
    assert details["status"] == "accepted" and details["mode"] == "run"
    assert details["note"].startswith("auto-announces on completion")
    assert details["childSessionKey"].startswith("agent:research:subagent:")
    child = Session.objects.get(key=details["childSessionKey"])
    assert (
        child.spawned_by == "agent:main:main" and child.spawn_depth == 1 and child.label == "papers"
    )
    assert Run.objects.get(pk=details["runId"]).status == "queued"


def test_the_requester_gets_a_status_result_notes_stats_report(agent_main, home):
    details = spawn(agent_main, agentId="research")
    drain()
    report = report_of(home)
    lines = report.content.splitlines()
    assert lines[0] == "Status: success"
    assert lines[1] == "Result: Found 3 papers."
    assert lines[2] == "Notes: All done, nothing urgent."
    assert lines[3].startswith("Stats: runtime ") and " • tokens " in lines[3]
    assert f"sessionKey {details['childSessionKey']}" in lines[3] and "sessionId " in lines[3]
    assert "transcript /api/v1/transcripts/" in lines[3] and lines[3].endswith(".jsonl")
    assert (
        report.provenance["kind"] == "inter_session"
        and report.provenance["sourceRole"] == "subagent"
    )
    delivery = home.deliveries.get(kind="subagent_announce")
    assert delivery.channel == "webchat"


def test_announce_skip_stays_silent(agent_main, home):
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["announce"], "reply": " ANNOUNCE_SKIP "}],
        },
    )
    spawn(agent_main, agentId="research", task="anything")
    drain()
    # No report (the seeds' announce step); the requester's own completion turn is separate.
    assert report_of(home) is None
    assert not home.deliveries.filter(kind="subagent_announce").exists()


def test_status_comes_from_the_run_outcome_not_the_model(agent_main, home):
    spawn(agent_main, agentId="research", task="fail now")
    drain()
    assert report_of(home).content.splitlines()[0] == "Status: failed: the model refused"


def test_result_falls_back_to_the_latest_tool_result(agent_main, home):
    spawn(agent_main, agentId="research", task="tools only")
    drain()
    result = report_of(home).content.splitlines()[1]
    assert result.startswith("Result: {") and '"requester": "research"' in result


def test_run_timeout_is_recorded_as_timeout(agent_main, home):
    details = spawn(agent_main, agentId="research", task="slow", runTimeoutSeconds=1)
    drain()
    run = Run.objects.get(pk=details["runId"])
    assert run.status == "timeout" and "runTimeoutSeconds" in run.error
    assert report_of(home).content.splitlines()[0] == "Status: timed out"


def test_agent_not_in_the_allow_list_is_forbidden(agent_main, home):
    details = spawn(agent_main, agentId="other")
    assert details == {
        "status": "forbidden",
        "error": "agentId is not allowed for sessions_spawn (allowed: research)",
    }
    assert not Session.objects.filter(key__contains=":subagent:").exists()


def test_without_an_allow_list_the_error_says_none(outsider, agents):
    details = outsider.details("sessions_spawn", {"task": "x", "agentId": "main"})
    assert details["error"] == "agentId is not allowed for sessions_spawn (allowed: none)"


def test_star_allows_any_agent(agent_main, home):
    make_agent("main", subagents={"allowAgents": ["*"]})
    assert spawn(agent_main, agentId="other")["status"] == "accepted"


def test_sub_agents_cannot_spawn(agent_main, home):
    child = spawn(agent_main, agentId="research")["childSessionKey"]
    from django.test import Client

    from sessions_app.models import ApiKey
    from tests.conftest import Api

    _, token = ApiKey.generate(scope="agent", agent_id="research")
    details = Api(Client(), token).details("sessions_spawn", {"task": "nested"}, sessionKey=child)
    assert details == {
        "status": "forbidden",
        "error": "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)",
    }


def test_max_children_per_session(agent_main, home):
    set_config(max_children_per_agent=2)
    spawn(agent_main)
    spawn(agent_main)
    assert spawn(agent_main) == {
        "status": "forbidden",
        "error": "sessions_spawn has reached max active children for this session (2/2)",
    }


def test_an_invalid_model_is_an_error_and_starts_nothing(agent_main, home):
    details = spawn(agent_main, model="not a model!")
    assert details["status"] == "error" and "Invalid model" in details["error"]
    assert not Run.objects.exists()
    make_agent("main", subagents={"allowAgents": ["research"]}, model="openai/gpt-5-mini")
    assert spawn(agent_main, model="openai/gpt-5-mini")["modelApplied"] == "openai/gpt-5-mini"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"mode": "session"},
            'mode="session" requires thread=true so the subagent can stay bound to a thread.',
        ),
        (
            {"thread": True},
            "thread=true is unavailable because no channel plugin registered subagent_spawning hooks.",
        ),
        (
            {"thinking": "loud"},
            'Invalid thinking level "loud". Use one of: off, minimal, low, medium, high, xhigh.',
        ),
    ],
)
def test_parameter_errors_have_openclaws_texts(agent_main, home, args, error):
    assert spawn(agent_main, **args) == {"status": "error", "error": error}


def test_channel_delivery_keys_are_refused(agent_main, home):
    response = agent_main.invoke("sessions_spawn", {"task": "x", "channel": "discord"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        'sessions_spawn does not support "channel". Use "message" or "sessions_send" for channel delivery.'
    )


def test_cleanup_delete_removes_the_child_transcript(agent_main, home):
    details = spawn(agent_main, agentId="research", cleanup="delete")
    drain()
    child = Session.objects.get(key=details["childSessionKey"])
    assert child.archived and not Message.objects.filter(session=child).exists()
    assert report_of(home) is not None  # the report was posted before the cleanup


def test_sandbox_require_needs_a_sandboxed_agent(agent_main, home):
    assert spawn(agent_main, agentId="research", sandbox="require")["status"] == "error"
    make_agent("research", sandboxed=True)
    assert spawn(agent_main, agentId="research", sandbox="require")["status"] == "accepted"


def test_attachments_are_written_with_sha256_receipts(agent_main, home, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    set_config(attachments_enabled=True)
    data = b"hello attachments"
    details = spawn(
        agent_main,
        attachments=[
            {"name": "a.txt", "content": "plain text"},
            {"name": "b.bin", "content": base64.b64encode(data).decode(), "encoding": "base64"},
        ],
    )
    receipt = details["attachments"]
    assert receipt["count"] == 2 and receipt["relDir"].startswith(".openclaw/attachments/")
    assert receipt["files"][1] == {
        "name": "b.bin",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    run = Run.objects.get(pk=details["runId"])
    assert "Attachments: 2 file(s)" in run.extra_system_prompt


def test_attachments_disabled_is_forbidden(agent_main, home):
    details = spawn(agent_main, attachments=[{"name": "a.txt", "content": "x"}])
    assert details == {
        "status": "forbidden",
        "error": "attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)",
    }


def test_finished_sub_agents_are_archived_after_the_configured_minutes(agent_main, home):
    set_config(subagent_archive_after_minutes=60)
    details = spawn(agent_main, agentId="research")
    drain()
    assert archive_finished_subagents() == 0
    later = timezone.now() + timedelta(minutes=61)
    assert archive_finished_subagents(now=later) == 1
    assert Session.objects.get(key=details["childSessionKey"]).archived


def test_the_sweep_schedule_exists_after_migrate(db):
    from django_q.models import Schedule

    schedule = Schedule.objects.get(name="openclaw-sweep")
    assert schedule.func == "sessions_app.runs.tasks.sweep" and schedule.minutes == 1
