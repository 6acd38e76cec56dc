"""Channel adapters are a registry of classes (sessions_app/delivery/adapters/): a new adapter is
one module and one entry in ADAPTERS, with no migration. save_channel(), the admin's select and
its list filter all read the registry; deliver() sends through it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client

from openclaw_common.errors import InvalidArgument
from sessions_app.delivery import (
    Adapter,
    DeliveryFailed,
    adapters,
    channels,
    deliver,
    enqueue_delivery,
)
from sessions_app.models import ChannelConfig
from tests.conftest import make_session

CHANNELS_URL = "/admin/sessions_app/channelconfig/"


class Pigeon(Adapter):
    """A test adapter: records what it was given, fails while told to."""

    name = "pigeon"
    sent: list[str] = []
    fail_with = ""

    def send(self, delivery) -> None:
        if Pigeon.fail_with:
            raise DeliveryFailed(Pigeon.fail_with)
        Pigeon.sent.append(delivery.text)


@pytest.fixture
def pigeon(monkeypatch):
    """Pigeon registered as a module in adapters/ would register itself: one line in ADAPTERS."""
    monkeypatch.setitem(adapters.ADAPTERS, Pigeon.name, Pigeon)
    monkeypatch.setattr(Pigeon, "sent", [])
    monkeypatch.setattr(Pigeon, "fail_with", "")
    return Pigeon


@pytest.fixture
def admin_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_the_built_in_adapters_are_registered_in_order():
    assert list(adapters.ADAPTERS) == ["webchat", "webhook", "log", "agent_webhook"]
    # An agent's completion webhook is not a channel's adapter.
    assert adapters.channel_adapters() == ["webchat", "webhook", "log"]
    # The adapters the model names itself (its defaults, the webhook URL constraint).
    for name in (ChannelConfig.WEBCHAT, ChannelConfig.WEBHOOK, ChannelConfig.LOG):
        assert name in adapters.ADAPTERS


def test_every_adapter_name_fits_the_column():
    limit = ChannelConfig._meta.get_field("adapter").max_length
    assert all(len(name) <= limit for name in adapters.ADAPTERS)


def test_a_registered_adapter_can_be_configured_and_delivers(agents, pigeon):
    row = channels.save_channel(channel="carrier", adapter="pigeon")
    assert row.adapter == "pigeon"  # no choices or check constraint stood in the way
    session = make_session("agent:main:main", lastChannel="carrier", lastTo="roof")
    with transaction.atomic():
        delivery = enqueue_delivery(session=session, text="coo", kind="message")
    assert delivery.adapter == "pigeon"
    assert deliver(delivery.pk) == "sent"
    assert pigeon.sent == ["coo"]


def test_a_registered_adapter_failing_is_a_failed_attempt(agents, pigeon):
    channels.save_channel(channel="carrier", adapter="pigeon")
    pigeon.fail_with = "storm"
    session = make_session("agent:main:main", lastChannel="carrier", lastTo="roof")
    with transaction.atomic():
        delivery = enqueue_delivery(session=session, text="coo", kind="message")
    assert deliver(delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_error) == (1, "storm")


def test_an_adapter_that_is_no_longer_registered_fails_the_attempt(agents):
    ChannelConfig.objects.create(channel="carrier", adapter="pigeon")  # its module was removed
    session = make_session("agent:main:main", lastChannel="carrier", lastTo="roof")
    with transaction.atomic():
        delivery = enqueue_delivery(session=session, text="coo", kind="message")
    assert deliver(delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert delivery.last_error == "unknown adapter 'pigeon'"


def test_save_channel_names_the_registered_adapters(db, pigeon):
    with pytest.raises(
        InvalidArgument, match="adapter must be one of webchat, webhook, log, pigeon"
    ):
        channels.save_channel(channel="carrier", adapter="raven")
    with pytest.raises(InvalidArgument, match="adapter must be one of"):
        channels.save_channel(channel="carrier", adapter=["log"])


def test_the_admin_selects_and_filters_by_the_registered_adapters(admin_client, pigeon):
    form = admin_client.get(CHANNELS_URL + "add/").context["adminform"].form
    assert list(form.fields["adapter"].choices) == [
        ("webchat", "webchat"),
        ("webhook", "webhook"),
        ("log", "log"),
        ("pigeon", "pigeon"),
    ]
    assert form.initial.get("adapter", form.fields["adapter"].initial) == "log"
    data = {"channel": "carrier", "adapter": "pigeon", "webhook_url": "", "max_attempts": "5"}
    assert admin_client.post(CHANNELS_URL + "add/", data).status_code == 302
    channels.save_channel(channel="slack", adapter="log")

    listing = admin_client.get(CHANNELS_URL, {"adapter": "pigeon"})
    assert [row.channel for row in listing.context["cl"].result_list] == ["carrier"]
    (adapter_filter,) = listing.context["cl"].filter_specs
    assert [choice["display"] for choice in adapter_filter.choices(listing.context["cl"])] == [
        "All",
        "webchat",
        "webhook",
        "log",
        "pigeon",
    ]


def test_the_admin_refuses_an_adapter_that_is_not_registered(admin_client):
    data = {"channel": "carrier", "adapter": "raven", "webhook_url": "", "max_attempts": "5"}
    response = admin_client.post(CHANNELS_URL + "add/", data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["adapter"] == [
        "Select a valid choice. raven is not one of the available choices."
    ]
    assert not ChannelConfig.objects.exists()
