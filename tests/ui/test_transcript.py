"""The transcript view: every kind of item, paging by seq, deep links, the side panel, the JSONL
download, images, bad input and query counts."""

import base64
import json
import re

import pytest

from sessions_app import transcript
from sessions_app.models import Run, Session
from tests.conftest import add_messages, assistant, make_session, tool_result, user
from tests.runs.helpers import completed_spawn
from tests.ui.conftest import PNG

MAIN = "/sessions/agent:main:main/"


def seqs_on(response) -> list[int]:
    return [
        int(s)
        for s in re.findall(r'<article class="msg[^"]*" id="seq-(\d+)"', response.content.decode())
    ]


def article(html: str, seq: int) -> str:
    start = html.index(f'id="seq-{seq}"')
    return html[start : html.index("</article>", start)]


def test_messages_by_role_with_timestamps(viewer, world):
    response = viewer.get(MAIN)
    assert response.status_code == 200
    html = response.content.decode()
    assert seqs_on(response) == [1, 2, 3, 4, 5, 6]
    first = article(html, 1)
    assert "role-user" in html[html.index('id="seq-1"') - 40 : html.index('id="seq-1"')]
    assert '<span class="role">User</span>' in first
    # One time rule (issue 29.5): how long ago, the absolute UTC time on hover.
    assert re.search(
        r'<time class="rel" datetime="\d{4}-\d\d-\d\dT[^"]+" data-ms="\d+" title="[^"]+ UTC">'
        r"(just now|\d+ \w+ ago)</time>",
        first,
    )
    assert "What&#x27;s on my calendar?" in first


def test_a_tool_call_and_its_result_are_one_card_both_pretty_printed(viewer, world):
    """Issue 17.3: the call and its result in one card (open: both are short), the result's
    JSON indented as the arguments are; the result's own place is a quiet line."""
    html = viewer.get(MAIN).content.decode()
    call = article(html, 2)
    assert (
        '<details class="tool tool-call has-result" open><summary>Tool call '
        "<code>calendar_list</code>"
    ) in call
    assert '<pre class="json">{\n  &quot;' in call  # indented (jsonb may reorder keys)
    assert (
        "&quot;day&quot;: &quot;today&quot;" in call and "&quot;tz&quot;: &quot;UTC&quot;" in call
    )
    assert 'data-result-seq="3"' in call and "Standup" in call
    assert '<pre class="json">[\n  {\n    &quot;' in call  # the result, indented too
    result = article(html, 3)
    assert 'class="msg quiet role-toolresult is-paired"' in html
    assert "result of <code>calendar_list</code> shown with its call" in result
    assert "Standup" not in result


def test_a_long_call_card_is_folded_and_an_unpaired_result_stands_alone(viewer, agents):
    session = make_session("cron:tools")
    rows = [{"n": i, "text": "row"} for i in range(40)]
    add_messages(
        session,
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "db_query", "arguments": {}}],
        },
        {**tool_result(json.dumps(rows), call_id="c1", name="db_query")},
        {**tool_result("orphan output", call_id="gone", name="exec")},
    )
    html = viewer.get("/sessions/agent:main:cron:tools/").content.decode()
    call = article(html, 1)
    assert '<details class="tool tool-call has-result">' in call  # long: folded
    assert "&quot;n&quot;: 39" in call
    alone = article(html, 3)
    assert '<details class="tool tool-result">' in alone and "orphan output" in alone


def test_reply_skip_and_announce_skip_are_quiet_markers(viewer, agents):
    session = make_session("cron:a2a")
    add_messages(session, user("ping"), assistant("REPLY_SKIP"), assistant("ANNOUNCE_SKIP"))
    html = viewer.get("/sessions/agent:main:cron:a2a/").content.decode()
    skip, announce = article(html, 2), article(html, 3)
    assert "is-skip" in html[html.index('id="seq-2"') - 80 : html.index('id="seq-2"')]
    assert "reply step skipped (<code>REPLY_SKIP</code>)" in skip
    assert "announce skipped (<code>ANNOUNCE_SKIP</code>)" in announce
    assert '<span class="role">' not in skip + announce


def test_a_completion_prompt_and_its_no_reply_are_folded_lines(viewer, agent_main):
    """Issue 29.4: a parent's real completion turn (its ~25-line prompt, its NO_REPLY) reads as
    two folded lines with the prompt behind "show prompt"; the sub-agent's report stays a card."""
    make_session("main", lastChannel="webchat")
    completed_spawn(agent_main, label="papers")
    html = viewer.get(MAIN).content.decode()
    assert seqs_on(viewer.get(MAIN)) == [1, 2, 3]
    prompt, reply, report = article(html, 1), article(html, 2), article(html, 3)
    head = html[html.index('id="seq-1"') - 80 : html.index('id="seq-1"')]
    assert "is-internal" in head and "role-user" in head
    summary = prompt[prompt.index("<summary>") : prompt.index("</summary>")]
    assert "— Sub-agent papers finished: success</span> · " in summary
    assert "show prompt" in summary
    # The prompt is there, folded (no `open`), not a User bubble's header.
    assert '<details class="internal">' in prompt and "A background task completed." in prompt
    assert '<header class="msg-head">' not in prompt
    assert "Replied NO_REPLY (nothing to send)" in reply and "show message" in reply
    assert "is-internal" not in html[html.index('id="seq-3"') - 80 : html.index('id="seq-3"')]
    assert "Sub-agent report" in report


def test_announce_prompts_are_folded_in_the_child(viewer, agent_main):
    child = completed_spawn(agent_main)
    html = viewer.get(f"/sessions/{child}/").content.decode()
    announce = article(html, 3)
    assert "— Sub-agent announce step</span>" in announce and "show prompt" in announce
    assert "is-internal" not in article(html, 1)  # the task itself is the child's conversation


def test_thinking_is_behind_a_toggle_and_its_signature_is_not_shown(viewer, world):
    call = article(viewer.get(MAIN).content.decode(), 2)
    assert '<details class="thinking"><summary>Thinking</summary>' in call
    assert "Look it up." in call and "sig" not in call.replace("signature", "")


def test_images_are_thumbnails_never_base64_text(viewer, world):
    html = viewer.get(MAIN).content.decode()
    assert PNG not in html and "base64" not in html
    image = article(html, 4)
    assert '<img src="/sessions/agent:main:main/images/4/1/"' in image and 'loading="lazy"' in image
    response = viewer.get("/sessions/agent:main:main/images/4/1/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content == base64.b64decode(PNG)
    assert response["X-Content-Type-Options"] == "nosniff"


def test_only_raster_images_are_served(viewer, agents):
    session = make_session("cron:svg")
    svg = base64.b64encode(b"<svg onload=alert(1)></svg>").decode()
    add_messages(
        session,
        {"role": "user", "content": [{"type": "image", "data": svg, "mimeType": "image/svg+xml"}]},
    )
    html = viewer.get("/sessions/agent:main:cron:svg/").content.decode()
    assert "<img" not in html and "image image/svg+xml" in html
    assert viewer.get("/sessions/agent:main:cron:svg/images/1/0/").status_code == 404


@pytest.mark.parametrize("path", ["images/99/0/", "images/4/0/", "images/4/7/", "images/1/0/"])
def test_missing_images_are_404(viewer, world, path):
    assert viewer.get(MAIN + path).status_code == 404


def test_inline_data_urls_in_text_are_not_printed(viewer, agents):
    session = make_session("cron:dataurl")
    add_messages(session, user("look: data:image/png;base64," + "A" * 400 + " there"))
    html = viewer.get("/sessions/agent:main:cron:dataurl/").content.decode()
    assert "AAAA" not in html and "[inline data:" in html


def test_inter_session_provenance_is_a_badge_naming_source_and_tool(viewer, world):
    html = viewer.get("/sessions/agent:main:subagent:child-1/").content.decode()
    first = article(html, 1)
    assert '<a class="badge prov" href="/sessions/agent:main:main/"' in first
    assert "from agent:main:main · sessions_spawn" in first


def test_the_announce_message_is_a_card(viewer, world):
    card = article(viewer.get(MAIN).content.decode(), 6)
    assert 'class="card"' in card and "Sub-agent report" in card
    assert 'status-ok">success<' in card
    assert '<dt>Result</dt><dd class="text">4 unread, one invoice.</dd>' in card
    assert '<dt>Notes</dt><dd class="text">nothing urgent.</dd>' in card
    assert "<dt>Stats</dt>" in card and "runtime 8ms" in card
    assert 'href="/sessions/agent:main:subagent:child-1/"' in card  # the sub-agent's transcript
    assert "from agent:main:subagent:child-1 · sessions_spawn" in card


def test_credentials_are_masked_in_text_and_tool_arguments(viewer, agents):
    session = make_session("cron:secrets")
    add_messages(
        session,
        user("my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123"),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": "c",
                    "name": "http",
                    "arguments": {"token": "ghp_" + "a" * 36},
                }
            ],
        },
    )
    html = viewer.get("/sessions/agent:main:cron:secrets/").content.decode()
    assert "abcdefghijklmnopqrstuvwxyz" not in html and "a" * 36 not in html
    assert "sk-pro…0123" in html


def test_long_text_is_shortened_with_a_note(viewer, agents):
    session = make_session("cron:long")
    add_messages(session, user("word " * 2000))
    html = viewer.get("/sessions/agent:main:cron:long/").content.decode()
    assert "…(truncated)…" in html and "the JSONL download has the whole message" in html


def long_session(count: int):
    session = make_session("cron:long-history")
    add_messages(session, *[user(f"message number {i}") for i in range(1, count + 1)])
    return session


def test_a_long_transcript_opens_on_its_newest_page(viewer, agents):
    long_session(130)
    response = viewer.get("/sessions/agent:main:cron:long-history/")
    assert seqs_on(response) == list(range(81, 131))
    html = response.content.decode()
    assert 'data-has-older="1"' in html and 'data-has-newer="0"' in html
    assert 'id="load-older" href="?at=80#seq-80"' in html


def test_older_pages_by_seq(viewer, agents):
    long_session(130)
    url = "/sessions/agent:main:cron:long-history/messages/"
    older = viewer.get(url + "?before=81")
    assert older.status_code == 200 and b"<html" not in older.content
    assert seqs_on(older) == list(range(31, 81))
    assert b'data-has-older="1"' in older.content
    oldest = viewer.get(url + "?before=31")
    assert seqs_on(oldest) == list(range(1, 31)) and b'data-has-older="0"' in oldest.content


def test_newer_messages_after_a_seq(viewer, agents):
    long_session(130)
    url = "/sessions/agent:main:cron:long-history/messages/"
    assert seqs_on(viewer.get(url + "?after=125")) == [126, 127, 128, 129, 130]
    page = viewer.get(url + "?after=0&limit=10")
    assert seqs_on(page) == list(range(1, 11)) and b'data-has-newer="1"' in page.content
    assert seqs_on(viewer.get(url + "?after=130")) == []


def test_deep_links_load_the_page_holding_the_message(viewer, agents):
    long_session(130)
    around = viewer.get("/sessions/agent:main:cron:long-history/messages/?around=40")
    assert 40 in seqs_on(around) and len(seqs_on(around)) == 50
    assert b'data-has-older="1"' in around.content and b'data-has-newer="1"' in around.content
    page = viewer.get("/sessions/agent:main:cron:long-history/?at=3")
    assert seqs_on(page) == list(range(1, 51))
    assert b'id="follow" checked' not in page.content  # reading history: not following
    near_end = viewer.get("/sessions/agent:main:cron:long-history/messages/?around=129")
    assert seqs_on(near_end) == list(range(81, 131))


@pytest.mark.parametrize(
    "query",
    [
        "before=0",
        "before=abc",
        "after=-1",
        "around=1.5",
        "before=3&after=1",
        "limit=500&after=1",
        "limit=5",
        "before=99999999999",
    ],
)
def test_bad_page_parameters_are_400(viewer, world, query):
    response = viewer.get(f"{MAIN}messages/?{query}")
    assert response.status_code == 400


@pytest.mark.parametrize("query", ["at=0", "at=x", "at=-3"])
def test_bad_deep_link_is_400(viewer, world, query):
    assert viewer.get(f"{MAIN}?{query}").status_code == 400


@pytest.mark.parametrize(
    "path",
    ["/sessions/agent:main:nope/", "/sessions/agent:main:nope/messages/", "/sessions/nope/panel/"],
)
def test_unknown_sessions_are_404(viewer, world, path):
    response = viewer.get(path)
    assert response.status_code == 404 and b"Session not found" in response.content


@pytest.mark.parametrize("key", ["agent::", "agent:Bad%20Agent:x", "%01"])
def test_malformed_keys_are_400(viewer, world, key):
    assert viewer.get(f"/sessions/{key}/").status_code == 400


def test_bare_and_percent_encoded_keys_open_the_same_session(viewer, world):
    for path in ("/sessions/discord:group:dev/", "/sessions/agent%3Amain%3Adiscord%3Agroup%3Adev/"):
        response = viewer.get(path)
        assert response.status_code == 200 and b"nightly #812" in response.content


def test_keys_with_url_characters_round_trip(viewer, agents):
    make_session("agent:main:webchat:who?is#this x")
    html = viewer.get("/").content.decode()
    href = re.search(r'href="(/sessions/agent:main:webchat[^"]+)"', html)[1]
    assert "?" not in href and "#" not in href
    assert viewer.get(href).status_code == 200


def test_panel_shows_the_subagent_tree_with_status(viewer, world):
    child = world["child"]
    run = Run.objects.create(session=child, kind="spawn", status=Run.RUNNING)
    run.mark_finished(Run.OK, reply="done")
    html = viewer.get(MAIN).content.decode()
    tree = html[html.index('id="sec-tree"') : html.index('id="sec-runs"')]
    assert 'href="/sessions/agent:main:subagent:child-1/">inbox</a>' in tree
    assert 'status-done">done<' in tree
    assert "agent:main:subagent:grandchild-1" in tree  # one level further
    child_page = viewer.get("/sessions/agent:main:subagent:child-1/").content.decode()
    assert 'Spawned by <a href="/sessions/agent:main:main/">Alice (webchat)</a>' in child_page


def test_panel_lists_runs_with_status_and_timing(viewer, world):
    html = viewer.get("/sessions/agent:main:cron:daily/").content.decode()
    runs = html[html.index('id="sec-runs"') : html.index('id="sec-policy"')]
    assert 'status-error">error<' in runs and "ingest" in runs
    assert "backend exploded" in runs
    assert re.search(r"\d+ ms|\d+\.\d s", runs)


def test_panel_shows_every_sessions_list_row_field(viewer, world):
    html = viewer.get(MAIN).content.decode()
    meta = html[html.index('id="sec-meta"') :]
    names = re.findall(r"<dt>(\w+)</dt>", meta)
    assert names == [
        "key", "kind", "channel", "agentId", "label", "displayName", "deliveryContext",
        "updatedAt", "sessionId", "model", "contextTokens", "totalTokens", "thinkingLevel",
        "verboseLevel", "systemSent", "abortedLastRun", "sendPolicy", "lastChannel", "lastTo",
        "lastAccountId", "transcriptPath", "spawnedBy", "parentSessionKey", "spawnDepth",
        "childSessions", "archived", "status",
    ]  # fmt: skip
    session_id = Session.objects.get(key="agent:main:main").session_id
    assert f"/api/v1/transcripts/{session_id}.jsonl" in meta
    assert "agent:main:subagent:child-1" in meta  # childSessions


def test_jsonl_download_streams_the_export(viewer, world):
    response = viewer.get(MAIN + "transcript.jsonl")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == 'attachment; filename="agent_main_main.jsonl"'
    body = b"".join(response.streaming_content).decode()
    assert body == "".join(transcript.export_jsonl(world["main"]))
    lines = [json.loads(line) for line in body.splitlines()]
    assert lines[0]["type"] == "session" and len(lines) == 7
    assert lines[3]["message"]["role"] == "toolResult"


def test_transcript_pages_accept_only_get(viewer, world):
    for suffix in ("", "messages/", "panel/", "transcript.jsonl", "images/4/1/"):
        assert viewer.post(MAIN + suffix).status_code == 405


TRANSCRIPT_QUERIES = (
    2  # the Django session and the user
    + 1  # gateway settings
    + 1  # the session
    + 1  # the page of messages
    + 2  # children and their children (the tree)
    + 1  # runs
    + 2  # the user's permissions (user, group), read once for access and the override control
)


@pytest.mark.parametrize("count", [10, 400])
def test_transcript_query_count_does_not_grow_with_length(
    viewer, agents, django_assert_num_queries, count
):
    parent = make_session("main")
    make_session("agent:main:subagent:kid", spawnedBy="agent:main:main")
    add_messages(parent, *[assistant(f"reply {i}") for i in range(count)])
    viewer.get("/")
    with django_assert_num_queries(TRANSCRIPT_QUERIES):
        response = viewer.get(MAIN)
    assert len(seqs_on(response)) == min(count, 50)


def test_message_fragment_query_count(viewer, world, django_assert_num_queries):
    viewer.get("/")
    # session and user, permissions (user, group), settings, the session, the page
    with django_assert_num_queries(2 + 2 + 1 + 1 + 1):
        viewer.get(MAIN + "messages/?before=3")
