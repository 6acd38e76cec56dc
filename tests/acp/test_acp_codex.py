"""A real third-party harness end to end: Zed's codex-acp (installed from npm by the test setup,
tests/acp/codex_acp.py) on a scripted OpenAI Responses server (tests/fake_responses.py), spawned
through sessions_spawn on a real server and worker. Codex says something, reads a file in its
confined cwd, asks permission for a patch that writes one (answered by permissionMode), streams
its final answer, and the parent hears it. With `sessionTools` on, the scripted model calls the
session tools through the MCP server Codex was handed (issue 27 item 4). Skipped, with the
reason, only when npm cannot reach the registry (a failure under OPENCLAW_REQUIRE_CODEX_ACP=1)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from sessions_app.models import ApiKey, Completion, Message, Run, Session
from tests.acp.codex_acp import harness, install
from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, CLOSED, register
from tests.acp.test_acp_live import history, text
from tests.conftest import add_messages, assistant, make_agent, make_session
from tests.fake_responses import FakeResponses
from tests.live.test_across_processes import SSE
from tests.servers import start_server, start_worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Read notes.txt, then write the answer it gives to answer.txt."
NOTES = "The answer is 42.\n"
FIRST = "Let me read the notes first."
REPLY = "I read notes.txt: the answer is 42, and I wrote it to answer.txt."
PATCH = "*** Begin Patch\n*** Add File: answer.txt\n+42\n*** End Patch\n"


@pytest.fixture(scope="module")
def codex():
    """The binary, and the deployment's lists that let it run with CODEX_HOME passed on."""
    binary = install()
    commands = [*ACP_COMMANDS, (str(binary),)]
    names = [*ACP_ENV, "CODEX_HOME"]
    return {
        "binary": binary,
        "commands": commands,
        "names": names,
        "env": {
            "OPENCLAW_ACP_COMMANDS": ";".join(shlex.join(c) for c in commands),
            "OPENCLAW_ACP_ENV": ",".join(names),
        },
    }


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, codex):
    """Started once for the module (as test_acp_live's), with the lists that let codex run."""
    with django_db_blocker.unblock():
        server = start_server(env=codex["env"])
    yield server
    server.stop()


@pytest.fixture
def fake():
    server = FakeResponses(model="gpt-5.4").start()
    yield server
    server.stop()


@pytest.fixture
def main_agent() -> dict:
    """main answers its child's completion (tests/worlds.py two_agents)."""
    return {
        "backend": {
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["completion"], "reply": "noted"}],
        }
    }


@pytest.fixture
def shared_tmp():
    """Where the harness works and keeps its state. Run as root, the worker starts Codex as a
    user of its own (sessions_app/acp/sandbox.py, the deployment's default), who must be able to
    walk to its cwd by its absolute path (pytest's tmp dirs are 0700) and write in CODEX_HOME
    (its uid is handed out when it starts: the directory is open to all, as /tmp is)."""
    base = Path(tempfile.mkdtemp(prefix="acp-codex-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def world(server, codex, fake, settings, shared_tmp, two_agents, main_token):
    # Particular: the deployment's lists let codex-acp run (here, the server and the worker),
    # and the worker's environment has the CODEX_HOME the harness's `env` passes on.
    settings.OPENCLAW_ACP_COMMANDS = codex["commands"]
    settings.OPENCLAW_ACP_ENV = codex["names"]
    tmp_path = shared_tmp
    root = tmp_path / "workspaces"
    project = root / "project"
    project.mkdir(parents=True)
    (project / "notes.txt").write_text(NOTES)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    codex_home.chmod(0o1777)
    # The worker hands harnesses with sessionTools this server's /mcp/ (OPENCLAW_MCP_URL).
    worker = start_worker(
        workers=2,
        env={
            **codex["env"],
            "CODEX_HOME": str(codex_home),
            "OPENCLAW_MCP_URL": f"{server.url}/mcp/",
        },
    )
    yield {
        "server": server,
        "agent": main_token,
        "root": root,
        "project": project,
        "codex_home": codex_home,
        "binary": codex["binary"],
    }
    worker.stop()


def script(fake: FakeResponses) -> None:
    """What the model says: a sentence and a read, then a patch, then the answer in six deltas."""
    fake.function_call("exec_command", {"cmd": "cat notes.txt"}, text=FIRST)
    fake.function_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF\n"})
    fake.reply(REPLY, chunks=6)


def spawn(w, **args) -> dict:
    response = w["server"].request(
        "POST",
        "/tools/invoke",
        body={
            "tool": "sessions_spawn",
            "args": {"task": TASK, "runtime": "acp", "agentId": "codex", "cwd": "project", **args},
        },
        token=w["agent"],
    )
    assert response.status == 200, response.body
    details = response.json()["result"]["details"]
    assert details["status"] == "accepted", details
    return details


def finished(run_id) -> bool:
    return Run.objects.get(pk=run_id).status not in (Run.QUEUED, Run.RUNNING)


def call_name(message: dict) -> str:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return next((b["name"] for b in blocks if b.get("type") == "toolCall"), "")


def follow(w, key: str) -> tuple[list[dict], list[dict]]:
    """The child's messages and deltas, as a follower sees them, until its final answer."""
    stream = SSE(w["server"], w["agent"], f"/api/v1/sessions/{key}/history/?follow=1")
    stream.conn.sock.settimeout(120)  # the harness starts on a loaded machine
    messages: list[dict] = []
    deltas: list[dict] = []
    try:
        while not any(m["role"] == "assistant" and text(m) == REPLY for m in messages):
            frame = stream.frame()
            if frame.get("event") == "history":
                messages += frame["data"]["messages"]
            elif frame.get("event") == "message":
                messages.append(frame["data"]["message"])
            elif frame.get("event") == "delta":
                deltas.append(frame["data"])
    finally:
        stream.close()
    return messages, deltas


def test_a_codex_child_reads_and_writes_in_its_cwd_asks_and_the_parent_hears(world, fake):
    register(codex=harness(world["binary"], fake.base_url, world["root"]), default="codex")
    script(fake)
    accepted = spawn(world, streamTo="parent", label="codex")
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    seen, deltas = follow(world, key)
    wait_until(lambda: finished(run_id), timeout=60)
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.OK, run.error
    assert run.reply == REPLY

    project = world["project"]
    # The file it read and the file it wrote are in its cwd, and only there.
    assert (project / "answer.txt").read_text() == "42\n"
    assert sorted(p.name for p in world["root"].iterdir()) == ["project"]
    assert sorted(p.name for p in project.iterdir()) == ["answer.txt", "notes.txt"]
    outputs = [
        item["output"]
        for request in fake.posts()
        for item in request.body["input"]
        if item.get("type") == "function_call_output"
    ]
    assert NOTES in outputs[0]  # what the model was given back: the file's text
    assert fake.pending == 0 and len(fake.posts()) == 3  # and nothing else was asked
    # sessionTools is off (the default): Codex was handed no MCP server, so it offers the model
    # no MCP tools (they come as a namespace `mcp__<server>`), and no key was made.
    offered = fake.posts()[0].body["tools"]
    assert not [t for t in offered if str(t.get("name", "")).startswith("mcp__")]
    assert not ApiKey.objects.filter(acp_run_id=run_id).exists()
    # Codex kept its state where CODEX_HOME (passed by the harness's env list) says.
    assert (world["codex_home"] / "sessions").is_dir()
    # As root, the worker ran it as the user of its cwd (sandbox.py), who wrote answer.txt.
    start = Message.objects.get(session__key=key, extra__acp__event="started").extra["acp"]
    if os.geteuid() == 0 and CLOSED is None:  # (harness_fixtures.CLOSED)
        assert start["uid"] == project.stat().st_uid != 0
        assert (project / "answer.txt").stat().st_uid == start["uid"]

    messages = history(world, key)
    summary = [
        (m["role"], call_name(m) or text(m))
        for m in messages
        if m["role"] != "system" or text(m).startswith("Permission")
    ]
    assert summary == [
        ("user", TASK),
        ("assistant", FIRST),
        ("assistant", "read"),  # `cat notes.txt`: a command Codex trusts, no permission asked
        ("toolResult", NOTES),
        ("assistant", "edit"),  # the patch: asked, and allowed by permissionMode allow-all
        ("system", f"Permission allowed by permissionMode allow-all: Edit {project}/answer.txt"),
        ("toolResult", f"diff {project}/answer.txt"),  # its content: the patch's diff
        ("assistant", REPLY),  # six deltas, one message
    ]
    permission = next(m for m in messages if m.get("acp", {}).get("event") == "permission")
    assert permission["acp"]["optionId"] == "approved"
    assert permission["acp"]["toolCall"]["kind"] == "edit"
    # The follower saw every stored message, in order, and (with Redis carrying the worker's
    # deltas to this server) the answer as it streamed.
    assert [text(m) for m in seen if m["role"] == "assistant" and text(m)] == [FIRST, REPLY]
    if django_settings.REDIS_URL:  # without it the worker's deltas stay in the worker
        assert deltas
        draft = ""
        for delta in deltas:
            draft = draft[: delta["offset"]] + delta["delta"]
        assert draft == REPLY

    # The parent followed it (streamTo) and hears the answer through the completion.
    main = Session.objects.get(key="agent:main:main")
    notes = Message.objects.filter(session=main, extra__acpProgress__childSessionKey=key)
    assert f"[{key}] {REPLY}" in [text({"content": n.content}) for n in notes]
    wait_until(
        lambda: Completion.objects.filter(child_run_id=run_id, status="delivered").exists(),
        timeout=60,
    )
    turn = Run.objects.get(session=main, kind="completion")
    assert (
        REPLY in turn.message
        or Message.objects.filter(
            session=main, seq=turn.input_seq, content__icontains=REPLY
        ).exists()
    )


def test_a_patch_denied_by_permission_mode_writes_nothing_and_the_parent_hears_why(world, fake):
    register(
        codex=harness(world["binary"], fake.base_url, world["root"], mode="deny"),
        default="codex",
    )
    script(fake)
    accepted = spawn(world)
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    wait_until(lambda: finished(run_id), timeout=120)
    run = Run.objects.get(pk=run_id)
    # Codex's answer to a rejected patch is to end its turn (stopReason cancelled).
    assert run.status == Run.ERROR
    assert run.error == (
        'ACP harness "codex" cancelled the turn after a permission request was denied'
    )
    assert not (world["project"] / "answer.txt").exists()
    assert fake.pending == 1  # the final answer was never asked for
    messages = history(world, key)
    assert f"Permission denied by permissionMode deny: Edit {world['project']}/answer.txt" in [
        text(m) for m in messages if m["role"] == "system"
    ]
    calls = [m["content"][0] for m in messages if m["role"] == "assistant" and not text(m)]
    results = [m for m in messages if m["role"] == "toolResult"]
    assert [c["id"] for c in calls] == [r["toolCallId"] for r in results]  # every call paired
    assert results[-1]["isError"]
    main = Session.objects.get(key="agent:main:main")
    wait_until(
        lambda: Message.objects.filter(
            session=main, content__icontains="after a permission request was denied"
        ).exists(),
        timeout=60,
    )


SIBLING_FINDING = "The flaky test is test_parser: it reads the clock."
TO_PARENT = "Codex here: my sibling found the flaky test (test_parser); I am fixing it."
TOOLS_REPLY = "My sibling found test_parser reads the clock; I told the parent."


def test_a_codex_child_calls_the_session_tools_through_mcp_with_a_key_of_its_turn(world, fake):
    """sessionTools on: Codex gets /mcp/ with a key pinned to the child; the scripted model reads
    a sibling's transcript (sessions_history) and messages the parent (sessions_send) through
    the MCP tools Codex offers it; both land, and the key is revoked when the turn ends."""
    definition = harness(world["binary"], fake.base_url, world["root"])
    register(codex={**definition, "sessionTools": True}, default="codex")
    make_agent("codex")
    sibling = make_session(f"agent:codex:acp:{uuid.uuid4()}", spawnedBy="agent:main:main")
    add_messages(sibling, assistant(SIBLING_FINDING))
    read = fake.function_call(
        "sessions_history",
        {"sessionKey": sibling.key, "limit": 5},
        text="Let me see what my sibling found.",
        namespace="mcp__openclaw",
    )
    send = fake.function_call(
        "sessions_send",
        {"sessionKey": "agent:main:main", "message": TO_PARENT, "timeoutSeconds": 0},
        namespace="mcp__openclaw",
    )
    fake.reply(TOOLS_REPLY, chunks=2)
    accepted = spawn(world, label="codex-tools")
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    wait_until(lambda: finished(run_id), timeout=120)
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.OK, run.error
    assert run.reply == TOOLS_REPLY

    # What the model was given back: the sibling's transcript, then the send's acceptance.
    outputs = {
        item["call_id"]: str(item["output"])
        for request in fake.posts()
        for item in request.body["input"]
        if item.get("type") == "function_call_output"
    }
    assert SIBLING_FINDING in outputs[read], outputs
    assert '"status":"accepted"' in outputs[send].replace(" ", ""), outputs
    # The parent got the message, from the child.
    assert Message.objects.filter(
        session__key="agent:main:main", content__icontains=TO_PARENT
    ).exists()
    # The child's transcript has both calls, paired with their results.
    messages = history(world, key)
    allowed = "Permission allowed by permissionMode allow-all: Approve MCP tool call"
    calls = [
        (m["role"], m["content"][0]["title"] if call_name(m) else text(m))
        for m in messages
        if call_name(m) or text(m).startswith("Permission")
    ]
    # Codex asks permission for each MCP tool call (kind other): allow-all lets them run.
    assert calls == [
        ("assistant", "Tool: openclaw/sessions_history"),
        ("system", allowed),
        ("assistant", "Tool: openclaw/sessions_send"),
        ("system", allowed),
    ], calls
    results = [m for m in messages if m["role"] == "toolResult"]
    assert [r["toolCallId"] for r in results] == [
        m["content"][0]["id"] for m in messages if call_name(m)
    ]
    assert SIBLING_FINDING in json.dumps(results[0]["content"])
    assert not results[0].get("isError") and not results[1].get("isError")
    # The key: pinned to the child, of the harness's agent, named in the start message (its id,
    # never its plaintext), and revoked now that the turn is over.
    api_key = ApiKey.objects.get(acp_run_id=run_id)
    assert (api_key.scope, api_key.agent_id, api_key.session_key) == ("agent", "codex", key)
    assert api_key.revoked_at is not None
    start = Message.objects.get(session__key=key, extra__acp__event="started")
    assert start.extra["acp"]["sessionTools"]["keyId"] == api_key.pk
    assert f"API key id {api_key.pk}, revoked when the turn ends" in text(
        {"content": start.content}
    )
    stored = json.dumps([m.content for m in Message.objects.all()]) + json.dumps(
        [m.extra for m in Message.objects.all()]
    )
    assert "ocs_" not in stored
