"""The API's documentation (`/api/v1/schema/`, OpenAPI 3.1; `/api/v1/docs/` renders it).

Every operation has a summary, its parameters, its body, its result and each error status with
the envelope. Tool arguments and results are the tools' own declarations (tools/), so the
documented `/tools/invoke` bodies are exactly what a model is offered. The DRF resources are
described with `operation()` on their methods; the plain async views (`/tools/invoke`, send,
runs), which drf-spectacular cannot see, are added by `add_plain_views`, a postprocessing hook.
tests/api/test_api_schema.py checks that every public route is here.
"""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from openclaw_common import keys

from .. import store
from ..acp import harnesses
from ..manage import config as config_mod
from ..manage import patch_fields
from ..tools import TOOLS, shapes
from ..tools import declaration as decl
from ..tools.shapes import BOOLEAN, INTEGER, STRING, array, obj
from . import policy_schema, send_body

JSON = dict[str, Any]


def ref(name: str) -> JSON:
    return {"$ref": f"#/components/schemas/{name}"}


def camel(tool_name: str) -> str:
    return "".join(part.capitalize() for part in tool_name.split("_"))


def args_component(tool_name: str) -> str:
    return f"{camel(tool_name)}Args"


def result_component(tool_name: str) -> str:
    return f"{camel(tool_name)}Result"


# --- components -----------------------------------------------------------------------------

ERROR_ENVELOPE = obj(
    {
        "ok": {"type": "boolean", "enum": [False]},
        "error": obj(
            {
                "type": {
                    "type": "string",
                    "description": "invalid_request, tool_error, unauthorized, forbidden, "
                    "not_found, method_not_allowed, payload_too_large, unavailable, …",
                },
                "message": STRING,
                "details": {
                    "type": "object",
                    "description": "Machine-readable details, when the error has them: "
                    'a failed expectedSessionId guard says {"reason": "session-changed"}.',
                },
            },
            ("type", "message"),
        ),
        "runId": {
            "type": "string",
            "description": "A 503 during a wait: the run goes on; rejoin it at "
            "/api/v1/runs/{runId}/wait/.",
        },
    },
    ("ok", "error"),
    "Every error, with the HTTP status that fits it.",
)

INVOKE_FIELDS: JSON = {
    "sessionKey": {
        "type": "string",
        "maxLength": keys.MAX_KEY_LENGTH,
        "description": "The session the caller acts as (default: the key's agent main session).",
    },
    "agentId": {"type": "string", "maxLength": 64, "description": "The agent acting (operator)."},
    "idempotencyKey": {
        "type": "string",
        "maxLength": 256,
        "description": "sessions_send: a repeated key returns the first call's run "
        "(also the Idempotency-Key header). Top level only, not inside args.",
    },
    "action": {"type": "string", "maxLength": 256, "description": "Accepted, not used."},
    "dryRun": {"type": "boolean", "description": "Accepted, not used."},
}


def invoke_request(tool_name: str) -> JSON:
    return {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": [tool_name]},
            "args": ref(args_component(tool_name)),
            **INVOKE_FIELDS,
        },
        "required": ["tool"],
        "additionalProperties": False,
    }


TOOL_RESULT = obj(
    {
        "ok": {"type": "boolean", "enum": [True]},
        "result": obj(
            {
                "content": array(
                    obj(
                        {"type": {"type": "string", "enum": ["text"]}, "text": STRING},
                        ("type", "text"),
                    ),
                    "The details as pretty JSON text (what a model reads).",
                ),
                "details": {
                    "anyOf": [ref(result_component(t.name)) for t in TOOLS] + [ref("ToolRefusal")],
                    "description": "The tool's result; a refusal is a result too.",
                },
            },
            ("content", "details"),
        ),
    },
    ("ok", "result"),
)

HISTORY_PAGE = obj(
    {
        "sessionKey": STRING,
        "messages": array(ref("Message"), "Oldest first."),
        "hasMore": BOOLEAN,
        "nextCursor": {"type": "string", "description": "Pass as cursor for older messages."},
        **shapes.HISTORY_FLAGS,
    },
    ("sessionKey", "messages", "hasMore", *shapes.HISTORY_FLAG_NAMES),
)

APPENDED = obj(
    {
        "appended": INTEGER,
        "firstSeq": INTEGER,
        "lastSeq": INTEGER,
        "run": obj(
            {
                "status": {"type": "string", "enum": ["accepted", "error"]},
                "runId": STRING,
                "error": STRING,
            },
            ("status",),
            'With "run": true: the reply run, or why none was started.',
        ),
        "command": obj(
            {
                "reply": STRING,
                "sendPolicy": {"type": "string", "enum": ["allow", "deny", "inherit"]},
            },
            ("reply", "sendPolicy"),
            "An owner's /send command: what it set and replied.",
        ),
    },
    ("appended", "firstSeq", "lastSeq"),
)

AGENT = obj(
    {
        "id": STRING,
        "name": STRING,
        "description": STRING,
        "model": STRING,
        "backend": obj(
            {"type": {"type": "string", "enum": ["scripted", "openai"]}},
            description='{"type": "scripted", "rules"?, "delayMs"?, "models"?} or '
            '{"type": "openai", "baseUrl", "model", "apiKeyEnv"?, "models"?, '
            '"refreshModels"?}; models: the ids it serves besides model (its catalog, '
            "shown by agents_list); refreshModels: add what its /v1/models lists.",
        ),
        "subagents": obj({"allowAgents": array(STRING)}),
        "sandboxed": BOOLEAN,
        "tools": obj({"allow": array(STRING), "deny": array(STRING)}),
    },
    ("id",),
)


def _setting_schema(setting: config_mod.Setting) -> JSON:
    schema: JSON
    if setting.kind == "bool":
        schema = {"type": "boolean"}
    elif setting.kind == "int":
        schema = {"type": "integer", "minimum": setting.minimum, "maximum": setting.maximum}
    elif setting.kind == "choice":
        schema = {"type": "string", "enum": list(setting.choices)}
    elif setting.kind == "list":
        schema = {"type": "array", "items": {"type": "string"}, "maxItems": 100}
    elif setting.kind == "json":
        schema = dict(setting.shape or {"type": "object"})
    else:
        schema = {"type": "string"}
    return {**schema, "description": setting.help} if setting.help else schema


CONFIG = {
    **obj(
        {
            **{s.path: _setting_schema(s) for s in config_mod.SETTINGS},
            config_mod.SEND_POLICY: policy_schema.OPENCLAW_VALUE,
        },
        description="The gateway settings by their OpenClaw config path. In a PATCH, "
        "`acp.agents.<id>` sets one harness (null removes it) and keeps the others.",
    ),
    "patternProperties": {
        r"^acp\.agents\.[a-z0-9][a-z0-9_-]{0,63}$": {
            "anyOf": [harnesses.HARNESS_SCHEMA, {"type": "null"}]
        }
    },
}


def components() -> dict[str, JSON]:
    schemas: dict[str, JSON] = {
        "ErrorEnvelope": ERROR_ENVELOPE,
        "ToolRefusal": shapes.REFUSAL,
        "Message": shapes.MESSAGE,
        "SessionRow": shapes.SESSION_ROW,
        "Run": shapes.RUN,
        "Agent": AGENT,
        "Config": CONFIG,
        "HistoryPage": HISTORY_PAGE,
        "Appended": APPENDED,
        "AbortResult": ABORT_RESULT,
        "ToolResult": TOOL_RESULT,
        **policy_schema.COMPONENTS,
    }
    for tool in TOOLS:
        schemas[args_component(tool.name)] = tool.declaration.parameters()
        schemas[result_component(tool.name)] = tool.declaration.result
        schemas[f"Invoke{camel(tool.name)}"] = invoke_request(tool.name)
    schemas["ToolsInvokeRequest"] = {
        "oneOf": [ref(f"Invoke{camel(t.name)}") for t in TOOLS],
        "discriminator": {
            "propertyName": "tool",
            "mapping": {t.name: f"#/components/schemas/Invoke{camel(t.name)}" for t in TOOLS},
        },
    }
    return schemas


# --- operations -----------------------------------------------------------------------------

ERRORS = {
    400: "Malformed input: a wrong type, a missing, unknown or out-of-range field (named).",
    401: "No usable API key (missing, invalid or revoked).",
    403: "The key may not do this, or act as that session (its scope, agent, pin or sandbox).",
    404: "No such session, run, agent or tool.",
    405: "Another method (the Allow header lists the right ones).",
    406: "An Accept header this endpoint cannot answer.",
    413: "The body is over the size limit.",
    415: "A body that is not application/json.",
    429: "Over the key's request or concurrency limit; retry after Retry-After seconds.",
    502: "A backend this request reads (a model list) could not be read; the message says why.",
    503: "The database is busy or unreachable; retry after Retry-After seconds.",
}
# What every authenticated endpoint can answer whatever it does.
COMMON_ERRORS = (400, 401, 403, 405, 406, 429, 503)


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    return {
        code: OpenApiResponse(response=ref("ErrorEnvelope"), description=ERRORS[code])
        for code in sorted({*COMMON_ERRORS, *codes})
    }


SESSION_KEY_PATH = OpenApiParameter(
    "key",
    str,
    OpenApiParameter.PATH,
    description="Session key (canonical or bare) or sessionId, URL-encoded.",
)
REQUESTER_HEADER = OpenApiParameter(
    "X-OpenClaw-Session-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="The session the caller acts as (default: the key's agent main session).",
)


def query_parameters(
    declaration: decl.Declaration, *, rename: dict[str, str] | None = None
) -> list[OpenApiParameter]:
    """A tool's arguments as query parameters (a REST list endpoint takes them so); `rename`
    gives some a shorter name in the query string (`q` for `query`)."""
    found = []
    for param in declaration.params:
        if not param.advertised:
            continue
        schema = {k: v for k, v in param.schema().items() if k != "description"}
        if isinstance(param, decl.Integer):
            schema["type"] = "integer"  # a query string holds whole numbers
        found.append(
            OpenApiParameter(
                (rename or {}).get(param.name, param.name),
                type=schema,
                location=OpenApiParameter.QUERY,
                required=param.required,
                description=param.description,
                explode=True if isinstance(param, decl.StringList) else None,
            )
        )
    return found


def operation(
    operation_id: str,
    summary: str,
    *,
    response: Any,
    status: int = 200,
    also: dict[int, Any] | None = None,
    errors: tuple[int, ...] = (),
    request: Any = None,
    parameters: list[OpenApiParameter] | None = None,
    description: str = "",
    tags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The arguments of `extend_schema` for one DRF operation."""
    if isinstance(response, dict) and all(isinstance(k, tuple) for k in response):
        responses: dict[Any, Any] = dict(response)  # (status, media type) pairs
    else:
        responses = {status: response}
    responses.update(also or {})
    responses.update(error_responses(*errors))
    if isinstance(request, dict):
        request = {"application/json": request}  # a raw schema (spectacular reads a bare dict
        # as media type → schema)
    return {
        "operation_id": operation_id,
        "summary": summary,
        "description": description or None,
        "parameters": parameters or [],
        "request": request,
        "responses": responses,
        "tags": list(tags) or None,
    }


def _entry_field(kind: str) -> JSON:
    fields: dict[str, JSON] = {
        "str": {"type": "string"},
        "int": {"type": "integer", "minimum": 0},
        "bool": {"type": "boolean"},
        "obj": {"type": "object"},
    }
    return fields[kind]


INGEST_ENTRY = {
    "type": "object",
    "description": "A sessions.json entry (reference §8.2) plus its key; unknown fields are a "
    "400, other SessionEntry fields are kept as they are.",
    "properties": {
        "key": {"type": "string", "maxLength": keys.MAX_KEY_LENGTH},
        "sessionId": {"type": "string", "maxLength": 128},
        "updatedAt": {"type": "integer", "minimum": 0, "description": "Milliseconds."},
        **{name: _entry_field(kind) for name, (_, kind) in store.ENTRY_FIELDS.items()},
        "chatType": {"type": "string", "enum": ["direct", "group", "channel", "dm", "supergroup"]},
        "lastThreadId": {"type": ["string", "integer", "null"]},
        "sendPolicy": {"type": ["string", "null"], "enum": ["allow", "deny", "inherit", None]},
        "spawnedBy": {"type": ["string", "null"]},
        "spawnDepth": {"type": "integer", "minimum": 0, "maximum": 32},
        **{name: {} for name in sorted(store.PASSTHROUGH_FIELDS)},
    },
    "required": ["key"],
}

SESSION_PATCH = {
    "type": "object",
    "properties": {
        **{name: {"type": "string"} for name in store.PATCH_FIELDS},
        "sendPolicy": {"type": ["string", "null"], "enum": ["allow", "deny", "inherit", None]},
    },
    "minProperties": 1,
    "additionalProperties": False,
}

# The sessions tool's operations over REST (api/manage_views.py).
SESSION_MANAGE_PATCH = {
    "type": "object",
    "description": "The sessions tool's patch fields (9.6 §2.3) and sessions.patch's others "
    "(§2.4; null clears; docs/sessions-admin.md says where each goes: elevatedLevel, execHost, "
    "execNode, permissionMode, sandboxMode and agentRuntime are accepted and not stored; "
    "toolOverrides and those are operator-key only); not combinable with displayName.",
    "properties": {
        **{name: {"type": "string"} for name in ("label", "icon", "color", "statusNote")},
        **{name: {"type": "string"} for name in ("model", "thinkingLevel")},
        "attention": {"type": ["string", "null"]},
        "group": {"type": ["string", "null"]},
        "ttlMinutes": {"type": ["integer", "null"], "minimum": 1, "maximum": 120},
        "pinned": {"type": ["boolean", "null"]},
        "archived": {"type": "boolean"},
        "sendPolicy": {"enum": ["allow", "deny", "inherit", None]},
        "expectedSessionId": {"type": "string"},
        "expectedMarkedUnreadAt": {"type": ["integer", "null"]},
        "expectedLifecycleRevision": {"type": ["integer", "null"]},
        **{
            name: {"type": ["string", "null"], "maxLength": patch_fields.MAX_LEVEL}
            for name in ("verboseLevel", "reasoningLevel", "traceLevel")
        },
        "autoLabel": {"type": ["string", "boolean", "null"], "maxLength": patch_fields.MAX_TEXT},
        **{
            name: {"type": ["string", "number", "boolean", "object", "null"]}
            for name in ("boardFace", "boardPresentation")
        },
        "unread": {"type": ["boolean", "null"]},
        "contextWindow": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": patch_fields.MAX_CONTEXT_WINDOW,
        },
        "fastMode": {"enum": [*patch_fields.FAST_MODES, None]},
        "responseUsage": {"enum": [*patch_fields.RESPONSE_USAGES, None]},
        "groupActivation": {"enum": [*patch_fields.GROUP_ACTIVATIONS, None]},
        "toolOverrides": {
            "type": ["object", "null"],
            "properties": {"allow": array(STRING), "deny": array(STRING)},
            "additionalProperties": False,
        },
        **{
            name: {"type": ["string", "number", "boolean", "null"]} for name in patch_fields.IGNORED
        },
    },
    "minProperties": 1,
    "additionalProperties": False,
}
RESET_BODY = obj(
    {
        "expectedSessionId": {"type": "string"},
        "reason": {"type": "string", "enum": ["new", "reset"]},
    },
    description="Optional.",
)
GROUPS_PUT_BODY = obj(
    {"names": array({"type": "string", "minLength": 1, "maxLength": 512})}, ("names",)
)
GROUP_RENAME_BODY = obj({"name": STRING, "to": STRING}, ("name", "to"))
GROUP_NAME_PATH = OpenApiParameter(
    "name", str, OpenApiParameter.PATH, description="The group's name, URL-encoded."
)

APPEND_BODY = obj(
    {
        "messages": {
            "type": "array",
            "minItems": 1,
            "maxItems": store.MAX_MESSAGES_PER_APPEND,
            "items": obj(
                {
                    "role": {"type": "string", "enum": list(store.MESSAGE_ROLES)},
                    "content": {"anyOf": [STRING, array({"type": "object"}), {"type": "null"}]},
                    "timestamp": {"type": "integer", "minimum": 0},
                },
                ("role",),
                "A transcript message (reference §8.3); other fields are kept as they are.",
            ),
        },
        "run": {"type": "boolean", "description": "Start the agent's reply run."},
    },
    ("messages",),
)


ABORT_BODY = obj(
    {
        "clearQueued": {"type": "boolean", "description": "Also end its queued runs."},
        "cascade": {
            "type": "boolean",
            "description": "Also cancel every sub-agent below it (default true).",
        },
    },
    description="Optional; an empty body stops the running runs and cascades.",
)
ABORT_RESULT = obj(
    {
        "ok": {"type": "boolean", "enum": [True]},
        "key": STRING,
        "status": {"type": "string", "enum": ["aborted", "no-active-run"]},
        "abortedRunIds": array(STRING),
        "endedTasks": INTEGER,
        "cancelledDescendants": INTEGER,
    },
    ("ok", "key", "status", "abortedRunIds", "endedTasks", "cancelledDescendants"),
)


def _error_objects(*codes: int) -> dict[str, JSON]:
    return {
        str(code): {
            "description": ERRORS[code],
            "content": {"application/json": {"schema": ref("ErrorEnvelope")}},
        }
        for code in sorted({*COMMON_ERRORS, *codes})
    }


def _json(schema: JSON, description: str) -> JSON:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _path_parameter(name: str, description: str, **schema: Any) -> JSON:
    return {
        "in": "path",
        "name": name,
        "required": True,
        "schema": {"type": "string", **schema},
        "description": description,
    }


_HEADER = {
    "in": "header",
    "name": REQUESTER_HEADER.name,
    "required": False,
    "schema": {"type": "string"},
    "description": REQUESTER_HEADER.description,
}
_RUN_ID = _path_parameter(
    "run_id", "The run's id, as runId in a send or spawn result.", format="uuid"
)
_SECURITY: list[JSON] = [{"ApiKey": []}]


def plain_views() -> dict[str, dict[str, JSON]]:
    """The operations of the plain async views, as OpenAPI path items."""
    send = TOOLS.get("sessions_send").declaration
    return {
        "/tools/invoke": {
            "post": {
                "operationId": "tools_invoke",
                "summary": "Call a tool (OpenClaw's /tools/invoke)",
                "description": "The body names the tool and its args; one documented body per "
                "tool. A refusal (a session you may not see, a blocked send) is a 200 result "
                "with details {status: error|forbidden, error}; malformed args are a 400 "
                "`tool_error` naming the argument. sessions_send waits for the reply on the "
                "server, holding no thread.",
                "tags": ["tools"],
                "security": _SECURITY,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("ToolsInvokeRequest")}},
                },
                "responses": {
                    "200": _json(ref("ToolResult"), "The tool's result."),
                    **_error_objects(404, 413),
                },
            }
        },
        "/api/v1/sessions/{key}/send/": {
            "post": {
                "operationId": "sessions_send",
                "summary": "Send a message to a session and wait for its reply (sessions_send)",
                "description": send.description,
                "tags": ["sessions"],
                "security": _SECURITY,
                "parameters": [
                    _path_parameter("key", str(SESSION_KEY_PATH.description)),
                    _HEADER,
                    {
                        "in": "header",
                        "name": "Idempotency-Key",
                        "required": False,
                        "schema": {"type": "string", "maxLength": 256},
                        "description": "Same as the body's idempotencyKey.",
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": send_body.schema()}},
                },
                "responses": {
                    "200": _json(ref(result_component("sessions_send")), "The send's outcome."),
                    **_error_objects(413),
                },
            }
        },
        "/api/v1/runs/{run_id}/": {
            "get": {
                "operationId": "runs_retrieve",
                "summary": "Read a run",
                "description": "A run you started, or of a session whose history you may read.",
                "tags": ["runs"],
                "security": _SECURITY,
                "parameters": [_RUN_ID, _HEADER],
                "responses": {"200": _json(ref("Run"), "The run."), **_error_objects(404)},
            }
        },
        "/api/v1/runs/{run_id}/wait/": {
            "get": {
                "operationId": "runs_wait",
                "summary": "Wait for a run to finish",
                "description": "Join a run (a send's wait that timed out, a client that "
                "reconnected): 200 once it has finished, 202 with Retry-After if it is still "
                "going when the timeout ends.",
                "tags": ["runs"],
                "security": _SECURITY,
                "parameters": [
                    _RUN_ID,
                    _HEADER,
                    {
                        "in": "query",
                        "name": "timeout",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0},
                        "description": "Seconds to wait (default 30, at most 600).",
                    },
                ],
                "responses": {
                    "200": _json(ref("Run"), "The run, finished."),
                    "202": _json(ref("Run"), "The run, still going."),
                    **_error_objects(404),
                },
            }
        },
        "/api/v1/runs/{run_id}/abort/": {
            "post": {
                "operationId": "runs_abort",
                "summary": "Abort a run",
                "description": "A queued or running run ends as aborted (its worker notices "
                "within half a second); `aborted` says whether this call ended it.",
                "tags": ["runs"],
                "security": _SECURITY,
                "parameters": [_RUN_ID, _HEADER],
                "responses": {
                    "200": _json(
                        {"allOf": [ref("Run"), obj({"aborted": BOOLEAN}, ("aborted",))]},
                        "The run as it now is.",
                    ),
                    **_error_objects(404),
                },
            }
        },
    }


OPENCLAW_HISTORY_PATH = "/sessions/{sessionKey}/history"


def openclaw_history(api_history: JSON) -> JSON:
    """OpenClaw's `GET /sessions/{sessionKey}/history`: the /api/v1/ history operation at
    OpenClaw's address (api/openclaw_paths.py serves it with the same view)."""
    operation = copy.deepcopy(api_history)
    operation["operationId"] = "openclaw_sessions_history"
    operation["summary"] = "Read a page of a session's transcript at OpenClaw's path"
    operation["description"] = (
        "OpenClaw's gateway path for /api/v1/sessions/{key}/history/, answered the same way to "
        "an API client (an Authorization header, or an Accept header preferring "
        "application/json or text/event-stream). A browser gets the transcript page here. "
        + operation.get("description", "")
    )
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "path" and parameter.get("name") == "key":
            parameter["name"] = "sessionKey"
    return operation


def add_plain_views(result: JSON, generator, request, public) -> JSON:
    """drf-spectacular postprocessing hook: the components and the plain async views."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(components())
    result["paths"] = {**result.get("paths", {}), **plain_views()}
    api_history = result["paths"].get("/api/v1/sessions/{key}/history/", {}).get("get")
    if api_history is not None:
        result["paths"][OPENCLAW_HISTORY_PATH] = {"get": openclaw_history(api_history)}
    result["paths"] = dict(sorted(result["paths"].items()))
    return result
