"""The load client bench/page_flood_bench.py and bench/flood_bad_keys.py share: a keyed client
in a process of its own whose latency is what they report, and the flood's raw HTTP/1.1 over
asyncio sockets (thousands of clients on one loop; nothing of an HTTP library's pooling).

- `KEY`: a `manage.py shell` snippet making agent `main` and an agent key (the keyed client's).
- `keyed_client`: `GET /api/v1/sessions/` every 50 ms, a new connection each, until stopped.
- `keyed_figures`: its latency for the requests it started inside given windows (the flood's).
- `get`: one request on a connection of its own (`Connection: close`), read to the close.
- `flooder`: one flood client sending request after request until a deadline, on one
  keep-alive connection or a new one each.
"""

from __future__ import annotations

import asyncio
import http.client
import time
from collections import Counter
from collections.abc import Callable

from bench.send_bench import percentile

KEY = """
import json
from sessions_app.manage.agents import upsert_agent
from sessions_app.models import ApiKey
from sessions_app.store import upsert_session
upsert_agent(api_key=None, agent_id="main", data={"name": "main"})
upsert_session(api_key=None, key="agent:main:main", entry={})
_, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
print(json.dumps({"token": token}))
"""


def keyed_client(port: int, token: str, stop, out) -> None:
    """The other client, in a process of its own so that the flood's client loop does not
    delay it: `GET /api/v1/sessions/` every 50 ms until `stop`; (start, status, seconds) to
    `out` (time.monotonic is the machine's clock, the same in both processes)."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request(
                "GET", "/api/v1/sessions/", headers={"Authorization": f"Bearer {token}"}
            )
            response = connection.getresponse()
            response.read()
            status = response.status
            connection.close()
        except OSError:
            status = -1
        out.put((started, status, time.monotonic() - started))
        time.sleep(0.05)


def drain(out) -> list[tuple[float, int, float]]:
    samples = []
    while not out.empty():
        samples.append(out.get())
    return samples


def keyed_figures(
    samples: list[tuple[float, int, float]], windows: list[tuple[float, float]], digits: int = 3
) -> dict:
    """The keyed client's requests that started inside one of `windows`: how many, their
    statuses, p50 / p95 / max seconds."""
    inside = [(s, t) for begun, s, t in samples if any(a <= begun <= b for a, b in windows)]
    latencies = [t for _, t in inside]
    return {
        "keyed_requests": len(inside),
        "keyed_statuses": dict(Counter(s for s, _ in inside)),
        "keyed_p50": round(percentile(latencies, 0.50), digits) if latencies else None,
        "keyed_p95": round(percentile(latencies, 0.95), digits) if latencies else None,
        "keyed_max": round(max(latencies), digits) if latencies else None,
    }


def head(path: str, token: str | None, *, keep_alive: bool) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    connection = "keep-alive" if keep_alive else "close"
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: {connection}\r\n\r\n"
    ).encode()


async def get(port: int, path: str, token: str | None) -> tuple[int, float]:
    """One request on a connection of its own: (status, seconds); -1 when the connection was
    refused, -2 / -3 when the answer was empty or broken."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return -1, time.monotonic() - started
    try:
        writer.write(head(path, token, keep_alive=False))
        await writer.drain()
        line = await reader.readline()
        await reader.read()
        status = int(line.split()[1]) if line else -2
    except (OSError, ValueError, IndexError):
        status = -3
    finally:
        writer.close()
    return status, time.monotonic() - started


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """(status, whether the server keeps the connection open)."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed")
    status = int(status_line.split()[1])
    length, close = 0, False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "connection" and "close" in value.lower():
            close = True
    if length:
        await reader.readexactly(length)
    return status, not close


async def flooder(
    port: int,
    path: str,
    deadline: float,
    statuses: Counter,
    *,
    token: Callable[[], str | None],
    keep_alive: bool,
) -> None:
    """One flood client: request after request (each with `token()`) until `deadline`."""
    reader = writer = None
    while time.monotonic() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert reader is not None
            writer.write(head(path, token(), keep_alive=keep_alive))
            await writer.drain()
            status, open_ = await read_response(reader)
            statuses[status] += 1
            if not (keep_alive and open_):
                writer.close()
                reader = writer = None
        except (OSError, ConnectionError, ValueError, IndexError, asyncio.IncompleteReadError):
            statuses[-1] += 1
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()
