"""The address limits key a request by (sessions_app/lib/client_address.py): the peer, or behind a
trusted proxy the right-most X-Forwarded-For entry outside the trusted proxies; never an
address the client wrote itself."""

from __future__ import annotations

import pytest

from sessions_app.lib.client_address import address_from, parse_networks

PROXIES = parse_networks(("10.0.0.5", "10.1.0.0/16", "2001:db8:1::/48"))


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "expected"),
    [
        # Not from a trusted proxy: the peer, whatever the header says.
        ("203.0.113.7", None, "203.0.113.7"),
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),
        # From one: the address the proxy saw, not what the client wrote left of it.
        ("10.0.0.5", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.5", "1.1.1.1, 198.51.100.1", "198.51.100.1"),
        # Through a chain of trusted proxies: the right-most untrusted.
        ("10.0.0.5", "1.1.1.1, 198.51.100.1, 10.1.2.3", "198.51.100.1"),
        ("10.0.0.5", "198.51.100.1,10.1.2.3,10.0.0.5", "198.51.100.1"),
        # Ports and IPv6 as proxies write them; IPv4-mapped IPv6 is its IPv4 address.
        ("10.0.0.5", "198.51.100.1:4711", "198.51.100.1"),
        ("10.0.0.5", "[2001:db8:2::9]:443", "2001:db8:2::9"),
        ("2001:db8:1::2", "2001:DB8:2::9", "2001:db8:2::9"),
        ("::ffff:10.0.0.5", "198.51.100.1", "198.51.100.1"),
        # Nothing usable right of the proxies: the last trusted address, never a client's word.
        ("10.0.0.5", None, "10.0.0.5"),
        ("10.0.0.5", "", "10.0.0.5"),
        ("10.0.0.5", "198.51.100.1, unknown", "10.0.0.5"),
        ("10.0.0.5", "10.1.2.3", "10.1.2.3"),
        # A peer that is no address (a Unix socket) is its own key.
        ("", None, "?"),
        ("unix:/run/app.sock", "198.51.100.1", "unix:/run/app.sock"),
    ],
)
def test_the_client_address(peer, forwarded_for, expected):
    assert address_from(peer, forwarded_for, PROXIES) == expected


def test_without_trusted_proxies_the_header_is_never_read():
    assert address_from("127.0.0.1", "198.51.100.1", ()) == "127.0.0.1"


def test_a_bad_entry_is_named():
    with pytest.raises(ValueError, match="'10.0.0.300' is not an IP or CIDR"):
        parse_networks(("10.0.0.1", "10.0.0.300"))
