"""POST /tools/invoke is wire-compatible with OpenClaw (api.md §2)."""

import json

from tests.conftest import add_messages, make_session, user


def test_result_envelope_carries_details_and_pretty_text(agent_main, agents):
    add_messages(make_session("main"), user("hi"))
    body = agent_main.invoke("sessions_list").json()
    assert body["ok"] is True
    details = body["result"]["details"]
    assert body["result"]["content"] == [
        {"type": "text", "text": json.dumps(details, indent=2, ensure_ascii=False)}
    ]


def test_refusals_are_results_not_http_errors(agent_main, agents):
    response = agent_main.invoke("sessions_history", {"sessionKey": "agent:research:main"})
    assert response.status_code == 200
    assert response.json()["result"]["details"]["status"] == "forbidden"


def test_malformed_arguments_are_400_tool_errors(agent_main):
    response = agent_main.invoke("sessions_list", {"activeMinutes": 0})
    assert response.status_code == 400
    assert response.json() == {
        "ok": False,
        "error": {"type": "tool_error", "message": "activeMinutes must be a positive integer"},
    }


def test_missing_required_argument(agent_main):
    response = agent_main.invoke("sessions_history", {})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "sessionKey required"


def test_unknown_tool_is_404(agent_main):
    response = agent_main.invoke("sessions_nope")
    assert response.status_code == 404
    assert response.json() == {
        "ok": False,
        "error": {"type": "not_found", "message": "Tool not available: sessions_nope"},
    }


def test_no_key_or_bad_key_is_401(anonymous, agents):
    assert anonymous.invoke("sessions_list").status_code == 401
    anonymous.token = "ocs_000000000000_nope"
    response = anonymous.invoke("sessions_list")
    assert response.status_code == 401 and response.json()["error"]["type"] == "unauthorized"


def test_revoked_key_is_401(agent_main):
    from sessions_app.models import ApiKey

    ApiKey.objects.get(scope="agent").revoke()
    assert agent_main.invoke("sessions_list").status_code == 401


def test_get_is_405(agent_main):
    response = agent_main.get("/tools/invoke")
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_agent_key_cannot_act_as_another_agents_session(agent_main):
    response = agent_main.invoke("sessions_list", sessionKey="agent:research:main")
    assert response.status_code == 403 and response.json()["error"]["type"] == "forbidden"


def test_pinned_key_acts_only_as_its_session(agents):
    from django.test import Client

    from sessions_app.models import ApiKey
    from tests.conftest import Api

    _, token = ApiKey.generate(
        scope="agent", agent=agents["main"], session_key="agent:main:discord:group:dev"
    )
    api = Api(Client(), token)
    make_session("discord:group:dev", channel="discord")
    assert [r["key"] for r in api.details("sessions_list")["sessions"]] == [
        "agent:main:discord:group:dev"
    ]
    assert api.invoke("sessions_list", sessionKey="main").status_code == 403


def test_ingest_key_cannot_invoke_tools(ingest):
    assert ingest.invoke("sessions_list").status_code == 403


def test_operator_may_act_as_any_session(operator, agents):
    make_session("agent:research:main")
    details = operator.details("sessions_list", sessionKey="agent:research:main")
    assert [r["key"] for r in details["sessions"]] == ["agent:research:main"]


def test_main_alias_means_the_callers_own_main(operator, agents):
    make_session("agent:research:main")
    add_messages(make_session("agent:research:main"), user("research main"))
    details = operator.details("sessions_history", {"sessionKey": "main"}, agentId="research")
    assert details["sessionKey"] == "agent:research:main"


def test_last_used_is_recorded(agent_main):
    from sessions_app.models import ApiKey

    agent_main.details("sessions_list")
    assert ApiKey.objects.get(scope="agent").last_used_at is not None


def test_a_token_with_nul_is_401_not_a_database_error(anonymous, agents):
    anonymous.token = "ocs_000000000000_a\x00b"
    assert anonymous.invoke("sessions_list").status_code == 401


def test_an_idempotency_key_inside_args_is_a_400_saying_where_it_goes(agent_main, agents):
    """Issue 17.5: it works at the top level or as a header; inside args the 400 says so."""
    response = agent_main.invoke(
        "sessions_send",
        {"sessionKey": "agent:main:main", "message": "hi", "idempotencyKey": "k-1"},
    )
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message == (
        "idempotencyKey goes at the top level of the body, beside tool and args (or in an "
        "Idempotency-Key header), not inside args"
    )


def test_the_key_and_the_settings_are_one_statement_then_none(
    operator, agent_main, agents, django_assert_num_queries
):
    """Issue 18: the key, its agent, the gateway settings and the default agent's sandbox flag
    are read together; issue 26: then kept by the process (access/key_cache.py) until one of
    them changes, so later requests send no statement for them. The requester needs none of
    its own for the default agent or the key's own, and one (the agent) for another agent's
    session."""
    from sessions_app.models import GatewayConfig

    GatewayConfig.load()
    for api in (operator, agent_main):
        with django_assert_num_queries(3):  # the key with the settings; the agents; last use
            assert api.invoke("agents_list").status_code == 200
        with django_assert_num_queries(1):  # the agents
            assert api.invoke("agents_list").status_code == 200
    with django_assert_num_queries(2):  # … and agent research's sandbox flag
        response = operator.invoke("agents_list", sessionKey="agent:research:main")
    assert response.json()["result"]["details"]["requester"] == "research"


def test_a_settings_change_or_a_sandboxed_agent_counts_from_the_next_request(operator, agents):
    """What the key's statement read is this request's: the next one reads again."""
    from tests.conftest import set_config

    set_config(visibility="all", a2a_enabled=True)
    make_session("agent:research:main")
    assert operator.details("sessions_list")["count"] == 1  # agent:research:main
    set_config(visibility="self")
    assert operator.details("sessions_list")["count"] == 0  # agent:main:main has no row
    set_config(visibility="all")
    assert "visibility" not in operator.details("sessions_list")
    agents["main"].sandboxed = True  # the default agent, read with the key
    agents["main"].save()
    assert "sandbox" in operator.details("sessions_list")["visibility"]["warning"]
