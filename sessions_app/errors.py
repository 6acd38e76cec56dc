"""Domain errors raised by the tool functions; each adapter maps them to its protocol.

- InvalidArgument: malformed input. HTTP 400 everywhere.
- Refusal (Forbidden, NotFound): the tool ran and said no. `/tools/invoke` returns it as a
  result (`details = {"status": ..., "error": ...}`, as OpenClaw does); REST returns 403/404.
- AccessDenied: the API key may not act as the requested session or use this endpoint. 403.
"""


class ToolError(Exception):
    http_status = 400
    error_type = "invalid_request"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgument(ToolError):
    pass


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
