"""Live updates: WebSocket subscriptions and SSE history follow (issue 5, docs/live.md).

- `hints`: writers call `session_changed()` inside their transaction; after commit a hint goes to
  this process's hub and, with REDIS_URL, through the Redis channel layer to every web process.
- `hub`: one per web process; reads the database by `changed_ms` and `seq` and fans out to the
  local subscribers. The database is the truth and a hint only says "look now", so a lost hint
  only delays (the hub also polls).
- `subscribers`: a bounded outbox per WebSocket connection or SSE stream; slow ones are cut off.
- `consumer` (WebSocket `/ws/`) and `sse` (history `follow=1`) are the two transports.
"""
