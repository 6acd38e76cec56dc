"""Personas for the transcript browser: a viewer, an operator, a superuser, a logged-in user in
no group (an outsider), and anonymous; plus `world`, sessions whose transcripts hold every kind
of item the transcript view renders."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client

from sessions_app.models import Run
from tests.conftest import add_messages, assistant, make_session, tool_result, user

# A 1×1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5d9a0a30000000049454e44ae426082"
    )
).decode()


PASSWORD = "correct horse battery"


def make_user(
    username: str, *, group: str | None = None, superuser: bool = False, password: str | None = None
) -> User:
    """Without a password the account can only be used through force_login (hashing is slow)."""
    person = User.objects.create_user(username, password=password, is_superuser=superuser)
    if group:
        person.groups.add(Group.objects.get(name=group))
    return person


def client_for(person: User | None) -> Client:
    client = Client()
    if person is not None:
        client.force_login(person)
    return client


@pytest.fixture
def viewer(db) -> Client:
    return client_for(make_user("vera", group="Viewers"))


@pytest.fixture
def operator_user(db) -> Client:
    return client_for(make_user("otto", group="Operators"))


@pytest.fixture
def superuser(db) -> Client:
    return client_for(make_user("root", superuser=True))


@pytest.fixture
def outsider_user(db) -> Client:
    """Logged in, in no group: may not browse."""
    return client_for(make_user("nobody"))


@pytest.fixture
def anon(db) -> Client:
    return Client()


def tool_call(call_id: str, name: str, arguments: dict, *, thinking: str | None = None) -> dict:
    blocks = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"})
    blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    return {"role": "assistant", "content": blocks}


@pytest.fixture
def world(agents):
    # Particular (and shared by tests/ui): the transcripts, runs and archive the pages show.
    """main (with a spawned child and a grandchild), a discord group, a cron job with a failed
    run, and an archived signal group."""
    main = make_session(
        "main", displayName="Alice (webchat)", lastChannel="webchat", inputTokens=1200,
        outputTokens=300, contextTokens=128000,
    )  # fmt: skip
    add_messages(
        main,
        user("What's on my calendar?"),
        tool_call("call_1", "calendar_list", {"day": "today", "tz": "UTC"}, thinking="Look it up."),
        tool_result(
            '[{"time": "10:00", "title": "Standup"}]', call_id="call_1", name="calendar_list"
        ),
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is the whiteboard"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ],
        },
        assistant("Standup at 10:00."),
    )
    child = make_session(
        "agent:main:subagent:child-1", spawnedBy="agent:main:main", spawnDepth=1, label="inbox"
    )
    add_messages(
        child,
        user(
            "Summarise the inbox",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:main:main",
                "sourceTool": "sessions_spawn",
            },
        ),
        assistant("4 unread."),
    )
    make_session("agent:main:subagent:grandchild-1", spawnedBy="agent:main:subagent:child-1")
    add_messages(
        main,
        user(
            "Status: success\nResult: 4 unread, one invoice.\nNotes: nothing urgent.\n"
            "Stats: runtime 8ms • tokens 100 (in 56 / out 44) • sessionKey "
            "agent:main:subagent:child-1 • sessionId abc",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:main:subagent:child-1",
                "sourceTool": "sessions_spawn",
                "sourceRole": "subagent",
            },
        ),
    )
    dev = make_session(
        "discord:group:dev", channel="discord", chatType="group", displayName="discord:#dev"
    )
    add_messages(dev, user("did the nightly build pass?"), assistant("Yes: nightly #812 passed."))
    cron = make_session("cron:daily", label="daily-briefing", displayName="Daily briefing")
    add_messages(cron, user("[cron] Prepare the briefing."))
    run = Run.objects.create(session=cron, kind="ingest", message="x")
    Run.claim(run.pk, worker="test")
    run.mark_finished(Run.ERROR, error="backend exploded")
    old = make_session("signal:group:old", channel="signal", chatType="group")
    old.archive()
    return {"main": main, "child": child, "dev": dev, "cron": cron, "old": old}


@pytest.fixture
def fresh_cache():
    """The activity charts are cached: each activity test starts and ends without them."""
    cache.clear()
    yield
    cache.clear()
