"""transcript.context_messages: what an agent's turn is given, read the fast way on PostgreSQL,
equals the stored messages as OpenClaw writes them."""

from sessions_app import transcript
from sessions_app.models import Message
from tests.conftest import add_messages, assistant, make_session, tool_result, user


def test_context_messages_are_the_stored_messages_oldest_first(agents):
    session = make_session("main")
    add_messages(
        session,
        user("one", provenance={"kind": "inter_session", "sourceSessionKey": "agent:x:main"}),
        assistant("two", usage={"input": 3, "output": 4}, model="m", stopReason="stop"),
        tool_result("three"),
        user("four"),
        user("five"),
    )
    stored = [m.to_transcript() for m in Message.objects.filter(session=session).order_by("seq")]
    assert transcript.context_messages(session.pk, up_to=None, limit=50) == stored
    assert transcript.context_messages(session.pk, up_to=4, limit=2) == stored[2:4]
    assert transcript.context_messages(session.pk, up_to=None, limit=1) == stored[-1:]
    assert transcript.context_messages(make_session("cron:empty").pk, up_to=None, limit=5) == []
