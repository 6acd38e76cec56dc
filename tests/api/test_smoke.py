from tests.conftest import add_messages, make_session, user


def test_agent_key_lists_its_main_session(agent_main):
    session = make_session("main")
    add_messages(session, user("hello"))
    details = agent_main.details("sessions_list")
    assert [row["key"] for row in details["sessions"]] == ["agent:main:main"]
