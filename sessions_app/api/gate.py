"""One gate for every way in (STYLE.md rule 14). REST (DRF and the async views), `/tools/invoke`,
`/ws/`, `/mcp/` over HTTP and stdio, and a model's own tool calls take the same steps, in this
order, each done by one function:

1. `admit()` (here): a source (the client's address) that failed too many key checks is refused
   before its key is looked up, unless the key already authenticated in this process
   (`access.source_limit`); authenticate the credential (`access.identity`, telling the door's
   ticket how it went; a failure counts against the source), then count the request against
   its key's rate (api/ratelimit.py). An open
   connection is admitted again for each request it makes (a `/ws/` frame, a stdio MCP call), so
   a key revoked or over its rate stops the next one. (A model's tool calls are its run's, not a
   key's: the run was admitted when it was started.)
2. The body under the size limit: `http.read_json_object` and DRF's parser (api/drf.py) for HTTP,
   `/ws/`'s frame limit, `mcp/http.read_body`.
3. What no database can store, on the decoded value whoever decoded it: `store.check_storable`
   (NUL, nesting past the depth limit); and a REST body's unknown fields: `lib.args.closed`.
4. The requester (`access.identity.requester_for`), then the call.

tests/test_gate.py tries every rule on every entrance and expects the same refusal, so an
entrance that skips a step fails the suite.
"""

from __future__ import annotations

from openclaw_common.errors import Unauthenticated

from ..access import source_limit
from ..models import ApiKey
from . import door, ratelimit


def admit_cached(
    authorization: str | None, scope: dict | None = None, *, source: str | None
) -> ApiKey | None:
    """admit() when it needs no database: the key is in this process's cache
    (access/key_cache.py) and the rate is counted in this process's memory. So an async view
    admits on the event loop, without a hand-off to a thread (issue 26). None: call admit()
    (in a thread). Raises as admit() does."""
    if not ratelimit.rate_counted_here():
        return None
    check_source(authorization, source)
    try:
        api_key = door.authenticate_cached(authorization, scope)
    except Unauthenticated:
        source_limit.failed(source)
        raise
    if api_key is not None:
        ratelimit.check_rate(api_key.pk)
    return api_key


def admit(authorization: str | None, scope: dict | None = None, *, source: str | None) -> ApiKey:
    """The key a request speaks as, counted against its rate. `scope`: the ASGI scope of a
    request that came through the door (its ticket learns how the lookup went). `source`: the
    client's address (`source_limit.source_of_request` / `source_of_scope`), None for a local
    process (stdio MCP). Raises Unauthenticated or RateLimited."""
    check_source(authorization, source)
    try:
        api_key = door.authenticate(authorization, scope)
    except Unauthenticated:
        source_limit.failed(source)
        raise
    ratelimit.check_rate(api_key.pk)
    return api_key


def check_source(authorization: str | None, source: str | None) -> None:
    """RateLimited, before any lookup, for a credential not known here from a source that
    failed too many key checks in this window."""
    wait = source_limit.retry_after(source)
    if wait is not None and source is not None and not door.is_known(authorization):
        raise ratelimit.RateLimited(source_limit.refusal_text(source, wait), wait)
