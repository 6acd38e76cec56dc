"""The typed rows list and history pages read (rows.SessionRow, transcript.MessageRow) hold
what the models hold: the same sessions_list row, the same transcript payload."""

from sessions_app import rows, transcript
from sessions_app.models import GatewayConfig, Message, Session
from tests.conftest import add_messages, assistant, make_session, tool_result, user


def test_a_page_row_renders_as_its_session_does(agents):
    parent = make_session(
        "main",
        label="home",
        deliveryContext={"channel": "discord", "to": "channel:1"},
        inputTokens=3,
        systemSent=True,
    )
    make_session("agent:main:subagent:a", spawnedBy="agent:main:main")
    make_session("agent:main:subagent:b", spawnedBy="agent:main:main")
    settings = GatewayConfig.load().key_settings

    page = rows.page_rows(Session.objects.filter(pk=parent.pk).by_activity()[:1])

    [row] = page
    assert isinstance(row, rows.SessionRow)
    assert (row.pk, row.archived) == (parent.pk, False)
    assert list(row.children) == ["agent:main:subagent:b", "agent:main:subagent:a"]
    # The model instance with what the page reads beside it (its stateVersion).
    parent = Session.objects.annotate(state_version=rows._STATE_VERSION).get(pk=parent.pk)
    assert rows.session_row(row, settings=settings, children=row.children) == rows.session_row(
        parent, settings=settings, children=row.children
    )


def test_message_rows_give_the_stored_payloads(agents):
    session = make_session("main")
    add_messages(
        session,
        user("one", provenance={"kind": "inter_session", "sourceSessionKey": "agent:x:main"}),
        assistant("token sk-abcdefghijklmnopqrstuvwxyz123456", usage={"input": 3}),
        tool_result("three"),
        # PostgreSQL reads pages with a plain cursor and decodes jsonb itself: numbers past
        # 64 bits stay exact integers, as the ORM's json.loads keeps them.
        assistant("big", usage={"input": 12345678901234567890123, "cost": 0.5}),
    )
    messages = Message.objects.filter(session=session).order_by("seq")

    found = transcript.message_rows(messages[:4])

    columns = (*Message.TRANSCRIPT_COLUMNS, "redact_needed")
    assert columns == transcript.READ_COLUMNS
    assert [row.payload() for row in found] == [transcript.payload(m) for m in messages]
    assert [row.seq for row in found] == [1, 2, 3, 4]
    assert [row.scan_needed for row in found] == [False, True, False, False]
    assert found[3].usage["input"] == 12345678901234567890123


def test_children_are_found_for_keys_with_array_syntax_in_them(agents):
    """PostgreSQL reads the children by one array of the page's keys: quotes, commas, braces and
    backslashes in a key stay part of the key."""
    odd = 'agent:main:discord:group:a,b"c{d}\\e'
    parent = make_session(odd)
    make_session("agent:main:subagent:odd", spawnedBy=odd)

    [row] = rows.page_rows(Session.objects.filter(pk=parent.pk).by_activity()[:1])

    assert row.key == odd
    assert list(row.children) == ["agent:main:subagent:odd"]
