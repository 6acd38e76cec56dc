"""Domain errors raised by the tool functions; each adapter maps them to its protocol.

- InvalidArgument: malformed input. HTTP 400 everywhere.
- Refusal (Forbidden, NotFound): the tool ran and said no. `/tools/invoke` returns it as a
  result (`details = {"status": ..., "error": ...}`, as OpenClaw does); REST returns 403/404.
- AccessDenied: the API key may not act as the requested session or use this endpoint. 403.
- Unauthenticated: no usable API key. 401.
"""


class ToolError(Exception):
    http_status = 400
    error_type = "invalid_request"
    # Machine-readable detail a protocol may pass on (the /ws/ error frame's `details`).
    details: dict | None = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgument(ToolError):
    pass


class SessionChanged(InvalidArgument):
    """An `expectedSessionId` guard failed: the session was replaced (reset, deleted and
    recreated) since the caller read it. 9.6 sends `details.reason: "session-changed"`."""

    details = {"reason": "session-changed"}

    def __init__(self, display_key: str, action: str):
        super().__init__(f"Session {display_key} changed before {action}. Retry.")


class Refusal(ToolError):
    status = "error"


class Forbidden(Refusal):
    status = "forbidden"
    http_status = 403
    error_type = "forbidden"


class NotFound(Refusal):
    status = "error"
    http_status = 404
    error_type = "not_found"


class AccessDenied(ToolError):
    http_status = 403
    error_type = "forbidden"


class Unauthenticated(ToolError):
    """No usable API key (missing, malformed, unknown or revoked): 401, with one text on every
    way in, so a client cannot probe which of those it was."""

    http_status = 401
    error_type = "unauthorized"
    TEXT = "Invalid or missing API key: send Authorization: Bearer <api key>"

    def __init__(self, message: str = TEXT):
        super().__init__(message)
