"""Which address a request comes from, for limits keyed by client (issue 28 item 2): the login
lockout now, a per-source limit later.

The direct peer, unless it is one of `OPENCLAW_TRUSTED_PROXIES` (IPs or CIDRs): then the
right-most address of `X-Forwarded-For` that is not a trusted proxy, which is the address the
outermost trusted proxy saw. Everything left of it was written by the client and is never
read, so a client cannot pick its own key by sending the header; with no trusted proxies the
header is ignored altogether. (Django reads no such setting; this is what Rails'
`remote_ip` and uvicorn's `--forwarded-allow-ips` do.)

Pure (`address_from`) plus the Django request's reading (`client_address`); the ASGI door has
the peer in `scope["client"]` and the header in `scope["headers"]` for `address_from` too.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
UNKNOWN = "?"


@functools.lru_cache(maxsize=8)
def parse_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """`OPENCLAW_TRUSTED_PROXIES`' entries as networks (an IP is a network of one). Raises
    ValueError naming a bad entry (settings.py turns it into ImproperlyConfigured at start)."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"OPENCLAW_TRUSTED_PROXIES: {entry!r} is not an IP or CIDR") from None
    return tuple(networks)


def trusted_proxies() -> tuple[Network, ...]:
    return parse_networks(tuple(getattr(settings, "OPENCLAW_TRUSTED_PROXIES", ()) or ()))


def _address(text: str) -> Address | None:
    """An address as a peer or a proxy writes it: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`,
    `[2001:db8::1]:443`; an IPv4-mapped IPv6 address as its IPv4 one. None if it is none."""
    text = text.strip()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.split(":")[0]  # IPv4 with a port
    try:
        address = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, networks: Iterable[Network]) -> bool:
    return any(address.version == n.version and address in n for n in networks)


def address_from(peer: str | None, forwarded_for: str | None, networks: tuple[Network, ...]) -> str:
    """The client's address: `peer` unless it is in `networks`, else the right-most entry of
    `forwarded_for` (comma-separated, several headers joined) outside them. When every entry is
    a trusted proxy, the left-most of them; when the header is missing, or the entry right of
    the trusted ones is not an address (a proxy that writes `unknown`), the last trusted
    address seen: the nearest client the proxies vouch for, never one the client wrote."""
    client = _address(peer or "")
    if client is None:
        return peer or UNKNOWN
    if not networks or not _trusted(client, networks):
        return str(client)
    for entry in reversed((forwarded_for or "").split(",")):
        hop = _address(entry)
        if hop is None:
            break
        client = hop
        if not _trusted(hop, networks):
            break
    return str(client)


def client_address(request) -> str:
    """The address limits key a Django request by (REMOTE_ADDR, X-Forwarded-For)."""
    return address_from(
        request.META.get("REMOTE_ADDR"),
        request.META.get("HTTP_X_FORWARDED_FOR"),
        trusted_proxies(),
    )
