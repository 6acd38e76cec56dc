"""The browser's search box (issue 14: "The transcript browser's search uses the same function"):
its message hits are sessions_search's own (reads/message_search.py find_messages, which the tool calls): ranked,
redacted snippets, rows history hides left out, each a link to the message on its transcript
page; over the sessions the other filters select (a viewer may read them all)."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from sessions_app.models import ApiKey
from sessions_app.reads import message_search
from sessions_app.ui import queries
from tests.conftest import Api, add_messages, assistant, make_session, set_config, user

HIT = re.compile(
    r'<li class="hit role-(\w+)" data-key="([^"]+)" data-seq="(\d+)" data-message-id="(\w+)">'
    r'\s*<a class="hit-link" href="([^"]+)">.*?<span class="hit-snippet">(.*?)</span>',
    re.S,
)

# A row of the session list: its data-key and the key it shows (templates/ui/_rows.html).
ROW = re.compile(
    r'<li class="srow[^"]*" id="row-[^"]*" data-key="([^"]+)".*?'
    r'<span class="srow-key mono">([^<]*)</span>',
    re.S,
)


def hits_on(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return [
        {
            "role": role,
            "sessionKey": key,
            "seq": int(seq),
            "messageId": message_id,
            "url": html_lib.unescape(url),
            # The matched words are marked (issue 29.5); the text is the tool's snippet.
            "snippet": html_lib.unescape(re.sub(r"</?mark>", "", snippet)),
        }
        for role, key, seq, message_id, url, snippet in HIT.findall(response.content.decode())
    ]


def test_message_hits_are_ranked_and_link_to_the_message(viewer, world):
    add_messages(world["dev"], user("nightly nightly nightly: is it flaky?"))
    hits = hits_on(viewer.get("/?q=nightly"))
    assert {h["sessionKey"] for h in hits} == {"agent:main:discord:group:dev"}
    # The word thrice ranks first (the other two tie on PostgreSQL's ts_rank, not on bm25).
    assert hits[0]["seq"] == 3 and {h["seq"] for h in hits[1:]} == {1, 2}
    first = hits[0]
    assert (
        first["messageId"] == "00000003"
        and first["snippet"] == "nightly nightly nightly: is it flaky?"
    )
    assert first["url"] == "/sessions/agent:main:discord:group:dev/?at=3#seq-3"
    page = viewer.get(first["url"])
    assert page.status_code == 200 and 'id="seq-3"' in page.content.decode()


def test_the_hits_are_what_sessions_search_answers(viewer, world, agents):
    """Same query, same sessions (all of them, archived too): the same hits, in the same order,
    with the same snippets, as GET /api/v1/search/ gives an operator who sees everything."""
    set_config(visibility="all", a2a_enabled=True)
    add_messages(world["old"], user("an archived nightly note"))
    make_session("agent:other:main")
    add_messages(make_session("agent:other:dev"), assistant("nightly deploys on other"))
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    api = Api(viewer.__class__(), token)
    response = api.get("/api/v1/search/", {"q": "nightly", "includeTools": "true", "limit": 25})
    assert response.status_code == 200, response.content
    expected = response.json()["results"]
    shown = hits_on(viewer.get("/?q=nightly&archived=all"))
    assert len(shown) == len(expected) == 4
    assert [(h["sessionKey"], h["messageId"], h["snippet"]) for h in shown] == [
        (r["sessionKey"], r["messageId"], r["snippet"]) for r in expected
    ]


def test_the_browser_calls_the_search_the_tool_calls(viewer, world, monkeypatch):
    calls = []
    real = message_search.find_messages

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(queries, "find_messages", spy)
    viewer.get("/?q=nightly")
    (call,) = calls
    assert call["include_tools"] is True and call["limit"] == message_search.MAX_LIMIT


def test_snippets_are_redacted(viewer, agents):
    secret = "sk-" + "a1b2c3d4" * 6
    add_messages(make_session("cron:keys"), user(f"the rotation key is {secret} please"))
    (hit,) = hits_on(viewer.get("/?q=rotation"))
    assert "sk-a1b" in hit["snippet"] and secret not in hit["snippet"]
    assert secret not in viewer.get("/?q=rotation").content.decode()


def test_tool_results_are_hits_as_the_transcript_shows_them(viewer, world):
    (hit,) = hits_on(viewer.get("/?q=standup+title"))
    assert hit["role"] == "toolResult" and hit["sessionKey"] == "agent:main:main"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=nightly&kind=cron", []),
        ("q=nightly&kind=group", ["agent:main:discord:group:dev"] * 2),
        ("q=nightly&channel=signal", []),
        ("q=archived+nightly", []),  # the archived session is not searched by default
        ("q=archived+nightly&archived=true", ["agent:main:signal:group:old"]),
        ("q=archived+nightly&archived=all", ["agent:main:signal:group:old"]),
    ],
)
def test_the_filters_select_the_sessions_searched(viewer, world, query, expected):
    add_messages(world["old"], user("an archived nightly note"))
    assert [h["sessionKey"] for h in hits_on(viewer.get(f"/?{query}"))] == expected


def test_more_than_25_hits_say_so(viewer, agents):
    add_messages(make_session("cron:many"), *[user(f"apple {i}") for i in range(30)])
    response = viewer.get("/?q=apple")
    assert len(hits_on(response)) == 25 and b'id="hits-more"' in response.content


def test_no_text_no_hits_section_and_an_empty_search_says_so(viewer, world):
    assert b'id="message-hits"' not in viewer.get("/").content
    nothing = viewer.get("/?q=zzzznothing")
    assert b'id="no-hits"' in nothing.content and hits_on(nothing) == []
    assert b'id="no-hits"' in viewer.get("/?q=%27%3A%2A%21").content  # punctuation only


def test_later_pages_of_sessions_do_not_repeat_the_hits(viewer, world):
    add_messages(make_session("cron:a", label="nightly"), user("x"))
    page = viewer.get("/?q=nightly&after=1.1")
    assert page.status_code == 200 and b'id="message-hits"' not in page.content


@pytest.mark.parametrize(
    ("scope", "stored", "shown"),
    [
        ("per-sender", "agent:main:main", "agent:main:main"),
        ("global", "global", "main"),  # the global session reads as `main` (display_key)
    ],
)
def test_the_key_settings_name_the_sessions(viewer, agents, scope, stored, shown):
    """A hit names its session as the rows do (display form), and the link opens it."""
    set_config(session_scope=scope)
    session = make_session("main")
    assert session.key == stored
    add_messages(session, user("a kumquat on main"))
    (hit,) = hits_on(viewer.get("/?q=kumquat"))
    rows = ROW.findall(viewer.get("/").content.decode())
    assert rows == [(shown, shown)]  # the list page's one row: its data-key and its key line
    assert hit["sessionKey"] == shown
    assert hit["url"] == f"/sessions/{shown}/?at=1#seq-1"
    assert viewer.get(hit["url"]).status_code == 200
