"""The session-management RPCs of /ws/ (9.6 §2.4): sessions.patch, patchMany, reset, delete,
assignOwner and sessions.groups.*, with closed params and the same texts as the tool."""

from __future__ import annotations

import pytest
from django.test import Client as DjangoClient

from sessions_app.manage.session_admin import READ_ONLY_TEXT
from sessions_app.models import Session, SessionGroup
from sessions_app.storage import cold_storage
from tests.conftest import add_messages, admin_groups, assistant, make_session, set_config, user
from tests.live.conftest import connected, db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

DEV = "agent:main:discord:group:dev"


def make_dev():
    session = make_session(DEV, label="dev")
    add_messages(session, user("hello"), assistant("hi there"))
    return session


def fetch(key):
    return Session.objects.get(key=key)


async def test_patch_answers_the_entry(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        res = await client.request(
            "sessions.patch", {"key": DEV, "pinned": True, "category": "Work", "label": "Dev"}
        )
    assert res["ok"], res
    payload = res["payload"]
    assert payload["ok"] is True and payload["key"] == DEV
    assert payload["entry"]["key"] == DEV and payload["entry"]["label"] == "Dev"
    assert payload["updated"] == ["label", "pinned", "group"]
    session = await db(fetch)(DEV)
    assert session.category == "Work" and session.pinned_at is not None


class Prefix(str):
    """A refusal whose text ends with a list that grows with the service (the tool names): only
    its beginning is pinned. Every other refusal's text is pinned whole."""


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"key": DEV, "execSecurity": None}, "execSecurity is retired and cannot be patched"),
        ({"key": DEV, "spawnedBy": "x"}, "spawnedBy is spawn lineage and cannot be patched"),
        ({"key": DEV, "bogus": 1}, "Unknown field: bogus"),
        ({"key": DEV, "execAsk": "on"}, "execAsk is retired and cannot be patched"),
        (
            {"key": DEV, "subagentControlScope": "x"},
            "subagentControlScope is spawn lineage and cannot be patched",
        ),
        ({"key": DEV, "fastMode": "fast"}, "fastMode must be one of true, false, auto"),
        (
            {"key": DEV, "responseUsage": "all"},
            "responseUsage must be one of off, tokens, full, on",
        ),
        (
            {"key": DEV, "groupActivation": "never"},
            "groupActivation must be one of mention, always",
        ),
        ({"key": DEV, "unread": "yes"}, "unread must be boolean"),
        ({"key": DEV, "contextWindow": 0}, "contextWindow must be a positive integer"),
        ({"key": DEV, "verboseLevel": 3}, "verboseLevel must be a string"),
        (
            {"key": DEV, "boardPresentation": [1]},
            "boardPresentation must be a string, number, boolean or object of at most 2048 bytes",
        ),
        ({"key": DEV, "execHost": {"a": 1}}, "execHost must be a string, number or boolean"),
        (
            {"key": DEV, "toolOverrides": {"deny": ["nope"]}},
            Prefix("toolOverrides.deny: unknown tool 'nope'; use tool names, groups or *: "),
        ),
        ({"key": DEV}, "Patch setting required"),
        (
            {"key": DEV, "archived": True},
            "Session lifecycle action requires a durable session identity",
        ),
        (
            {"key": DEV, "label": "x", "agentId": "other"},
            "session key agent does not match agentId",
        ),
        ({"key": 5, "label": "x"}, "key must be a non-empty string"),
    ],
)
async def test_patch_refusals(operator, params, text):
    await db(make_dev)()
    async with connected(operator.token) as client:
        res = await client.request("sessions.patch", params)
    assert res["error"]["code"] == "invalid_request"
    if isinstance(text, Prefix):
        assert res["error"]["message"].startswith(text), res["error"]
    else:
        assert res["error"]["message"] == text, res["error"]


async def test_what_no_database_can_store_is_refused_and_the_connection_goes_on(operator):
    """A NUL, or nesting past the depth limit, is refused at the frame as on REST (it was
    stored over /ws/: a DataError on PostgreSQL, and a value whose every later answer orjson
    could not encode, so the connection stopped answering)."""
    await db(make_dev)()
    deep: list = []
    for _ in range(300):
        deep = [deep]
    async with connected(operator.token) as client:
        nul = await client.request("sessions.patch", {"key": DEV, "label": "a\u0000b"})
        nested = await client.request("sessions.patch", {"key": DEV, "boardFace": deep})
        after = await client.request("sessions.patch", {"key": DEV, "label": "plain"})
    assert nul["error"] == {
        "code": "invalid_request",
        "message": "params.label must not contain NUL characters",
    }
    assert nested["error"]["code"] == "invalid_request"
    assert nested["error"]["message"].startswith("params nests objects and arrays deeper than")
    assert after["ok"] and after["payload"]["entry"]["label"] == "plain"
    session = await db(fetch)(DEV)
    assert session.label == "plain" and "boardFace" not in session.extra


async def test_an_answer_orjson_cannot_encode_still_arrives(operator):
    """A value stored before the frame check (300 levels: past orjson's 255) is answered."""

    def prep():
        deep: list = []
        for _ in range(300):
            deep = [deep]
        session = make_dev()
        session.extra = {**session.extra, "boardFace": deep}
        session.save(update_fields=["extra"])

    await db(prep)()
    async with connected(operator.token) as client:
        res = await client.request("sessions.patch", {"key": DEV, "label": "plain"})
    assert res["ok"] and res["payload"]["entry"]["label"] == "plain"


# Every field 9.6's sessions.patch lists (§2.4), each with a value it accepts.
FIELDS_96 = {
    "label": "Dev",
    "autoLabel": True,
    "icon": "book",
    "color": "teal",
    "category": "Work",
    "boardFace": "compact",
    "boardPresentation": {"columns": 2},
    "statusNote": "deploying",
    "attention": "bot",
    "ttlMinutes": 45,
    "archived": False,
    "pinned": True,
    "unread": True,
    "contextWindow": 200_000,
    "thinkingLevel": "high",
    "fastMode": "auto",
    "verboseLevel": "on",
    "traceLevel": "debug",
    "reasoningLevel": "stream",
    "responseUsage": "tokens",
    "elevatedLevel": "ask",
    "execHost": "gateway",
    "execNode": "node-1",
    "permissionMode": "default",
    "sandboxMode": "off",
    "model": "openai/gpt-5",
    "agentRuntime": "native",
    "sendPolicy": "allow",
    "groupActivation": "always",
    "toolOverrides": {"deny": ["sessions_spawn"]},
}
IGNORED_96 = [
    "elevatedLevel",
    "execHost",
    "execNode",
    "permissionMode",
    "sandboxMode",
    "agentRuntime",
]


async def test_patch_accepts_every_96_field_and_null_clears(operator):
    """9.6's fields are all accepted: those with a meaning here are stored (columns, or the
    session's `extra` under their 9.6 name) and shown in `entry`; the exec/host ones and
    agentRuntime are accepted, listed as `ignored`, and not stored (docs/sessions-admin.md)."""
    dev = await db(make_dev)()
    async with connected(operator.token) as client:
        res = await client.request(
            "sessions.patch", {"key": DEV, "expectedSessionId": dev.session_id, **FIELDS_96}
        )
        assert res["ok"], res
        payload = res["payload"]
        assert payload["ignored"] == IGNORED_96
        assert set(payload["updated"]) == set(FIELDS_96) - set(IGNORED_96) - {"category"} | {
            "group"
        }
        entry = payload["entry"]
        for name in ("autoLabel", "boardFace", "boardPresentation", "contextWindow", "fastMode"):
            assert entry[name] == FIELDS_96[name]
        for name in ("traceLevel", "responseUsage", "groupActivation", "toolOverrides"):
            assert entry[name] == FIELDS_96[name]
        assert entry["unread"] is True and isinstance(entry["markedUnreadAt"], int)
        assert entry["verboseLevel"] == "on" and entry["reasoningLevel"] == "stream"
        assert entry["pinned"] is True and entry["group"] == "Work"
        assert not set(IGNORED_96) & set(entry)
        session = await db(fetch)(DEV)
        assert not set(IGNORED_96) & set(session.extra)  # not stored
        assert session.reasoning_level == "stream" and session.extra["fastMode"] == "auto"
        cleared = await client.request(
            "sessions.patch",
            {
                "key": DEV,
                **{
                    name: None
                    for name in FIELDS_96
                    if name != "archived"  # a lifecycle action, asked for by name
                },
            },
        )
        assert cleared["ok"], cleared
    entry = cleared["payload"]["entry"]
    for name in ("autoLabel", "fastMode", "unread", "markedUnreadAt", "toolOverrides"):
        assert name not in entry
    session = await db(fetch)(DEV)
    assert session.reasoning_level == session.verbose_level == session.label == ""
    assert not {"fastMode", "unread", "markedUnreadAt", "statusTtlMinutes"} & set(session.extra)
    assert "attention" not in session.extra and session.status_note == ""
    assert session.pinned_at is None and session.send_policy == ""


async def test_marked_unread_guard(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        marked = await client.request("sessions.patch", {"key": DEV, "unread": True})
        at = marked["payload"]["entry"]["markedUnreadAt"]
        stale = await client.request(
            "sessions.patch", {"key": DEV, "unread": False, "expectedMarkedUnreadAt": at - 1}
        )
        assert stale["error"]["details"] == {"reason": "session-changed"}
        fresh = await client.request(
            "sessions.patch",
            {
                "key": DEV,
                "unread": False,
                "expectedMarkedUnreadAt": at,
                "expectedLifecycleRevision": 3,
            },
        )
        assert fresh["ok"], fresh
        assert "unread" not in fresh["payload"]["entry"]
        # Not marked: null is what to expect.
        again = await client.request(
            "sessions.patch", {"key": DEV, "unread": True, "expectedMarkedUnreadAt": None}
        )
    assert again["ok"], again


async def test_privileged_fields_need_an_operator_key(agent_main):
    await db(make_dev)()
    await db(set_config)(visibility="agent")
    async with connected(agent_main.token) as client:
        refused = await client.request(
            "sessions.patch", {"key": DEV, "toolOverrides": {"deny": ["sessions_send"]}}
        )
        sandbox = await client.request("sessions.patch", {"key": DEV, "sandboxMode": "off"})
        allowed = await client.request("sessions.patch", {"key": DEV, "fastMode": True})
    assert refused["error"] == {
        "code": "forbidden",
        "message": "toolOverrides can be patched with an operator key only",
    }
    assert sandbox["error"]["code"] == "forbidden"
    assert allowed["ok"] and allowed["payload"]["entry"]["fastMode"] is True


async def test_a_stale_expected_session_id_says_session_changed(operator):
    """9.6 §2.4: `INVALID_REQUEST` with `details.reason: "session-changed"` (reset), and the same
    details on patch and delete, with 9.6's texts."""
    await db(make_dev)()
    changed = {"reason": "session-changed"}
    async with connected(operator.token) as client:
        frames = [
            await client.request(method, {"key": DEV, "expectedSessionId": "old", **extra})
            for method, extra in (
                ("sessions.reset", {"reason": "reset"}),
                ("sessions.patch", {"label": "x"}),
                ("sessions.delete", {}),
            )
        ]
    assert [f["error"] for f in frames] == [
        {
            "code": "invalid_request",
            "message": f"Session {DEV} changed before {action}. Retry.",
            "details": changed,
        }
        for action in ("reset", "patch", "deletion")
    ]
    session = await db(fetch)(DEV)
    assert session.label == "dev" and not session.archived and session.last_seq == 2


async def test_patch_many(operator):
    dev = await db(make_dev)()
    await db(make_session)("agent:main:other")
    async with connected(operator.token) as client:
        res = await client.request(
            "sessions.patchMany",
            {
                "targets": [
                    {"key": DEV, "expectedSessionId": dev.session_id},
                    {"key": "agent:main:other"},
                ],
                "patch": {"archived": True},
            },
        )
        bad = await client.request("sessions.patchMany", {"targets": [{"key": DEV}], "patch": {}})
    assert res["payload"] == {
        "outcomes": [
            {"ok": True, "key": DEV},
            {
                "ok": False,
                "key": "agent:main:other",
                "error": "Session lifecycle action requires a durable session identity",
            },
        ]
    }
    assert bad["error"]["message"] == "patch must be an object with at least one field"


async def test_reset_then_delete(operator):
    dev = await db(make_dev)()
    async with connected(operator.token) as client:
        reset = await client.request("sessions.reset", {"key": DEV, "reason": "reset"})
        assert reset["ok"], reset
        new_id = reset["payload"]["sessionId"]
        assert reset["payload"]["previousSessionId"] == dev.session_id
        assert reset["payload"]["entry"]["sessionId"] == new_id
        stale = await client.request(
            "sessions.delete", {"key": DEV, "expectedSessionId": dev.session_id}
        )
        assert stale["error"]["message"] == f"Session {DEV} changed before deletion. Retry."
        agent = await client.request("sessions.delete", {"key": DEV, "archivedOnly": True})
        assert agent["error"]["message"] == (
            f"Session {DEV} is not archived. Archive it first, then delete it."
        )
        archived = await client.request(
            "sessions.patch", {"key": DEV, "archived": True, "expectedSessionId": new_id}
        )
        assert archived["ok"], archived
        deleted = await client.request(
            "sessions.delete", {"key": DEV, "expectedSessionId": new_id, "archivedOnly": True}
        )
    assert deleted["payload"] == {"ok": True, "key": DEV, "deleted": True, "archived": []}


async def test_agent_keys_must_archive_first(agent_main):
    await db(set_config)(visibility="agent")
    await db(make_dev)()
    async with connected(agent_main.token) as client:
        res = await client.request("sessions.delete", {"key": DEV, "archivedOnly": False})
        res2 = await client.request("sessions.delete", {"key": DEV})
    assert res["error"]["message"] == "archivedOnly must be true for this key"
    assert res2["error"]["message"] == (
        f"Session {DEV} is not archived. Archive it first, then delete it."
    )


async def test_groups_and_owner(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        put = await client.request(
            "sessions.groups.put", {"names": ["Work", "Home"], "sectionOrder": []}
        )
        listed = await client.request("sessions.groups.list", {})
        renamed = await client.request("sessions.groups.rename", {"name": "Work", "to": "Jobs"})
        deleted = await client.request("sessions.groups.delete", {"name": "Jobs"})
        bad = await client.request("sessions.groups.put", {"names": ["a", ""]})
        owner = await client.request(
            "sessions.assignOwner", {"key": DEV, "owner": {"type": "human", "id": "ada"}}
        )
        no_owner = await client.request("sessions.assignOwner", {"key": DEV, "owner": {}})
    assert put["payload"]["groups"] == [
        {"name": "Work", "position": 0},
        {"name": "Home", "position": 1},
    ]
    assert listed["payload"] == {"groups": put["payload"]["groups"]}
    assert renamed["payload"]["groups"][0]["name"] == "Jobs"
    assert deleted["payload"]["groups"] == [{"name": "Home", "position": 1}]
    assert bad["error"]["message"] == "names[1] required"
    assert owner["payload"]["owner"] == {"type": "human", "id": "ada"}
    assert no_owner["error"]["message"] == "assign_owner requires ownerType and ownerId"


async def test_hidden_sessions_are_forbidden(outsider):
    await db(make_dev)()
    async with connected(outsider.token) as client:
        res = await client.request("sessions.reset", {"key": DEV})
    assert res["error"] == {
        "code": "forbidden",
        "message": f"Session not visible from session tools: {DEV}",
    }


async def test_a_team_members_connection_reads_and_changes_nothing(agents, django_user_model):
    """The browser's /ws/ (a signed-in Viewer, identity.requester_for_user) lists, reads and
    follows; every change is refused with one text, and nothing changes (a Viewer could patch,
    archive, delete and regroup sessions over /ws/ before)."""

    def viewer_cookie():
        user = django_user_model.objects.create_user("viewer", password="pw-123456")
        user.groups.add(admin_groups()["Viewers"])
        browser = DjangoClient()
        browser.force_login(user)
        session = make_dev()
        session.category = "Work"
        session.save(update_fields=["category"])
        SessionGroup.objects.create(name="Work", position=0)
        return browser.cookies["sessionid"].value, session.session_id

    cookie, session_id = await db(viewer_cookie)()
    headers = [
        (b"cookie", f"sessionid={cookie}".encode()),
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
    ]
    changes = [
        ("sessions.patch", {"key": DEV, "label": "x", "pinned": True}),
        ("sessions.patch", {"key": DEV, "archived": True, "expectedSessionId": session_id}),
        ("sessions.patchMany", {"targets": [{"key": DEV}], "patch": {"label": "x"}}),
        ("sessions.reset", {"key": DEV}),
        ("sessions.delete", {"key": DEV, "expectedSessionId": session_id}),
        ("sessions.assignOwner", {"key": DEV, "owner": {"type": "human", "id": "ada"}}),
        ("sessions.groups.put", {"names": ["Mine"]}),
        ("sessions.groups.rename", {"name": "Work", "to": "Gone"}),
        ("sessions.groups.delete", {"name": "Work"}),
    ]
    async with connected(headers=headers) as client:
        reads = [
            await client.request("sessions.list", {}),
            await client.request("sessions.get", {"key": DEV}),
            await client.request("sessions.groups.list", {}),
        ]
        refused = [await client.request(method, params) for method, params in changes]
    assert all(r["ok"] for r in reads), reads
    for (method, _), res in zip(changes, refused, strict=True):
        assert res.get("error") == {"code": "forbidden", "message": READ_ONLY_TEXT}, (method, res)
    session = await db(fetch)(DEV)
    assert (session.label, session.category, session.pinned_at, session.archived_at) == (
        "dev", "Work", None, None
    )  # fmt: skip
    assert session.session_id == session_id and session.extra.get("owner") is None


# --- sessions.preview, sessions.get, sessions.resolve ----------------------------------------


async def test_preview(operator):
    await db(set_config)(visibility="agent")  # the history guard applies to operators too
    await db(make_dev)()
    await db(make_session)("agent:main:empty")
    async with connected(operator.token) as client:
        res = await client.request(
            "sessions.preview",
            {"keys": [DEV, "agent:main:empty", "agent:main:nope", 5], "limit": 1, "maxChars": 20},
        )
        bad = await client.request("sessions.preview", {"keys": []})
        small = await client.request("sessions.preview", {"keys": [DEV], "maxChars": 19})
    previews = res["payload"]["previews"]
    assert previews == [
        {"key": DEV, "status": "ok", "items": [{"role": "assistant", "text": "hi there"}]},
        {"key": "agent:main:empty", "status": "empty", "items": []},
        {"key": "agent:main:nope", "status": "missing", "items": []},
        {"key": 5, "status": "error", "items": []},
    ]
    assert isinstance(res["payload"]["ts"], int)
    assert bad["error"]["message"] == "keys must be a non-empty array"
    assert small["error"]["message"] == "maxChars must be at least 20"


async def test_preview_of_a_hidden_session_is_missing(outsider):
    await db(make_dev)()
    async with connected(outsider.token) as client:
        res = await client.request("sessions.preview", {"keys": [DEV]})
    assert res["payload"]["previews"] == [{"key": DEV, "status": "missing", "items": []}]


async def test_get(operator):
    await db(set_config)(visibility="agent")  # the history guard applies to operators too
    await db(make_dev)()
    async with connected(operator.token) as client:
        res = await client.request("sessions.get", {"key": DEV, "limit": 1})
        alias = await client.request("sessions.get", {"sessionKey": DEV})
        bad = await client.request("sessions.get", {"key": DEV, "limit": 0})
    assert [m["role"] for m in res["payload"]["messages"]] == ["assistant"]
    assert res["payload"]["messages"][0]["__openclaw"] == {"seq": 2}
    assert len(alias["payload"]["messages"]) == 2
    assert bad["error"]["message"] == "limit must be at least 1"


async def test_get_masks_credentials_but_for_an_operator(operator, agent_main):
    """sessions.get answers the stored messages to the owner (who may export raw); any other
    caller gets credential-like text masked, as sessions_history and the export mask it."""
    secret = "sk-live-1234567890abcdefghijklmnopqrstuvwxyz"

    def prep():
        set_config(visibility="agent")
        add_messages(make_dev(), user(f"the key is {secret}"))

    await db(prep)()
    async with connected(agent_main.token) as client:
        masked = (await client.request("sessions.get", {"key": DEV}))["payload"]["messages"]
    async with connected(operator.token) as client:
        stored = (await client.request("sessions.get", {"key": DEV}))["payload"]["messages"]
    assert stored[-1]["content"] == f"the key is {secret}"
    assert len(masked) == 3 and masked[:2] == stored[:2]  # only the secret's message differs
    assert masked[-1]["content"].startswith("the key is ") and secret not in str(masked)


async def test_resolve(operator):
    await db(set_config)(visibility="agent")  # the history guard applies to operators too
    dev = await db(make_dev)()
    async with connected(operator.token) as client:
        by_key = await client.request("sessions.resolve", {"key": DEV})
        by_id = await client.request("sessions.resolve", {"sessionId": dev.session_id})
        by_label = await client.request("sessions.resolve", {"label": "dev"})
        miss = await client.request("sessions.resolve", {"key": "agent:main:nope"})
        allowed = await client.request(
            "sessions.resolve", {"key": "agent:main:nope", "allowMissing": True}
        )
        both = await client.request("sessions.resolve", {"key": DEV, "label": "dev"})
        typed = await client.request("sessions.resolve", {"label": "dev", "agentId": 5})
    expected = {
        "ok": True,
        "key": DEV,
        "agentId": "main",
        "sessionId": dev.session_id,
        "label": "dev",
    }
    assert by_key["payload"] == by_id["payload"] == by_label["payload"] == expected
    assert miss["error"] == {"code": "not_found", "message": "No session found: agent:main:nope"}
    assert allowed["payload"] == {"ok": False, "candidates": []}
    assert both["error"]["message"] == "exactly one of key, sessionId or label is required"
    assert typed["error"]["message"] == "agentId must be a non-empty string"  # not ignored


# --- cold transcripts (9.6 §6.1): preview says cold; reads restore -----------------------------


@pytest.fixture
def cold_dir(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    return settings.COLD_STORAGE_DIR


def make_cold_dev():
    set_config(visibility="agent")  # the history guard applies to operators too
    session = make_dev()
    assert cold_storage.freeze(session.pk)
    return fetch(DEV)


def texts(messages: list[dict]) -> list[str]:
    return [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in messages
    ]


def refreeze(key: str) -> bool:
    """A day later: the schedule may move it again."""
    Session.objects.filter(key=key).update(hot_until=None)
    return cold_storage.freeze(fetch(key).pk)


async def test_preview_of_a_cold_session_says_cold_and_leaves_it_cold(operator, cold_dir):
    await db(make_cold_dev)()
    async with connected(operator.token) as client:
        res = await client.request("sessions.preview", {"keys": [DEV]})
    assert res["payload"]["previews"] == [{"key": DEV, "status": "cold", "items": []}]
    assert (await db(fetch)(DEV)).cold_at is not None


async def test_sessions_get_restores_a_cold_transcript(operator, cold_dir):
    await db(make_cold_dev)()
    async with connected(operator.token) as client:
        got = await client.request("sessions.get", {"key": DEV})
        preview = await client.request("sessions.preview", {"keys": [DEV]})
    assert texts(got["payload"]["messages"]) == ["hello", "hi there"]
    assert preview["payload"]["previews"][0]["status"] == "ok"
    session = await db(fetch)(DEV)
    assert session.cold_at is None and session.hot_until is not None
    assert not list(cold_dir.iterdir())


async def test_chat_history_and_its_delta_restore_a_cold_transcript(operator, cold_dir):
    await db(make_cold_dev)()
    async with connected(operator.token) as client:
        tail = await client.request("chat.history", {"sessionKey": DEV})
    assert texts(tail["payload"]["messages"]) == ["hello", "hi there"]
    # A cursor taken before a later freeze, used after it: the delta reads restored rows.
    cursor = tail["payload"]["deltaCursor"]
    assert await db(refreeze)(DEV)
    async with connected(operator.token) as client:
        await client.request("sessions.get", {"key": DEV})  # thaws
    assert await db(refreeze)(DEV)
    session = await db(fetch)(DEV)
    await db(add_messages)(session, user("while cold"))
    async with connected(operator.token) as client:
        delta = await client.request("chat.history", {"sessionKey": DEV, "cursor": cursor})
    assert delta["payload"]["kind"] == "delta"
    assert texts(delta["payload"]["messages"]) == ["while cold"]
    session = await db(fetch)(DEV)
    assert session.cold_at is None and await db(session.messages.count)() == 3


async def test_a_lost_archive_is_an_explicit_error_over_the_socket(operator, cold_dir):
    session = await db(make_cold_dev)()
    (cold_dir / session.cold_file).unlink()
    async with connected(operator.token) as client:
        got = await client.request("sessions.get", {"key": DEV})
        history = await client.request("chat.history", {"sessionKey": DEV})
    text = (
        f"Transcript is in cold storage and its archive {session.cold_file} is missing; "
        "an operator must restore that file under COLD_STORAGE_DIR."
    )
    assert got["ok"] is False and got["error"]["message"] == text
    assert history["ok"] is False and history["error"]["message"] == text


async def test_resuming_a_cold_transcript_from_since_replays_it(operator, cold_dir):
    await db(make_cold_dev)()
    async with connected(operator.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": DEV, "since": 0})
        assert res["payload"]["lastSeq"] == 2
        replayed = [await client.event() for _ in range(2)]
    assert [e["payload"]["messageSeq"] for e in replayed] == [1, 2]
    assert (await db(fetch)(DEV)).cold_at is None
