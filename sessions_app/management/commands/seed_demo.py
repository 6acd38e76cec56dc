"""python manage.py seed_demo: an idempotent demo of every kind of session on several channels."""

from typing import Any

from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from openclaw_common import keys
from sessions_app import store
from sessions_app.acp.harnesses import echo_definition
from sessions_app.manage import config
from sessions_app.manage.agents import upsert_agent
from sessions_app.models import GatewayConfig, Session, now_ms
from sessions_app.transcript import tool_result_message

MINUTE = 60_000
SUBAGENT_ID = "5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"
HOOK_ID = "0b9e7f1a-2c3d-4e5f-8a9b-0c1d2e3f4a5b"

# Scripted agents whose replies read well in the README's send and spawn: each ends the reply
# loop at once (REPLY_SKIP) and says something in the announce step.
QUIET_LOOP = {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"}
AGENTS = {
    "main": {
        "name": "Main assistant",
        "description": "Answers the team in chat and delegates research.",
        "model": "scripted/echo",
        "backend": {
            "type": "scripted",
            "rules": [
                QUIET_LOOP,
                {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                {"match": "(?i)ping", "reply": "pong"},
                # The README's orchestration: two researchers, a yield, one answer with both.
                {
                    "match": "(?i)compare",
                    "on": ["ingest", "send"],
                    "toolCalls": [
                        {
                            "name": "sessions_spawn",
                            "arguments": {
                                "agentId": "research",
                                "task": "Research SQLite for the embedded default",
                                "label": "sqlite",
                            },
                        },
                        {
                            "name": "sessions_spawn",
                            "arguments": {
                                "agentId": "research",
                                "task": "Research PostgreSQL for production",
                                "label": "postgresql",
                            },
                        },
                        {
                            "name": "sessions_yield",
                            "arguments": {
                                "acknowledgment": "Asked two researchers; I will compare "
                                "when both are back."
                            },
                        },
                    ],
                },
                {  # the turn after the yield: every child of the batch has reported
                    "match": "yielded for have all completed",
                    "on": ["completion"],
                    "reply": "Both researchers are back:\n{childResults}",
                },
                {  # one sub-agent's result (a spawn without a yield)
                    "match": ".*",
                    "on": ["completion"],
                    "reply": "My sub-agent is done: {childResults}",
                },
            ],
        },
        "subagents": {"allowAgents": ["research"]},
    },
    "research": {
        "name": "Research agent",
        "description": "Looks things up and reports back.",
        "model": "scripted/echo",
        "backend": {
            "type": "scripted",
            "rules": [
                QUIET_LOOP,
                {
                    "match": "Sub-agent announce",
                    "on": ["announce"],
                    "reply": "Nothing urgent; details in the result.",
                },
                {
                    "match": ".*",
                    "on": ["announce"],
                    "reply": "Research desk answered a question from another agent.",
                },
                # Before the plain question below: these tasks mention SQLite too.
                {
                    "match": "(?i)research sqlite",
                    "on": ["spawn"],
                    "reply": "SQLite: one file and no server, WAL lets readers run beside the "
                    "writer; right for the embedded default.",
                },
                {
                    "match": "(?i)research postgresql",
                    "on": ["spawn"],
                    "reply": "PostgreSQL: a server with row locks and MVCC; right for "
                    "production with several workers.",
                },
                {
                    "match": "(?i)sqlite",
                    "reply": "SQLite 3.47 is the latest release in my notes; WAL mode is the default we use.",
                },
                {
                    "match": ".*",
                    "on": ["spawn"],
                    "reply": "Summary of '{input}': 4 unread, one invoice, nothing urgent.",
                },
            ],
        },
    },
    "ops": {
        "name": "Ops bot",
        "description": "Watches deploys; sandboxed.",
        "model": "scripted/echo",
        "backend": {"type": "scripted"},
        "sandboxed": True,
    },
}


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def assistant(text, *, tokens=(120, 40)):
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions",
        "provider": "scripted",
        "model": "echo",
        "usage": {"input": tokens[0], "output": tokens[1], "totalTokens": sum(tokens)},
        "stopReason": "stop",
    }


def tool_call(call_id, name, arguments, *, thinking=None):
    blocks = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking})
    blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    return {
        "role": "assistant",
        "content": blocks,
        "provider": "scripted",
        "model": "echo",
        "stopReason": "toolUse",
    }


# (key, entry, minutes ago, messages)
SESSIONS: list[tuple[str, dict[str, Any], int, list[dict[str, Any]]]] = [
    (
        "agent:main:main",
        {
            "lastChannel": "webchat",
            "lastTo": "user:alice",
            "displayName": "Alice (webchat)",
            "model": "scripted/echo",
            "inputTokens": 2400,
            "outputTokens": 610,
            "contextTokens": 128000,
            "thinkingLevel": "low",
            "systemSent": True,
        },
        2,
        [
            user("What's on my calendar today?"),
            tool_call(
                "call_cal_1",
                "calendar_list",
                {"day": "today"},
                thinking="Check the calendar first.",
            ),
            tool_result_message(
                "call_cal_1",
                "calendar_list",
                '[{"time": "10:00", "title": "Standup"}, {"time": "14:00", "title": "Design review"}]',
            ),
            assistant("You have standup at 10:00 and the design review at 14:00."),
            user("Ask the research agent to summarise the inbox."),
            tool_call(
                "call_spawn_1",
                "sessions_spawn",
                {"task": "Summarise the inbox", "agentId": "research", "label": "summarise-inbox"},
            ),
            tool_result_message(
                "call_spawn_1",
                "sessions_spawn",
                f'{{"status": "accepted", "childSessionKey": "agent:research:subagent:{SUBAGENT_ID}"}}',
            ),
            assistant("I've started a sub-agent on it; I'll tell you when it reports back."),
        ],
    ),
    (
        "agent:main:discord:group:dev",
        {
            "channel": "discord",
            "chatType": "group",
            "displayName": "discord:#dev",
            "subject": "dev",
            "deliveryContext": {"channel": "discord", "to": "channel:dev", "accountId": "bot-1"},
            "model": "scripted/echo",
            "totalTokens": 5300,
        },
        5,
        [
            user("@claw did the nightly build pass?", senderName="bob"),
            tool_call("call_ci_1", "ci_status", {"pipeline": "nightly"}),
            tool_result_message("call_ci_1", "ci_status", "nightly #812: passed in 14m02s"),
            assistant("Yes: nightly #812 passed in 14 minutes."),
        ],
    ),
    (
        "agent:main:telegram:group:-1001234567890",
        {
            "channel": "telegram",
            "chatType": "group",
            "displayName": "telegram:Family",
            "subject": "Family",
            "lastChannel": "telegram",
            "lastTo": "group:-1001234567890",
        },
        30,
        [user("Dinner at 7?"), assistant("Noted: dinner at 7 tonight.")],
    ),
    (
        "agent:main:slack:channel:c0general",
        {
            "channel": "slack",
            "chatType": "channel",
            "displayName": "slack:#general",
            "lastChannel": "slack",
            "lastTo": "channel:c0general",
            "sendPolicy": "deny",
        },
        90,
        [user("Weekly update is posted."), assistant("Thanks, I've read it.")],
    ),
    (
        "agent:main:whatsapp:direct:+15551234567",
        {
            "chatType": "direct",
            "lastChannel": "whatsapp",
            "lastTo": "+15551234567",
            "displayName": "Carol",
        },
        12,
        [user("Can you remind me to call the plumber?"), assistant("Reminder set for 17:00.")],
    ),
    (
        "cron:daily-briefing",
        {"label": "daily-briefing", "displayName": "Daily briefing"},
        240,
        [
            user("[cron] Prepare the daily briefing."),
            tool_call("call_news_1", "news_headlines", {"limit": 3}),
            tool_result_message(
                "call_news_1",
                "news_headlines",
                "1. Markets steady\n2. Rain expected\n3. Release 2.4 shipped",
            ),
            assistant("Briefing: markets steady, rain later, release 2.4 is out."),
        ],
    ),
    (
        f"hook:{HOOK_ID}",
        {"label": "github-webhook", "displayName": "GitHub webhook"},
        45,
        [
            user("[hook] push to main by dave: 3 commits"),
            assistant("Logged the push; nothing to do."),
        ],
    ),
    (
        "node-mac-mini",
        {"displayName": "mac-mini node"},
        600,
        [user("[node] disk usage 81%"), assistant("Disk is at 81%; I'll warn at 90%.")],
    ),
    (
        f"agent:research:subagent:{SUBAGENT_ID}",
        {
            "label": "summarise-inbox",
            "spawnedBy": "agent:main:main",
            "spawnDepth": 1,
            "model": "scripted/echo",
            "inputTokens": 900,
            "outputTokens": 150,
        },
        1,
        [
            user(
                "Summarise the inbox",
                provenance={
                    "kind": "inter_session",
                    "sourceSessionKey": "agent:main:main",
                    "sourceTool": "sessions_spawn",
                },
            ),
            tool_call("call_mail_1", "mail_search", {"folder": "inbox", "unread": True}),
            tool_result_message(
                "call_mail_1", "mail_search", "4 unread: invoice, offsite agenda, 2 newsletters"
            ),
            assistant(
                "Status: success\nResult: 4 unread — an invoice, the offsite agenda and two newsletters.\nNotes: nothing urgent."
            ),
        ],
    ),
    (
        "agent:research:main",
        {"lastChannel": "webchat", "displayName": "Research desk"},
        20,
        [
            user("Find the latest SQLite release notes."),
            assistant("SQLite 3.47 is the latest release I know of."),
        ],
    ),
    (
        "agent:main:signal:group:old-project",
        {"channel": "signal", "chatType": "group", "displayName": "signal:Old project"},
        60 * 24 * 30,
        [user("Project wrapped up, thanks all!"), assistant("Congratulations, everyone.")],
    ),
]
ARCHIVED = {"agent:main:signal:group:old-project"}


class Command(BaseCommand):
    help = "Load demo agents and sessions (idempotent: existing transcripts are left alone)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--migrate",
            action="store_true",
            help="Apply the migrations first, in this process (what `make run` does: one "
            "Python start fewer than `migrate` then `seed_demo`)",
        )

    def handle(self, *args, migrate: bool = False, **options):
        if migrate:
            call_command("migrate", interactive=False, stdout=self.stdout, stderr=self.stderr)
        if not GatewayConfig.objects.exists():
            # A fresh install shows the whole demo to any agent key: visibility "all" with
            # agent-to-agent between main and research (ops stays out, to show a refusal).
            GatewayConfig.objects.create(
                id=1, visibility="all", a2a_enabled=True, a2a_allow=["main", "research"]
            )
            self.stdout.write(
                "seed_demo: new gateway settings: visibility=all, agentToAgent main<->research"
            )
        settings = GatewayConfig.load().key_settings
        for agent_id, data in AGENTS.items():
            upsert_agent(api_key=None, agent_id=agent_id, data=data)
        now = now_ms()
        created = appended = 0
        for key, entry, minutes_ago, messages in SESSIONS:
            with transaction.atomic():
                if not Session.objects.filter(
                    key=keys.canonical_key(key, settings=settings)
                ).exists():
                    entry = {**entry, "updatedAt": now - minutes_ago * MINUTE}
                session, was_created = store.upsert_session(
                    api_key=None, key=key, entry=entry, touch=False
                )
                created += was_created
                if session.last_seq == 0:
                    rows = store.read_messages(
                        [
                            {
                                **m,
                                "timestamp": now
                                - minutes_ago * MINUTE
                                - (len(messages) - i) * 1000,
                            }
                            for i, m in enumerate(messages)
                        ]
                    )
                    store.append_to_session(session, rows, touch=False)
                    appended += len(rows)
                if key in ARCHIVED and session.archived_at is None:
                    session.archive()
        self.stdout.write(
            f"seed_demo: {len(AGENTS)} agents, {len(SESSIONS)} sessions ({created} new), {appended} messages added"
        )
        self.register_echo_harness()

    def register_echo_harness(self) -> None:
        """The ACP harness `echo` (docs/acp.md), unless an operator already defined one."""
        harnesses = GatewayConfig.load().acp_agents or {}
        if "echo" in harnesses:
            return
        workspace = django_settings.VAR_DIR / "acp" / "echo"
        workspace.mkdir(parents=True, exist_ok=True)
        config.update_config(
            api_key=None, changes={"acp.agents": {**harnesses, "echo": echo_definition(workspace)}}
        )
        self.stdout.write(f"seed_demo: ACP harness echo registered (cwdRoot {workspace})")
