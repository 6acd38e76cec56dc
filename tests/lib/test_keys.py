"""Session-key grammar (reference §1, api.md §1): every key shape the reference names."""

import pytest

from openclaw_common import keys
from openclaw_common.keys import KeySettings

GLOBAL = KeySettings(scope="global")
CUSTOM_MAIN = KeySettings(main_key="home")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("main", "main"),
        ("", "main"),
        ("   ", "main"),
        ("Research", "research"),
        ("ops_bot-2", "ops_bot-2"),
        ("My Agent!", "my-agent"),
        ("--weird--", "weird"),
        ("!!!", "main"),
        ("a" * 80, "a" * 64),
    ],
)
def test_normalize_agent_id(raw, expected):
    assert keys.normalize_agent_id(raw) == expected


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("agent:main:main", ("main", "main")),
        ("AGENT:Main:Discord:Group:Dev", ("main", "discord:group:dev")),
        ("agent::main::cron:job", ("main", "cron:job")),
        ("agent:main", None),
        ("cron:job", None),
        ("main", None),
        ("", None),
    ],
)
def test_parse_agent_key_drops_empty_segments_and_lowercases(key, parsed):
    assert keys.parse_agent_key(key) == parsed


@pytest.mark.parametrize(
    ("raw", "agent", "settings", "expected"),
    [
        # the literal "main" is the caller's own main session
        ("main", "research", KeySettings(), "agent:research:main"),
        ("MAIN", None, KeySettings(), "agent:main:main"),
        ("home", "ops", CUSTOM_MAIN, "agent:ops:home"),
        # scope=global aliases main to global
        ("main", "research", GLOBAL, "global"),
        # reserved keys stay as they are
        ("global", None, KeySettings(), "global"),
        ("Unknown", None, KeySettings(), "unknown"),
        # canonical keys are re-joined
        ("agent:Main:Discord:group:Dev", None, KeySettings(), "agent:main:discord:group:dev"),
        ("agent:main:main", "research", KeySettings(), "agent:main:main"),
        # bare keys belong to the default agent
        ("cron:daily", "research", KeySettings(), "agent:main:cron:daily"),
        (
            "hook:0b9e7f1a-2c3d-4e5f-8a9b-0c1d2e3f4a5b",
            None,
            KeySettings(),
            "agent:main:hook:0b9e7f1a-2c3d-4e5f-8a9b-0c1d2e3f4a5b",
        ),
        ("node-mac-mini", None, KeySettings(), "agent:main:node-mac-mini"),
        ("discord:group:dev", None, KeySettings(), "agent:main:discord:group:dev"),
        ("cron:daily", None, KeySettings(default_agent_id="ops"), "agent:ops:cron:daily"),
        ("  telegram:group:-100123  ", None, KeySettings(), "agent:main:telegram:group:-100123"),
    ],
)
def test_canonical_key(raw, agent, settings, expected):
    assert keys.canonical_key(raw, agent_id=agent, settings=settings) == expected


@pytest.mark.parametrize(
    "raw", ["", "  ", "agent:", "agent:main", "agent::", "agent:Bad Id:x", "a\x00b", "x" * 600]
)
def test_canonical_key_refuses_malformed_text(raw):
    with pytest.raises(keys.InvalidKey):
        keys.canonical_key(raw)


@pytest.mark.parametrize(
    ("key", "settings", "kind"),
    [
        ("agent:main:main", KeySettings(), "main"),  # api.md: not the raw-string quirk of §1.4
        ("agent:research:main", KeySettings(), "main"),
        ("agent:main:home", CUSTOM_MAIN, "main"),
        ("agent:main:main", CUSTOM_MAIN, "other"),
        ("global", GLOBAL, "main"),
        ("agent:main:cron:daily", KeySettings(), "cron"),
        ("agent:main:cron:daily:run:42", KeySettings(), "cron"),
        ("agent:main:hook:abc", KeySettings(), "hook"),
        ("agent:main:node-mac", KeySettings(), "node"),
        ("agent:main:node:mac", KeySettings(), "node"),
        ("agent:main:discord:group:dev", KeySettings(), "group"),
        ("agent:main:slack:channel:c01", KeySettings(), "group"),
        ("agent:main:telegram:group:-100:topic:7", KeySettings(), "group"),
        ("agent:main:whatsapp:direct:+1555", KeySettings(), "other"),
        ("agent:main:direct:alice", KeySettings(), "other"),
        ("agent:main:subagent:5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f", KeySettings(), "other"),
        ("agent:main:acp:codex", KeySettings(), "other"),
        ("agent:group:main", KeySettings(), "main"),  # an agent named "group" is not a group
    ],
)
def test_classify_kind(key, settings, kind):
    assert keys.classify_kind(key, settings=settings) == kind


def test_classify_kind_uses_chat_type_of_the_entry():
    assert keys.classify_kind("agent:main:dev-room", chat_type="group") == "group"
    assert keys.classify_kind("agent:main:dev-room", chat_type="channel") == "group"
    assert keys.classify_kind("agent:main:dev-room", chat_type="direct") == "other"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "cron", "key": "agent:main:cron:x", "channel": "discord"}, "internal"),
        ({"kind": "hook", "key": "agent:main:hook:x"}, "internal"),
        ({"kind": "node", "key": "agent:main:node-x"}, "internal"),
        ({"kind": "group", "key": "agent:main:discord:group:dev", "channel": "Discord"}, "discord"),
        ({"kind": "other", "key": "agent:main:direct:bob", "last_channel": "whatsapp"}, "whatsapp"),
        (
            {
                "kind": "other",
                "key": "agent:main:x",
                "delivery_channel": "telegram",
                "last_channel": "signal",
            },
            "telegram",
        ),
        ({"kind": "other", "key": "agent:main:x", "origin_provider": "imessage"}, "imessage"),
        ({"kind": "group", "key": "agent:main:slack:channel:c01"}, "slack"),
        ({"kind": "main", "key": "agent:main:main"}, "unknown"),
        ({"kind": "other", "key": "agent:main:x", "channel": "  "}, "unknown"),
    ],
)
def test_derive_channel(fields, expected):
    assert keys.derive_channel(**fields) == expected


@pytest.mark.parametrize(
    ("value", "is_key", "is_id"),
    [
        ("main", True, False),
        ("global", True, False),
        ("unknown", True, False),
        ("agent:main:main", True, False),
        ("cron:job", True, False),
        ("hook:abc", True, False),
        ("node-mac", True, False),
        ("node:mac", True, False),
        ("acp:codex", True, False),
        ("discord:group:dev", True, False),
        ("slack:channel:c01", True, False),
        ("5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f", False, True),
        (" 5D0C3A52-8F1E-4C7E-9A8E-1F2B3C4D5E6F ", False, True),
        ("my-label", False, False),
    ],
)
def test_looks_like_session_key_or_id(value, is_key, is_id):
    assert keys.looks_like_session_key(value) is is_key
    assert keys.looks_like_session_id(value) is is_id


def test_subagent_keys_and_depth():
    child = "agent:research:subagent:5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"
    assert keys.is_subagent_key(child)
    assert keys.is_subagent_key("subagent:abc")
    assert not keys.is_subagent_key("agent:main:main")
    assert keys.subagent_depth_from_key(child) == 1
    assert keys.subagent_depth_from_key(child + ":subagent:abc") == 2


def test_cron_run_keys():
    assert keys.is_cron_run_key("agent:main:cron:daily:run:42")
    assert not keys.is_cron_run_key("agent:main:cron:daily")


def test_display_key_hides_global_behind_main():
    assert keys.display_key("global", GLOBAL) == "main"
    assert keys.display_key("global", KeySettings()) == "global"
    assert keys.display_key("agent:main:main", GLOBAL) == "agent:main:main"


def test_main_session_key():
    assert keys.main_session_key("Research") == "agent:research:main"
    assert keys.main_session_key("ops", CUSTOM_MAIN) == "agent:ops:home"
    assert keys.main_session_key("ops", GLOBAL) == "global"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"delivery_context": None}, None),
        ({"delivery_context": {"channel": " ", "to": ""}}, None),
        (
            {
                "delivery_context": {
                    "channel": "discord",
                    "to": "channel:1",
                    "accountId": "a",
                    "threadId": 7.9,
                }
            },
            {"channel": "discord", "to": "channel:1", "accountId": "a", "threadId": 7},
        ),
        (
            {"delivery_context": {"channel": "discord", "to": 5, "threadId": True}},
            {"channel": "discord"},
        ),
        # last* fields are the primary source
        (
            {
                "delivery_context": {"channel": "discord", "to": "old"},
                "last_channel": "discord",
                "last_to": "new",
            },
            {"channel": "discord", "to": "new"},
        ),
        # channels differ: to/accountId/threadId only from the primary
        (
            {
                "delivery_context": {"channel": "discord", "to": "old", "accountId": "a"},
                "last_channel": "slack",
            },
            {"channel": "slack"},
        ),
        (
            {
                "delivery_context": None,
                "last_channel": "webchat",
                "last_to": " user:1 ",
                "last_thread_id": "9",
            },
            {"channel": "webchat", "to": "user:1", "threadId": "9"},
        ),
    ],
)
def test_normalize_delivery_context(kwargs, expected):
    assert keys.normalize_delivery_context(**kwargs) == expected


def test_a_bare_key_must_still_fit_once_prefixed():
    assert keys.canonical_key("cron:" + "x" * 495) == "agent:main:cron:" + "x" * 495  # 511
    with pytest.raises(keys.InvalidKey):
        keys.canonical_key("cron:" + "x" * 500)


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("5D0C3A52-8F1E-4C7E-9A8E-1F2B3C4D5E6F", "5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"),
        ("Legacy-Session.01", "Legacy-Session.01"),
        (" abc ", "abc"),
        ("-abc", None),
        ("a b", None),
        ("../x", None),
        ("x" * 129, None),
        (42, None),
    ],
)
def test_normalize_session_id(raw, stored):
    assert keys.normalize_session_id(raw) == stored
