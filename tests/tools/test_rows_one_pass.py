"""The rows read in one pass (issue 26 item 2) return what the plain path returns.

settings.OPENCLAW_FAST_ROWS switches between the two: on, a page's JSON cells are decoded in one
call (PostgreSQL) and the list's message ranges are read by plain SQL; off, the plain path, cell
by cell and through the ORM. On one varied store, every list and history call below answers the
same value, and `/tools/invoke` the same bytes, either way, on whichever backend the suite runs.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from sessions_app.manage import session_admin
from sessions_app.models import Session, now_ms
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user

WIDE = "寿司🍣 ünïcödé \u202e text"
# Past 64 bits: orjson reads it as a float, json.loads exactly (jsontext.loads keeps it exact).
HUGE = 123456789012345678901234567890


@pytest.fixture
def varied_store(agents):
    set_config(visibility="all", a2a_enabled=True)
    now = now_ms()
    parent = make_session(
        "agent:main:discord:group:dev",
        updatedAt=now - 1_000,
        label="dev",
        displayName="discord:#dev " + WIDE,
        model="gpt-x",
        contextTokens=128000,
        inputTokens=10,
        outputTokens=5,
        thinkingLevel="low",
        systemSent=True,
        abortedLastRun=False,
        sendPolicy="deny",
        deliveryContext={
            "channel": "discord",
            "to": "channel:1234567890123456789",
            "threadId": 42.0,
        },
    )
    add_messages(
        parent,
        user("question " + WIDE),
        assistant(
            "let me look",
            content=[
                {"type": "thinking", "thinking": "hmm " + WIDE, "thinkingSignature": "sig"},
                {"type": "text", "text": "let me look"},
                {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"n": HUGE}},
            ],
            usage={"input": 3, "output": 4},
        ),
        tool_result("exit 0 " + WIDE),
        assistant("my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123"),
        assistant("REPLY_SKIP"),
        user(
            "ping",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:research:main",
                "sourceChannel": "webchat",
                "sourceTool": "sessions_send",
            },
        ),
        assistant("x" * 5000),
        assistant(
            "a picture",
            content=[{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}],
        ),
        assistant("the number " + str(HUGE), details={"big": HUGE}),
    )
    for i in range(3):
        child = make_session(
            f"agent:main:subagent:c{i}",
            spawnedBy=parent.key,
            spawnDepth=1,
            updatedAt=now - 2_000 - i,
            label=f"child {i}",
        )
        add_messages(child, user(f"task {i}"), assistant(f"done {i} {WIDE}"))
    archived = make_session("agent:main:cron:old", updatedAt=now - 3_000, label="old")
    add_messages(archived, user("old run"), assistant("old answer"))
    Session.objects.filter(pk=archived.pk).update(archived_at=timezone.now())
    pinned = make_session(
        "agent:research:telegram:dm:ann",
        updatedAt=now - 4_000,
        lastChannel="telegram",
        lastTo="ann",
        lastAccountId="bot",
        deliveryContext={"channel": "discord", "to": "elsewhere"},
    )
    Session.objects.filter(pk=pinned.pk).update(pinned_at=timezone.now(), category="ops")
    session_admin.set_owner(pinned, {"type": "human", "id": "ann", "label": WIDE})
    add_messages(pinned, user(WIDE), assistant("NO_REPLY"), assistant(""))
    for i in range(25):  # more rows than the enrichment reads, some with nothing in them
        session = make_session(f"agent:main:cron:job-{i}", updatedAt=now - 10_000 - i)
        if i % 3:
            add_messages(session, user(f"job {i}"), tool_result("ok"), assistant(f"job {i} ok"))
    return parent


LIST_ARGS = [
    {"limit": 200},
    {"limit": 200, "messageLimit": 5},
    {"limit": 20, "messageLimit": 20, "archived": "all"},
    {"limit": 200, "includeDerivedTitles": True, "includeLastMessage": True},
    {"limit": 200, "archived": "all", "messageLimit": 1, "includeLastMessage": True},
    {"limit": 3, "offset": 2, "search": "dev"},
]
HISTORY_ARGS = [
    {"limit": 200},
    {"limit": 200, "includeTools": True},
    {"limit": 3, "offset": 2, "includeTools": True},
    {"limit": 5, "messageId": "00000003"},
]


def both_ways(settings, call):
    settings.OPENCLAW_FAST_ROWS = False
    plain = call()
    settings.OPENCLAW_FAST_ROWS = True
    fast = call()
    return plain, fast


@pytest.mark.parametrize("args", LIST_ARGS)
def test_sessions_list_is_the_same_either_way(varied_store, operator, settings, args):
    plain, fast = both_ways(settings, lambda: operator.invoke("sessions_list", args).content)
    assert fast == plain
    assert b'"count":0' not in fast


@pytest.mark.parametrize("args", HISTORY_ARGS)
def test_sessions_history_is_the_same_either_way(varied_store, operator, settings, args):
    args = {"sessionKey": varied_store.key, **args}
    plain, fast = both_ways(settings, lambda: operator.invoke("sessions_history", args).content)
    assert fast == plain
    assert b'"messages":[]' not in fast


def test_the_store_has_what_the_comparison_needs(varied_store, operator):
    """The comparison above is only worth something if the rows hold each case."""
    listed = operator.details(
        "sessions_list",
        {"limit": 200, "messageLimit": 20, "archived": "all", "includeLastMessage": True},
    )
    rows = {row["key"]: row for row in listed["sessions"]}
    parent = rows[varied_store.key]
    assert len(parent["childSessions"]) == 3 and parent["deliveryContext"]["threadId"] == 42
    assert rows["agent:main:cron:old"]["archived"] is True
    pinned = rows["agent:research:telegram:dm:ann"]
    assert pinned["pinned"] is True and pinned["owner"]["actor"]["label"] == WIDE
    texts = str(parent["messages"])
    assert "sk-proj-abcdefghij" not in texts and "thinkingSignature" not in texts
    assert f"'n': {HUGE}" in texts and "寿司🍣" in texts
    history = operator.details("sessions_history", {"sessionKey": varied_store.key})
    assert history["contentTruncated"] is True and history["contentRedacted"] is True
    assert any(m.get("senderLabel") for m in history["messages"])
