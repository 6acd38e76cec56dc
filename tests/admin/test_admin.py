"""The operator console: sessions, transcripts, runs, agents, gateway settings, API keys, and
who may do what (Operators vs Viewers, the groups of migration 0006, relabelled by 0009)."""

from __future__ import annotations

import importlib
import json
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app.access import key_cache
from sessions_app.models import (
    Agent,
    ApiKey,
    ChannelConfig,
    GatewayConfig,
    Message,
    Run,
    Session,
    now_ms,
)
from sessions_app.runs import engine
from sessions_app.runs.chain import Chain
from tests.conftest import (
    add_messages,
    admin_groups,
    assistant,
    make_agent,
    make_session,
    tool_result,
    user,
)
from tests.runs.helpers import completed_spawn

groups_migration = importlib.import_module("sessions_app.migrations.0009_delivery_moves_here")


@pytest.fixture
def groups(db):
    return admin_groups()


def _staff_client(name: str, group: Group) -> Client:
    person = User.objects.create_user(name, password="x", is_staff=True)
    person.groups.add(group)
    client = Client()
    client.force_login(person)
    return client


@pytest.fixture
def op(groups, agents) -> Client:
    return _staff_client("olivia", groups["Operators"])


@pytest.fixture
def viewer(groups, agents) -> Client:
    return _staff_client("victor", groups["Viewers"])


@pytest.fixture
def tree(agents):
    """main's session with a transcript, a sub-agent child and a grandchild."""
    main = make_session("agent:main:main", label="front desk", displayName="Desk Main")
    add_messages(
        main,
        user("hello"),
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "let me look"},
                {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"cmd": "ls"}},
            ],
        },
        tool_result("file.txt"),
        user(
            "from the other agent",
            provenance={
                "kind": "inter_session",
                "sourceSessionKey": "agent:other:main",
                "sourceTool": "sessions_send",
            },
        ),
        assistant("done"),
    )
    child = make_session("agent:research:subagent:c1", spawnedBy="agent:main:main", spawnDepth=1)
    grandchild = make_session(
        "agent:research:subagent:g1", spawnedBy="agent:research:subagent:c1", spawnDepth=2
    )
    return {"main": main, "child": child, "grandchild": grandchild}


def queued_run(session: Session, *, parent: Run | None = None, kind: str = "send") -> Run:
    with transaction.atomic():
        return engine.start_run(
            session=session,
            kind=kind,
            message="do it",
            chain=Chain(uuid.uuid4(), (session.agent_id,)),
            parent_run=parent,
        )


def changelist(model: str) -> str:
    return reverse(f"admin:sessions_app_{model}_changelist")


def change(model: str, pk) -> str:
    return reverse(f"admin:sessions_app_{model}_change", args=[pk])


def post_action(client: Client, model: str, action: str, pks, **extra):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks], "index": 0, **extra}
    return client.post(changelist(model), data, follow=True)


# --- groups ---------------------------------------------------------------------------------


def test_groups_hold_the_intended_permissions(groups):
    operator_perms = set(groups["Operators"].permissions.values_list("codename", flat=True))
    assert {
        "change_session",
        "change_run",
        "change_agent",
        "add_apikey",
        "view_apikey",
        "change_gatewayconfig",
        "change_sendpolicy",
        "view_delivery",
        "view_completion",
        "view_schedule",
    } <= operator_perms
    viewer_perms = set(
        groups["Viewers"].permissions.values_list("content_type__app_label", "codename")
    )
    assert viewer_perms == {
        ("sessions_app", "view_session"),
        ("sessions_app", "view_message"),
        ("sessions_app", "view_run"),
        ("sessions_app", "view_agent"),
        ("sessions_app", "view_delivery"),
        ("sessions_app", "view_completion"),
    }


def test_viewers_see_deliveries_and_operators_change_channels(op, viewer):
    # The outbox moved from policies_app to sessions_app (migration 0009); the groups kept
    # their rights under the new label.
    deliveries, channels = changelist("delivery"), changelist("channelconfig")
    assert viewer.get(deliveries).status_code == 200
    assert viewer.get(channels).status_code == 403
    assert op.get(deliveries).status_code == 200
    add = {"channel": "slack", "adapter": "log", "webhook_url": "", "max_attempts": "5"}
    assert viewer.post(reverse("admin:sessions_app_channelconfig_add"), add).status_code == 403
    assert op.post(reverse("admin:sessions_app_channelconfig_add"), add).status_code == 302
    assert ChannelConfig.objects.get().channel == "slack"


def test_moving_the_outbox_keeps_permissions_and_memberships(groups):
    """An upgraded database: content types and the permissions on them were made under
    policies_app; 0009 relabels them, so a Viewer keeps seeing deliveries."""
    moved = ContentType.objects.filter(
        app_label="sessions_app", model__in=["channelconfig", "delivery"]
    )
    moved.update(app_label="policies_app")  # as before 0009
    # What the admin may have created under the new label before `migrate` ran.
    ContentType.objects.create(app_label="sessions_app", model="delivery")
    ContentType.objects.clear_cache()
    person = User.objects.create_user("vic", password="x", is_staff=True)
    person.groups.add(groups["Viewers"])
    assert User.objects.get(pk=person.pk).has_perm("policies_app.view_delivery")

    groups_migration.relabel_content_types(django_apps, SimpleNamespace(connection=connection))

    person = User.objects.get(pk=person.pk)  # a fresh permission cache
    assert person.has_perm("sessions_app.view_delivery")
    assert not person.has_perm("policies_app.view_delivery")
    assert not ContentType.objects.filter(app_label="policies_app", model="delivery").exists()
    change_channels = Permission.objects.get(codename="change_channelconfig")
    assert change_channels.content_type.app_label == "sessions_app"
    assert groups["Operators"].permissions.filter(pk=change_channels.pk).exists()


# --- pages load -----------------------------------------------------------------------------


def test_every_list_change_and_add_page_loads_for_an_operator(op, tree):
    run = queued_run(tree["main"])
    key, _ = ApiKey.generate(scope=ApiKey.OPERATOR, name="ci")
    urls = [
        reverse("admin:index"),
        changelist("session"),
        change("session", tree["main"].pk),
        changelist("run"),
        change("run", run.pk),
        changelist("agent"),
        change("agent", "main"),
        reverse("admin:sessions_app_agent_add"),
        changelist("apikey"),
        change("apikey", key.pk),
        reverse("admin:sessions_app_apikey_add"),
        change("gatewayconfig", GatewayConfig.load().pk),
    ]
    for url in urls:
        assert op.get(url).status_code == 200, url
    response = op.get(changelist("gatewayconfig"))
    assert response.status_code == 302
    assert response["Location"] == change("gatewayconfig", GatewayConfig.load().pk)


def test_messages_are_not_in_the_admin(op):
    assert op.get("/admin/sessions_app/message/").status_code == 404


# --- session list ---------------------------------------------------------------------------


def _keys(response) -> set[str]:
    return {s.key for s in response.context["cl"].result_list}


def test_session_filters(op, tree):
    tree["child"].archive()
    make_session("agent:other:main", sendPolicy="deny", updatedAt=now_ms() - 3 * 3600 * 1000)
    assert _keys(op.get(changelist("session"), {"archived": "yes"})) == {
        "agent:research:subagent:c1"
    }
    assert "agent:research:subagent:c1" not in _keys(
        op.get(changelist("session"), {"archived": "no"})
    )
    assert _keys(op.get(changelist("session"), {"send_policy": "deny"})) == {"agent:other:main"}
    assert "agent:other:main" not in _keys(
        op.get(changelist("session"), {"send_policy": "inherit"})
    )
    recent = _keys(op.get(changelist("session"), {"active_minutes": "60"}))
    assert "agent:main:main" in recent and "agent:other:main" not in recent
    assert _keys(op.get(changelist("session"), {"agent__id__exact": "research"})) == {
        "agent:research:subagent:c1",
        "agent:research:subagent:g1",
    }
    assert _keys(op.get(changelist("session"), {"kind": tree["child"].kind})) >= {
        "agent:research:subagent:c1"
    }
    channel = _keys(op.get(changelist("session"), {"row_channel": tree["main"].row_channel}))
    assert "agent:main:main" in channel


@pytest.mark.parametrize(
    "query", ["agent:main:main", "front desk", "Desk Main", "session-id-of-main"]
)
def test_session_search_by_key_label_display_name_and_session_id(op, tree, query):
    Session.objects.filter(pk=tree["main"].pk).update(session_id="session-id-of-main")
    assert "agent:main:main" in _keys(op.get(changelist("session"), {"q": query}))
    assert "agent:research:subagent:c1" not in _keys(op.get(changelist("session"), {"q": query}))


# --- session page ---------------------------------------------------------------------------


def test_transcript_collapses_tool_calls_and_marks_inter_session_provenance(op, tree):
    page = op.get(change("session", tree["main"].pk)).content.decode()
    assert '<details class="oc-tool"><summary>toolCall exec</summary>' in page
    assert "<details open" not in page
    assert "&quot;cmd&quot;: &quot;ls&quot;" in page  # pretty-printed arguments
    assert "toolResult exec (call_1)" in page
    assert "inter_session from agent:other:main via sessions_send" in page
    assert page.index("#5 assistant") < page.index("#1 user")  # newest first


def test_internal_rows_are_one_folded_line(op, agent_main):
    """Issue 29.4: a real completion prompt and its NO_REPLY each show their summary, the text
    folded behind it; the sub-agent's report stays as it is."""
    make_session("main", lastChannel="webchat")
    completed_spawn(agent_main, label="papers")
    main = Session.objects.get(key="agent:main:main")
    page = op.get(change("session", main.pk)).content.decode()
    prompt = page[page.index('id="seq-1"') :]
    prompt = prompt[: prompt.index("</details>")]
    assert (
        '<details class="oc-internal"><summary>Sub-agent papers finished: success · show prompt'
        "</summary><pre>A background task completed."
    ) in prompt
    assert (
        '<details class="oc-internal"><summary>Replied NO_REPLY (nothing to send) · show message'
    ) in page
    report = page[page.index('id="seq-3"') : page.index('id="seq-2"')]
    assert "oc-internal" not in report and "<pre>Status: success" in report


def test_transcript_is_paged_newest_first(op, agents):
    session = make_session("agent:main:long")
    add_messages(session, *[user(f"message {i}") for i in range(1, 61)])
    first = op.get(change("session", session.pk)).content.decode()
    assert "message 60" in first and "message 11</pre>" in first
    assert "message 10</pre>" not in first
    assert "page 1 of 2" in first
    second = op.get(change("session", session.pk), {"page": 2}).content.decode()
    assert "message 10</pre>" in second and "message 60" not in second


def test_session_page_shows_the_subagent_tree_with_run_status(op, tree):
    queued_run(tree["child"])
    page = op.get(change("session", tree["main"].pk)).content.decode()
    aside = page[page.index('id="subagents"') :]
    assert "agent:research:subagent:c1" in aside
    assert "agent:research:subagent:g1" in aside
    assert "running" in aside


def test_session_page_is_not_editable(op, tree):
    page = op.get(change("session", tree["main"].pk)).content.decode()
    assert 'name="_save"' not in page
    response = op.post(change("session", tree["main"].pk), {"label": "changed"})
    assert response.status_code == 403
    tree["main"].refresh_from_db()
    assert tree["main"].label == "front desk"


# --- session actions ------------------------------------------------------------------------


def test_archive_and_restore_from_the_list_and_the_page(op, tree):
    main, child = tree["main"], tree["child"]
    post_action(op, "session", "archive_sessions", [main.pk, child.pk])
    assert Session.objects.archived().count() == 2
    post_action(op, "session", "restore_sessions", [child.pk])
    assert list(Session.objects.archived()) == [main]
    op.post(reverse("admin:sessions_app_session_restore", args=[main.pk]))
    main.refresh_from_db()
    assert main.archived_at is None
    op.post(reverse("admin:sessions_app_session_archive", args=[main.pk]))
    main.refresh_from_db()
    assert main.archived_at is not None


def test_set_send_policy_from_the_list_and_the_page(op, tree):
    main, child = tree["main"], tree["child"]
    before = Session.objects.get(pk=main.pk).updated_at
    response = post_action(op, "session", "set_send_policy_deny", [main.pk, child.pk])
    assert "Send policy set to deny on 2 session(s)." in response.content.decode()
    assert set(Session.objects.values_list("send_policy", flat=True).filter(pk__in=[main.pk])) == {
        "deny"
    }
    assert Session.objects.get(pk=child.pk).send_policy == "deny"
    assert Session.objects.get(pk=main.pk).updated_at >= before  # set_send_policy touches it
    post_action(op, "session", "set_send_policy_inherit", [child.pk])
    assert Session.objects.get(pk=child.pk).send_policy == ""
    url = reverse("admin:sessions_app_session_send_policy", args=[main.pk])
    op.post(url, {"policy": "allow"})
    assert Session.objects.get(pk=main.pk).send_policy == "allow"
    response = op.post(url, {"policy": "maybe"}, follow=True)
    assert "endPolicy must be" in response.content.decode()  # capitalised on display
    assert Session.objects.get(pk=main.pk).send_policy == "allow"


def test_export_jsonl_from_the_page_and_the_list(op, tree):
    response = op.get(reverse("admin:sessions_app_session_export", args=[tree["main"].pk]))
    assert response.status_code == 200
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert lines[0]["type"] == "session"
    assert [line["message"]["role"] for line in lines[1:]] == [
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
    ]
    response = op.post(
        changelist("session"),
        {"action": "export_jsonl", "_selected_action": [tree["main"].pk], "index": 0},
    )
    assert response["Content-Disposition"].endswith('.jsonl"')
    assert b"".join(response.streaming_content).count(b"\n") == 6
    two = post_action(op, "session", "export_jsonl", [tree["main"].pk, tree["child"].pk])
    assert "Select exactly one session" in two.content.decode()


# --- runs -----------------------------------------------------------------------------------


def test_run_filters_and_page_show_chain_timing_error_and_children(op, tree):
    parent = queued_run(tree["main"])
    child = queued_run(tree["child"], parent=parent, kind="spawn")
    engine.finish_run(child, Run.ERROR, error="backend exploded")
    Run.objects.filter(pk=child.pk).update(started_at=timezone.now() - timedelta(seconds=2))
    listed = op.get(changelist("run"), {"status__exact": "error"}).context["cl"].result_list
    assert [r.pk for r in listed] == [child.pk]
    listed = op.get(changelist("run"), {"kind__exact": "send"}).context["cl"].result_list
    assert [r.pk for r in listed] == [parent.pk]
    page = op.get(change("run", child.pk)).content.decode()
    assert str(child.chain_id) in page
    assert "backend exploded" in page
    assert change("run", parent.pk) in page  # parent link
    assert " ms" in page  # runtime
    parent_page = op.get(change("run", parent.pk)).content.decode()
    assert change("run", child.pk) in parent_page  # child runs
    assert "Abort</button>" in parent_page


def test_abort_a_queued_run_from_the_list_and_the_page(op, tree):
    first, second = queued_run(tree["main"]), queued_run(tree["child"])
    response = post_action(op, "run", "abort_runs", [first.pk])
    assert "Aborted 1 run(s)." in response.content.decode()
    first.refresh_from_db()
    assert first.status == Run.ABORTED
    assert Session.objects.get(pk=tree["main"].pk).run_status == "aborted"
    op.post(reverse("admin:sessions_app_run_abort", args=[second.pk]))
    second.refresh_from_db()
    assert second.status == Run.ABORTED and second.error == "aborted"


# --- agents ---------------------------------------------------------------------------------


def agent_form(**overrides) -> dict:
    data = {
        "id": "helper",
        "name": "Helper",
        "description": "",
        "model": "",
        "backend": "",
        "allow_agents": "",
        "tools_allow": "",
        "tools_deny": "",
    }
    data.update(overrides)
    return data


def test_agent_add_saves_through_upsert_agent(op):
    response = op.post(
        reverse("admin:sessions_app_agent_add"),
        agent_form(allow_agents="research, *", tools_deny="exec", sandboxed="on"),
    )
    assert response.status_code == 302, response.content
    helper = Agent.objects.get(pk="helper")
    assert helper.backend == {"type": "scripted"}  # upsert_agent's default
    assert helper.allow_agents == ["research", "*"]
    assert helper.tools_deny == ["exec"] and helper.sandboxed


def test_agent_edit_keeps_its_id_and_validates(op):
    url = change("agent", "main")
    data = agent_form(name="Main 2", allow_agents="research")
    del data["id"]
    assert op.post(url, data).status_code == 302
    assert Agent.objects.get(pk="main").name == "Main 2"

    response = op.post(url, {**data, "allow_agents": "research, ghost"})
    assert response.status_code == 200
    assert "Unknown agent id in subagents.allowAgents: ghost" in response.content.decode()

    response = op.post(
        url, {**data, "backend": json.dumps({"type": "openai", "baseUrl": "http://x"})}
    )
    assert "backend.model is required for an openai backend" in response.content.decode()
    assert Agent.objects.get(pk="main").backend == {"type": "scripted"}


def test_agent_add_refuses_a_bad_id(op):
    response = op.post(reverse("admin:sessions_app_agent_add"), agent_form(id="Bad Id"))
    assert response.status_code == 200
    assert "agent id must be lowercase" in response.content.decode()


def test_test_backend_button_runs_one_prompt(op):
    make_agent("echo", backend={"type": "scripted", "rules": [{"match": ".", "reply": "pong"}]})
    make_agent("broken", backend={"type": "scripted", "rules": [{"match": ".", "error": "boom"}]})
    assert 'formaction="/admin/sessions_app/agent/echo/test-backend/"' in (
        op.get(change("agent", "echo")).content.decode()
    )
    response = op.post(
        reverse("admin:sessions_app_agent_test_backend", args=["echo"]), {"prompt": "ping"}
    )
    assert response.status_code == 302
    page = op.get(response["Location"]).content.decode()
    assert "Backend test of echo: reply: pong" in page
    response = op.post(
        reverse("admin:sessions_app_agent_test_backend", args=["broken"]), follow=True
    )
    assert "Backend test of broken: error: boom" in response.content.decode()
    assert not Session.objects.filter(key__contains="admin-backend-test").exists()


# --- gateway settings -----------------------------------------------------------------------


def gateway_form(**overrides) -> dict:
    from sessions_app.manage import config

    data = {}
    for setting in config.SETTINGS:
        value = getattr(GatewayConfig.load(), setting.field)
        if setting.kind == "bool":
            if value:
                data[setting.field] = "on"
        elif setting.kind == "list":
            data[setting.field] = ", ".join(value)
        elif setting.kind == "json":
            data[setting.field] = json.dumps(value)
        else:
            data[setting.field] = str(value)
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_gateway_settings_show_openclaw_names_and_defaults(op):
    page = op.get(change("gatewayconfig", GatewayConfig.load().pk)).content.decode()
    assert "session.agentToAgent.maxPingPongTurns" in page
    assert "range: 0–5. default: 5" in page
    assert "tools.agentToAgent.enabled" in page and "default: false" in page


def test_gateway_settings_refuse_out_of_range_values(op):
    url = change("gatewayconfig", GatewayConfig.load().pk)
    response = op.post(url, gateway_form(max_ping_pong_turns="6"))
    assert response.status_code == 200
    assert (
        "session.agentToAgent.maxPingPongTurns must be between 0 and 5" in response.content.decode()
    )
    assert GatewayConfig.load().max_ping_pong_turns == 5


def test_gateway_settings_save_through_update_config(op, agents):
    session = make_session("agent:main:main")
    assert session.kind == "main"
    url = change("gatewayconfig", GatewayConfig.load().pk)
    response = op.post(
        url, gateway_form(max_ping_pong_turns="2", a2a_allow="main, research", main_key="Home")
    )
    assert response.status_code == 302, response.content
    saved = GatewayConfig.load()
    assert saved.max_ping_pong_turns == 2
    assert saved.a2a_allow == ["main", "research"]
    assert saved.main_key == "home"  # normalised by config.clean_value
    session.refresh_from_db()
    assert session.kind != "main"  # update_config reclassified sessions for the new mainKey


# --- API keys -------------------------------------------------------------------------------


def test_api_key_plaintext_is_shown_once_and_only_its_hash_stored(op, agents):
    response = op.post(
        reverse("admin:sessions_app_apikey_add"),
        {"name": "bot", "scope": "agent", "agent": "main", "session_key": ""},
        follow=True,
    )
    page = response.content.decode()
    start = page.index("ocs_")
    plaintext = page[start : page.index("<", start)].strip()
    key = ApiKey.objects.get(name="bot")
    assert key.scope == "agent" and key.agent_id == "main"
    assert key_cache.authenticate(plaintext) == key
    secret = plaintext.split("_", 2)[2]
    assert key.secret_hash == ApiKey.hash_secret(secret) and secret not in key.secret_hash
    assert secret not in op.get(changelist("apikey")).content.decode()
    assert secret not in op.get(change("apikey", key.pk)).content.decode()
    listed = op.get(changelist("apikey")).content.decode()
    assert f"ocs_{key.lookup}_…" in listed and "Last used at" in listed


def test_agent_scoped_key_needs_an_agent(op):
    response = op.post(reverse("admin:sessions_app_apikey_add"), {"scope": "agent"})
    assert response.status_code == 200
    assert "An agent-scoped key needs an agent." in response.content.decode()
    assert not ApiKey.objects.exists()


def test_a_pinned_session_is_stored_canonical_and_must_be_the_agents(op, agents):
    add = reverse("admin:sessions_app_apikey_add")
    op.post(
        add, {"name": "pin", "scope": "agent", "agent": "main", "session_key": "discord:group:dev"}
    )
    assert ApiKey.objects.get(name="pin").session_key == "agent:main:discord:group:dev"
    response = op.post(
        add, {"name": "x", "scope": "agent", "agent": "main", "session_key": "agent:research:main"}
    )
    assert "Session agent:research:main does not belong to agent main." in response.content.decode()
    response = op.post(add, {"name": "y", "scope": "operator", "agent": "main"})
    assert (
        "An agent, a pinned session and sandboxed go with agent keys." in response.content.decode()
    )
    assert not ApiKey.objects.filter(name__in=["x", "y"]).exists()


def test_revoke_api_keys(op):
    key, plaintext = ApiKey.generate(scope=ApiKey.OPERATOR)
    post_action(op, "apikey", "revoke_keys", [key.pk])
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert key_cache.authenticate(plaintext) is None


# --- viewers --------------------------------------------------------------------------------


def test_viewer_can_look_at_sessions_and_runs_without_actions(viewer, tree):
    run = queued_run(tree["main"])
    for url in [
        changelist("session"),
        change("session", tree["main"].pk),
        changelist("run"),
        change("run", run.pk),
        changelist("agent"),
        change("agent", "main"),
    ]:
        assert viewer.get(url).status_code == 200, url
    page = viewer.get(change("session", tree["main"].pk)).content.decode()
    assert "inter_session from agent:other:main" in page  # the transcript is visible
    assert reverse("admin:sessions_app_session_archive", args=[tree["main"].pk]) not in page
    assert "Export JSONL" not in page
    assert 'name="action"' not in viewer.get(changelist("session")).content.decode()
    assert "Abort</button>" not in viewer.get(change("run", run.pk)).content.decode()
    assert "Test backend" not in viewer.get(changelist("agent")).content.decode()
    assert "Test backend" not in viewer.get(change("agent", "main")).content.decode()
    index = viewer.get(reverse("admin:index")).content.decode()
    assert "API keys" not in index and "Gateway settings" not in index


def test_viewer_cannot_reach_any_change_view_add_view_or_action(viewer, tree):
    main = tree["main"]
    run = queued_run(main)
    key, _ = ApiKey.generate(scope=ApiKey.OPERATOR)
    config_pk = GatewayConfig.load().pk
    forbidden_gets = [
        reverse("admin:sessions_app_session_add"),
        reverse("admin:sessions_app_run_add"),
        reverse("admin:sessions_app_agent_add"),
        reverse("admin:sessions_app_apikey_add"),
        changelist("apikey"),
        change("apikey", key.pk),
        changelist("gatewayconfig"),
        change("gatewayconfig", config_pk),
        reverse("admin:sessions_app_session_export", args=[main.pk]),
        "/admin/auth/user/",
        "/admin/auth/group/",
    ]
    for url in forbidden_gets:
        assert viewer.get(url).status_code in (403, 302), url
        if viewer.get(url).status_code == 302:
            assert "/login/" in viewer.get(url)["Location"], url
    forbidden_posts = [
        (change("session", main.pk), {"label": "x"}),
        (change("run", run.pk), {}),
        (change("agent", "main"), agent_form(name="hacked")),
        (change("gatewayconfig", config_pk), gateway_form(max_ping_pong_turns="1")),
        (reverse("admin:sessions_app_agent_add"), agent_form()),
        (reverse("admin:sessions_app_apikey_add"), {"scope": "operator"}),
        (reverse("admin:sessions_app_session_archive", args=[main.pk]), {}),
        (reverse("admin:sessions_app_session_restore", args=[main.pk]), {}),
        (reverse("admin:sessions_app_session_send_policy", args=[main.pk]), {"policy": "deny"}),
        (reverse("admin:sessions_app_run_abort", args=[run.pk]), {}),
        (reverse("admin:sessions_app_agent_test_backend", args=["main"]), {}),
    ]
    actions = [
        ("session", "archive_sessions", main.pk),
        ("session", "set_send_policy_deny", main.pk),
        ("session", "export_jsonl", main.pk),
        ("run", "abort_runs", run.pk),
        ("apikey", "revoke_keys", key.pk),
        ("agent", "delete_selected", "main"),
    ]
    for model, action, pk in actions:
        forbidden_posts.append(
            (changelist(model), {"action": action, "_selected_action": [pk], "index": 0})
        )
    for url, data in forbidden_posts:
        assert viewer.post(url, data).status_code == 403, url

    main.refresh_from_db()
    run.refresh_from_db()
    key.refresh_from_db()
    assert main.archived_at is None and main.send_policy == "" and main.label == "front desk"
    assert run.status == Run.QUEUED
    assert key.revoked_at is None
    assert GatewayConfig.load().max_ping_pong_turns == 5
    assert Agent.objects.get(pk="main").name == "Main"
    assert not Agent.objects.filter(pk="helper").exists()
    assert ApiKey.objects.count() == 1
    assert Message.objects.filter(session=main).count() == 6  # 5 + the queued run input


@pytest.mark.parametrize(
    "old,new",
    [
        ("/admin/policies_app/delivery/", "/admin/sessions_app/delivery/"),
        (
            "/admin/policies_app/channelconfig/3/change/",
            "/admin/sessions_app/channelconfig/3/change/",
        ),
        (
            "/admin/policies_app/delivery/?status__exact=failed",
            "/admin/sessions_app/delivery/?status__exact=failed",
        ),
    ],
)
def test_the_outbox_admin_pages_old_addresses_redirect(db, old, new):
    response = Client().get(old)
    assert response.status_code == 301 and response["Location"] == new


def test_stop_button_stops_the_session_and_its_sub_agents(op, viewer, agents):

    main = make_session("agent:main:main")
    child = make_session("agent:main:subagent:c1", spawnedBy=main.key, spawnDepth=1)
    with transaction.atomic():
        runs = [
            engine.start_run(
                session=s, kind="ingest", message="work", chain=Chain(uuid.uuid4(), ("main",))
            )
            for s in (main, child)
        ]
    url = reverse("admin:sessions_app_session_stop", args=[main.pk])
    assert viewer.post(url).status_code == 403
    response = op.post(url, follow=True)
    assert response.status_code == 200 and "Stopped: 2 run(s) aborted" in response.content.decode()
    assert {r.status for r in Run.objects.filter(pk__in=[r.pk for r in runs])} == {Run.ABORTED}
    page = op.get(reverse("admin:sessions_app_session_change", args=[main.pk])).content.decode()
    assert reverse("admin:sessions_app_session_stop", args=[main.pk]) in page


def test_completions_are_listed_for_viewers(viewer, agents):
    assert viewer.get(reverse("admin:sessions_app_completion_changelist")).status_code == 200


def test_total_tokens_is_one_definition_on_the_admin_page_and_the_row(op, agents):
    """Issue 17.6: 2,400 in / 610 out without a stored total, then a run of 128 + 20 = 148:
    the total was 148 beside 2,528 / 630. It is input + output, in the admin and the API row."""
    session = make_session("main", inputTokens=2400, outputTokens=610)
    run = queued_run(session)
    assert run.mark_finished(
        Run.OK, reply="ok", usage={"input": 128, "output": 20, "totalTokens": 148}
    )
    session.refresh_from_db()
    assert (session.input_tokens, session.output_tokens) == (2528, 630)
    assert session.total_tokens == session.tokens_total == 3158
    body = op.get(change("session", session.pk)).content.decode()
    assert "Total tokens:" in body and "3158" in body and ">148<" not in body
