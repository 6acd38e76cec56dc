"""Issue 29.5: the search box's two answers never contradict each other, and the words it
matched are marked. Message hits are messages containing every word; the sessions below are
those whose key, label or name contain the text; an empty one of the two says which it is and
points at the other."""

from __future__ import annotations

import pytest

from tests.conftest import add_messages, make_session, user

pytestmark = pytest.mark.django_db


def no_rows(html: str) -> str:
    start = html.index('id="no-rows"')
    return html[start : html.index("</p>", start)]


def test_a_message_hit_with_no_matching_session_name_does_not_say_nothing_matches(viewer, agents):
    add_messages(make_session("cron:nightly", displayName="nightly"), user("the quarterly report"))
    html = viewer.get("/?q=quarterly").content.decode()
    assert 'class="hit-link"' in html
    assert "No sessions match these filters." not in html
    assert (
        "No session's key, label or name contains “quarterly”; the messages above do contain it."
        in no_rows(html)
    )
    assert "Sessions whose key, label or name match" in html


def test_no_hit_anywhere_says_so_in_both_places(viewer, agents):
    make_session("cron:nightly", displayName="nightly")
    html = viewer.get("/?q=zzznothing").content.decode()
    assert 'id="no-hits"' in html
    assert "No session's key, label or name contains “zzznothing”." in no_rows(html)


def test_the_matched_words_are_marked_in_snippets_titles_and_keys(viewer, agents):
    session = make_session("cron:nightly", displayName="Nightly build")
    add_messages(session, user("The NIGHTLY build failed; rebuilding nightly-ish things"))
    html = viewer.get("/?q=nightly").content.decode()
    snippet = html[html.index('class="hit-snippet"') :]
    snippet = snippet[: snippet.index("</span>")]
    assert "The <mark>NIGHTLY</mark> build failed; rebuilding <mark>nightly</mark>-ish" in snippet
    row = html[html.index('data-key="agent:main:cron:nightly"') :]
    assert '<strong class="srow-title"><mark>Nightly</mark> build</strong>' in row
    assert '<span class="srow-key mono">agent:main:cron:<mark>nightly</mark></span>' in row


def test_marks_escape_what_they_wrap(viewer, agents):
    make_session("cron:x", displayName="<b>tag</b> tag")
    html = viewer.get("/?q=tag").content.decode()
    assert "&lt;b&gt;<mark>tag</mark>&lt;/b&gt; <mark>tag</mark>" in html
