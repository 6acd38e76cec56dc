"""Issue 29.5: what a `sessions` patch sets for a person (the pin, the group, the status note)
is shown on the session's row in the list; the status note only while it lasts."""

from __future__ import annotations

import pytest

from sessions_app.models import Session, now_ms
from tests.conftest import make_session

pytestmark = pytest.mark.django_db

DEV = "agent:main:discord:group:dev"


def patch(api, **fields) -> None:
    response = api.invoke("sessions", {"action": "patch", "sessionKey": DEV, **fields})
    assert response.status_code == 200, response.content
    assert response.json()["result"]["details"]["status"] == "updated"


def row_html(client) -> str:
    html = client.get("/").content.decode()
    start = html.index(f'data-key="{DEV}"')
    return html[start : html.index("</li>", start)]


def test_the_pin_group_and_status_note_show_on_the_row(viewer, operator):
    make_session(DEV, channel="discord", chatType="group")
    before = row_html(viewer)
    assert "pinned" not in before and "badge group" not in before and "srow-note" not in before

    patch(operator, group="Work", statusNote="waiting on CI", pinned=True)
    row = row_html(viewer)
    assert '<span class="badge pin" title="Pinned: kept by retention">pinned</span>' in row
    assert '<span class="badge group" title="Group">group Work</span>' in row
    assert '<span class="srow-note" title="Status note">waiting on CI</span>' in row

    patch(operator, group=None, statusNote="", pinned=False)
    after = row_html(viewer)
    assert "badge pin" not in after and "badge group" not in after and "srow-note" not in after


def test_a_status_note_past_its_ttl_is_not_shown(viewer, operator):
    make_session(DEV, channel="discord", chatType="group")
    patch(operator, statusNote="deploying", ttlMinutes=5)
    assert "deploying" in row_html(viewer)
    session = Session.objects.get(key=DEV)
    session.extra = {**session.extra, "statusSetAt": now_ms() - 6 * 60_000}
    session.save(update_fields=["extra"])
    assert "deploying" not in row_html(viewer)
