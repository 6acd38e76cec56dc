"""Where the service may send requests of its own (model backends, webhooks), and how.

An operator (or an API key of operator scope) configures URLs that the service later POSTs to,
sometimes with a credential. Without a policy that is a way into the deployment's own network:
the loopback admin of a database, a cloud metadata endpoint, a neighbour's private API. So:

- `check_url(url)` resolves the host and refuses any address that is not globally routable
  (loopback, private, link-local incl. 169.254.169.254, CGNAT, unspecified, multicast, reserved;
  IPv4-mapped and NAT64 IPv6 are judged by the IPv4 address inside), unless the deployment
  allows it by `OPENCLAW_OUTBOUND_ALLOW` (hosts, IPs or CIDRs, comma-separated; `*` for all).
  Every address a name resolves to must pass.
- `post(url, …)` connects to the address that was checked (no second lookup, so a name cannot
  be re-pointed between check and connect), never follows a redirect (a 3xx is an error that
  says so), reads at most `max_bytes` of the answer, and reports failures by status, content
  type and size only: a remote body is never put into an error text.
- `check_key_env(name)`: a backend's `apiKeyEnv` may name only a variable listed in
  `OPENCLAW_MODEL_KEY_ENVS`, so an operator key cannot make the service send SECRET_KEY or
  DATABASE_URL to a URL of its choosing.

Both settings are read from the environment at start (openclaw_site/settings.py).
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
# IPv6 forms that carry an IPv4 address in their low 32 bits, which a translator on the path
# (NAT64, SIIT, a 6to4 relay) turns into that IPv4 destination: each is judged as the IPv4
# address inside. Python's is_global calls some of them global (3.11).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_EMBEDDED_IPV4_LOW = (
    _NAT64,
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215)
    ipaddress.ip_network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
    ipaddress.ip_network("::/96"),  # IPv4-compatible (deprecated)
)
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # 6to4: the IPv4 address in bits 16-48
# What an error may say of a remote Content-Type: one of these, else "other". A header is remote
# text (any token-shaped string is a valid media type), and errors never echo remote text.
_KNOWN_MEDIA_TYPES = frozenset(
    {
        "application/json",
        "application/problem+json",
        "application/x-ndjson",
        "application/xml",
        "application/octet-stream",
        "application/x-www-form-urlencoded",
        "text/html",
        "text/plain",
        "text/xml",
        "text/event-stream",
    }
)
_LOCAL_NAMES = ("localhost", "localhost.localdomain")


class OutboundRefused(Exception):
    """The destination is not one the deployment allows (the message says why, no body)."""


class Unresolved(OutboundRefused):
    """The host's name did not resolve: unlike the other refusals, a later try may pass (the
    resolver was down), so a delivery is retried (delivery/adapters/webhook.py)."""


class OutboundFailed(Exception):
    """The request was made (or tried) and did not succeed; the message is safe to show."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written in the URL (Host header, TLS server name)
    port: int
    address: str  # the checked address to connect to
    path: str  # path + query


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes

    def describe(self) -> str:
        """`HTTP 502 (text/html, 1234 bytes)`: what came back, never what it said."""
        kind = self.content_type or "no content type"
        return f"HTTP {self.status} ({kind}, {len(self.body)} bytes)"


# --- policy ----------------------------------------------------------------------------------


def allowed_key_envs() -> frozenset[str]:
    return frozenset(getattr(settings, "OPENCLAW_MODEL_KEY_ENVS", ()))


def check_key_env(name: str) -> str | None:
    """None when `name` may be read as a model key, else the reason (names the setting)."""
    if not name or name in allowed_key_envs():
        return None
    allowed = ", ".join(sorted(allowed_key_envs())) or "none"
    return (
        f"backend.apiKeyEnv {name!r} is not allowed: the deployment's OPENCLAW_MODEL_KEY_ENVS "
        f"lists the variables a backend may use ({allowed})"
    )


def _allow_entries() -> tuple[bool, frozenset[str], tuple]:
    names: set[str] = set()
    networks = []
    allow_all = False
    for entry in getattr(settings, "OPENCLAW_OUTBOUND_ALLOW", ()):
        entry = entry.strip().lower().strip("[]")
        if not entry:
            continue
        if entry == "*":
            allow_all = True
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip("."))
    return allow_all, frozenset(names), tuple(networks)


def _effective(address: ipaddress.IPv4Address | ipaddress.IPv6Address):
    """The IPv4 address an IPv6 address stands for (IPv4-mapped, NAT64, SIIT, IPv4-compatible,
    6to4); else itself. `::` and `::1` stay themselves (unspecified and loopback)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if int(address) > 1 and any(address in net for net in _EMBEDDED_IPV4_LOW):
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    address = _effective(address)
    # is_global is False for loopback, RFC 1918, link-local (169.254/16, fe80::/10), CGNAT
    # (100.64/10), unspecified, reserved, ULA (fc00::/7, incl. fd00:ec2::254) and documentation
    # ranges; multicast is never a place to POST to.
    return address.is_global and not address.is_multicast


def _in_networks(address, networks) -> bool:
    effective = _effective(address)
    return any(a.version == n.version and a in n for n in networks for a in {address, effective})


def _address_allowed(address, networks) -> bool:
    return is_public(address) or _in_networks(address, networks)


def literal_address(host: str):
    """The address a host written as an IP literal stands for, in any form getaddrinfo accepts
    (`[::1]`, `0x7f000001`, `2130706433`, `017700000001`, `127.1`), or None for a name."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def _split(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise OutboundRefused("the URL is not valid") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise OutboundRefused("the URL must be http(s) with a host")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80), path


def _refusal(host: str, address) -> OutboundRefused:
    return OutboundRefused(
        f"{host} ({address}) is not a public address; the deployment allows such destinations "
        "only by OPENCLAW_OUTBOUND_ALLOW"
    )


def check_saved_url(url: str) -> str | None:
    """At save time, without DNS: None, or why the URL will be refused (an IP literal or a
    local name that the deployment does not allow). Names are checked at send time."""
    try:
        _, host, _, _ = _split(url)
    except OutboundRefused:
        return None  # not a URL at all: the caller's own validation says so
    allow_all, names, networks = _allow_entries()
    if allow_all or host.rstrip(".") in names:
        return None
    address = literal_address(host)
    name = host.rstrip(".")
    if address is None and any(name == n or name.endswith("." + n) for n in _LOCAL_NAMES):
        address = ipaddress.ip_address("127.0.0.1")
    if address is not None and not _address_allowed(address, networks):
        return str(_refusal(host, address))
    return None


def check_url(url: str) -> Target:
    """Resolve the URL's host and return the address to connect to, or raise OutboundRefused."""
    scheme, host, port, path = _split(url)
    allow_all, names, networks = _allow_entries()
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(f"cannot resolve {host}: {exc.__class__.__name__}") from None
    addresses = []
    for info in infos:
        raw = str(info[4][0]).split("%")[0]
        addresses.append(ipaddress.ip_address(raw))
    if not addresses:
        raise Unresolved(f"cannot resolve {host}")
    if not (allow_all or host.rstrip(".") in names):
        for address in addresses:
            if not _address_allowed(address, networks):
                raise _refusal(host, address)
    return Target(scheme, host, port, str(addresses[0]), path)


def check_own_url(url: str, *, setting: str) -> str:
    """A URL of this service that a credential is handed out with (OPENCLAW_MCP_URL: a harness
    gets it with a key): the URL, or OutboundRefused naming `setting`. Stricter than check_url,
    since what goes there is a key: every address the host resolves to must be loopback, or
    named by OPENCLAW_OUTBOUND_ALLOW (a host, an IP or a CIDR; `*` does not do, nor does being
    public: a public address is as likely someone else's), and a host that is not loopback
    must be reached over https, so the key does not cross a network in the clear."""
    try:
        scheme, host, port, _ = _split(url)
    except OutboundRefused as exc:
        raise OutboundRefused(f"{setting} {url!r}: {exc}") from None
    _, names, networks = _allow_entries()
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(f"{setting}: cannot resolve {host}: {exc.__class__.__name__}") from None
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
    loopback = bool(addresses) and all(_effective(a).is_loopback for a in addresses)
    named = host.rstrip(".") in names or (
        bool(addresses) and all(_in_networks(a, networks) for a in addresses)
    )
    if not (loopback or named):
        raise OutboundRefused(
            f"{setting} {url!r}: {host} is not a loopback address, nor one OPENCLAW_OUTBOUND_ALLOW "
            "names; the key handed out with it would go there"
        )
    if not loopback and scheme != "https":
        raise OutboundRefused(
            f"{setting} {url!r}: {host} is not loopback, so it must be https (the key would "
            "cross the network in the clear)"
        )
    return url


# --- the request ---------------------------------------------------------------------------


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        # Kept apart from self.sock, which http.client drops once a response owns the stream.
        self.raw_socket = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self.raw_socket


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._address = target.address

    def connect(self) -> None:
        self.raw_socket = socket.create_connection((self._address, self.port), self.timeout)
        # The certificate is checked against the name in the URL, not the address.
        self.sock = self._tls.wrap_socket(self.raw_socket, server_hostname=self.host)


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Response:
    """POST once to a checked destination. Raises OutboundRefused (policy) or OutboundFailed
    (unreachable, timeout, redirect, too large); any other status is returned to the caller."""
    return _request("POST", url, body, headers, timeout=timeout, max_bytes=max_bytes)


def get(
    url: str, headers: dict[str, str], *, timeout: float, max_bytes: int = DEFAULT_MAX_BYTES
) -> Response:
    """GET once to a checked destination, with post()'s rules (a model list, model_catalog.py)."""
    return _request("GET", url, None, headers, timeout=timeout, max_bytes=max_bytes)


def media_type(header: str | None) -> str:
    """A remote Content-Type as an error may name it: a known media type, else "other"."""
    kind = (header or "").split(";")[0].strip().lower()
    if not kind:
        return ""
    return kind if kind in _KNOWN_MEDIA_TYPES else "other"


def _request(
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    *,
    timeout: float,
    max_bytes: int,
) -> Response:
    target = check_url(url)
    cls = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    connection = cls(target, timeout)
    response = None
    # `timeout` bounds the whole exchange, not each read: a server trickling a byte at a time
    # would otherwise hold a webhook attempt past its delivery lease (sent twice) or a web
    # request for as long as it likes. At the deadline the socket is shut, which ends any read.
    cut = threading.Event()
    deadline = threading.Timer(timeout, _cut, (connection, cut))
    deadline.daemon = True
    deadline.start()
    try:
        connection.request(method, target.path, body=body, headers=headers)
        response = connection.getresponse()
        content_type = media_type(response.getheader("Content-Type"))
        if 300 <= response.status < 400:
            raise OutboundFailed(
                f"HTTP {response.status}: redirects are not followed (point the URL at the "
                "final address)"
            )
        data = response.read(max_bytes + 1)
        if cut.is_set():  # a body without a length ends at EOF, which the cut looks like
            raise TimeoutError
        if len(data) > max_bytes:
            raise OutboundFailed(
                f"HTTP {response.status} ({content_type or 'no content type'}): the answer is "
                f"larger than {max_bytes} bytes"
            )
        return Response(response.status, content_type, data)
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, TimeoutError) or cut.is_set():
            raise OutboundFailed(f"no answer from {target.host} within {timeout:g} s") from None
        if isinstance(exc, ssl.SSLError):
            raise OutboundFailed(
                f"TLS with {target.host} failed: {exc.reason or 'error'}"
            ) from None
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise OutboundFailed(f"cannot reach {target.host}:{target.port}: {reason}") from None
    finally:
        deadline.cancel()
        if response is not None:
            response.close()
        connection.close()


def _cut(connection: _PinnedHTTP | _PinnedHTTPS, cut: threading.Event) -> None:
    """The request's deadline: shut its socket, so a read in progress returns at once (a
    connect in progress has its own timeout)."""
    cut.set()
    sock = getattr(connection, "raw_socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
