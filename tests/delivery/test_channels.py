"""Channel rows are written by channels.save_channel() / delete_channels(), from the admin too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from openclaw_common.errors import InvalidArgument
from sessions_app.delivery import channels
from sessions_app.models import ChannelConfig

CHANNELS_URL = "/admin/sessions_app/channelconfig/"


@pytest.fixture
def admin_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_save_channel_creates_and_changes_a_row(db):
    row = channels.save_channel(
        channel=" Slack ", adapter="webhook", webhook_url="https://hooks.example.com/x"
    )
    assert (row.channel, row.adapter, row.max_attempts) == ("slack", "webhook", 5)
    changed = channels.save_channel(
        channel="slack", adapter="log", max_attempts=2, channel_id=row.pk
    )
    assert changed.pk == row.pk and ChannelConfig.objects.get().adapter == "log"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"channel": " "}, "channel must be a non-empty name"),
        ({"adapter": "pigeon"}, "adapter must be one of webchat, webhook, log"),
        ({"max_attempts": 0}, "max_attempts must be a whole number from 1 to 32767"),
        ({"max_attempts": True}, "max_attempts must be a whole number"),
        ({"adapter": "webhook"}, "A webhook channel needs a webhook URL."),
        (
            {"adapter": "webhook", "webhook_url": "ftp://hooks.example.com/x"},
            "webhook_url: Enter a valid URL.",
        ),
        ({"channel": "x" * 65}, "channel: Ensure this value has at most 64 characters"),
        ({"channel": "telegram"}, "channel: Channel with this Channel already exists."),
        ({"channel_id": 999}, "channel row 999 does not exist"),
    ],
)
def test_bad_channel_input_is_refused_with_a_message(db, arguments, message):
    ChannelConfig.objects.create(channel="telegram", adapter="log")
    with pytest.raises(InvalidArgument) as refused:
        channels.save_channel(**{"channel": "slack", "adapter": "log", **arguments})
    assert refused.value.message.startswith(message)
    assert list(ChannelConfig.objects.values_list("channel", flat=True)) == ["telegram"]


def test_the_admin_adds_changes_and_deletes_through_the_functions(admin_client, monkeypatch):
    calls = []
    for name in ("save_channel", "delete_channels"):
        real = getattr(channels, name)
        monkeypatch.setattr(
            channels,
            name,
            lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw),
        )
    data = {"channel": "Slack", "adapter": "log", "webhook_url": "", "max_attempts": "3"}
    assert admin_client.post(CHANNELS_URL + "add/", data).status_code == 302
    row = ChannelConfig.objects.get()
    assert (row.channel, row.max_attempts) == ("slack", 3)
    data["max_attempts"] = "4"
    assert admin_client.post(f"{CHANNELS_URL}{row.pk}/change/", data).status_code == 302
    assert ChannelConfig.objects.get().max_attempts == 4
    response = admin_client.post(f"{CHANNELS_URL}{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not ChannelConfig.objects.exists()
    assert calls == ["save_channel", "save_channel", "delete_channels"]

    other = channels.save_channel(channel="matrix", adapter="log")
    response = admin_client.post(
        CHANNELS_URL,
        {"action": "delete_selected", "_selected_action": [str(other.pk)], "post": "yes"},
    )
    assert response.status_code == 302 and not ChannelConfig.objects.exists()
    assert calls[-1] == "delete_channels"
