"""JSON schemas of what the tools and the API return, shared by the declarations (tools/) and the
API documentation (api/schema.py). They describe the dicts rows.py, transcript.py and the tools
build; tests/tools/test_tool_declarations.py validates real results against them.

Written as JSON Schema (2020-12), which OpenAPI 3.1 and MCP's output schemas both are: a value
that may be null says `"type": [..., "null"]`. Optional fields are left out of `required`, as
OpenClaw omits absent fields; objects stay open (no `additionalProperties: false`), so a newer
field is not a breaking change.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def obj(properties: JSON, required: tuple[str, ...] = (), description: str = "") -> JSON:
    schema: JSON = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    return schema


def array(items: JSON, description: str = "") -> JSON:
    schema: JSON = {"type": "array", "items": items}
    if description:
        schema["description"] = description
    return schema


STRING: JSON = {"type": "string"}
INTEGER: JSON = {"type": "integer"}
BOOLEAN: JSON = {"type": "boolean"}
NULLABLE_STRING: JSON = {"type": ["string", "null"]}
NULLABLE_INTEGER: JSON = {"type": ["integer", "null"]}
ANY_OBJECT: JSON = {"type": "object", "additionalProperties": True}
RUN_STATUSES = ("running", "done", "failed", "timeout", "aborted")

# A raw transcript message (reference §8.3) as history returns it: sanitised, with its 1-based
# position in the transcript under `__openclaw.seq`.
MESSAGE = obj(
    {
        "role": {"type": "string", "enum": ["user", "assistant", "toolResult", "tool", "system"]},
        "content": {
            "description": "A string, or an array of content blocks with a `type`.",
            "anyOf": [STRING, array(ANY_OBJECT), {"type": "null"}],
        },
        "timestamp": INTEGER,
        "toolCallId": STRING,
        "toolName": STRING,
        "usage": ANY_OBJECT,
        "provenance": ANY_OBJECT,
        "__openclaw": obj({"seq": INTEGER}, ("seq",)),
        "internal": obj(
            {
                "kind": {
                    "type": "string",
                    "enum": ["completion", "announce", "skip", "wake", "harness"],
                },
                "summary": STRING,
            },
            ("kind", "summary"),
            "The HTTP history only: present on a row a person reads as machinery (a completion "
            "prompt, an announce step, a REPLY_SKIP/ANNOUNCE_SKIP/NO_REPLY reply, a watch "
            'wake-up, a harness note), with a one-line summary (docs/rest.md, "Internal rows").',
        ),
    },
    ("role", "timestamp", "__openclaw"),
    "A transcript message; other fields of the stored message are kept as they are.",
)

DELIVERY_CONTEXT = obj(
    {"channel": STRING, "to": STRING, "accountId": STRING, "threadId": STRING},
)

SESSION_ROW = obj(
    {
        "key": STRING,
        "kind": {"type": "string", "enum": ["main", "group", "cron", "hook", "node", "other"]},
        "channel": STRING,
        "agentId": STRING,
        "label": STRING,
        "displayName": STRING,
        "model": STRING,
        "thinkingLevel": STRING,
        "verboseLevel": STRING,
        "sendPolicy": {"type": "string", "enum": ["allow", "deny"]},
        "deliveryContext": DELIVERY_CONTEXT,
        "updatedAt": {"type": "integer", "description": "Milliseconds since the epoch."},
        "stateVersion": {
            "type": "integer",
            "description": "The state log's head (session_status changesSince); once it has events.",
        },
        "sessionId": STRING,
        "contextTokens": INTEGER,
        "totalTokens": INTEGER,
        "systemSent": BOOLEAN,
        "abortedLastRun": BOOLEAN,
        "lastChannel": STRING,
        "lastTo": STRING,
        "lastAccountId": STRING,
        "transcriptPath": STRING,
        "spawnedBy": STRING,
        "parentSessionKey": STRING,
        "spawnDepth": INTEGER,
        "childSessions": array(
            STRING, "Its active child sessions, newest first: at most 100 of them."
        ),
        "childSessionsTruncated": {
            "type": "boolean",
            "description": "Present (true) when it has more active children than listed.",
        },
        "archived": BOOLEAN,
        "pinned": BOOLEAN,
        "group": {"type": "string", "description": "The sidebar group (9.6 category)."},
        "owner": obj(
            {"actor": obj({"type": STRING, "id": STRING, "label": STRING}, ("type", "id"))},
            ("actor",),
            "Who answers for the session (the sessions tool's assign_owner).",
        ),
        "status": {
            "type": "string",
            "enum": list(RUN_STATUSES),
            "description": "The latest run's outcome.",
        },
        "derivedTitle": {
            "type": "string",
            "description": "From the first user message, with includeDerivedTitles.",
        },
        "lastMessagePreview": {
            "type": "string",
            "description": "The newest visible user or assistant text, with includeLastMessage.",
        },
        "messages": array(MESSAGE, "The last messages, with messageLimit."),
    },
    (
        "key",
        "kind",
        "channel",
        "agentId",
        "updatedAt",
        "sessionId",
        "totalTokens",
        "transcriptPath",
        "spawnDepth",
        "childSessions",
        "archived",
        "pinned",
    ),
    "One session, as sessions_list shows it.",
)

# What sessions_history and the HTTP history say about bounding (reference §3.3–3.4).
HISTORY_FLAGS: JSON = {
    "truncated": BOOLEAN,
    "droppedMessages": BOOLEAN,
    "contentTruncated": BOOLEAN,
    "contentRedacted": BOOLEAN,
    "bytes": INTEGER,
}
HISTORY_FLAG_NAMES = tuple(HISTORY_FLAGS)

# A tool that ran and said no (`/tools/invoke` returns it as a result, as OpenClaw does).
REFUSAL = obj(
    {"status": {"type": "string", "enum": ["error", "forbidden"]}, "error": STRING},
    ("status", "error"),
    "The tool refused: the reason in `error`.",
)

DELIVERY = obj(
    {
        "status": {"type": "string", "enum": ["pending", "skipped"]},
        "mode": {"type": "string", "enum": ["announce"]},
    },
    ("status", "mode"),
)

RUN = obj(
    {
        "runId": STRING,
        "status": {
            "type": "string",
            "enum": ["queued", "running", "ok", "error", "timeout", "aborted"],
        },
        "kind": {"type": "string", "enum": ["send", "spawn", "ingest", "step", "announce"]},
        "sessionKey": STRING,
        "requesterKey": NULLABLE_STRING,
        "chainId": STRING,
        "chainAgents": array(STRING),
        "parentRunId": NULLABLE_STRING,
        "createdAt": NULLABLE_STRING,
        "startedAt": NULLABLE_STRING,
        "finishedAt": NULLABLE_STRING,
        "runtimeMs": NULLABLE_INTEGER,
        "attempts": INTEGER,
        "reply": STRING,
        "error": STRING,
        "usage": ANY_OBJECT,
    },
    ("runId", "status", "kind", "sessionKey", "chainId", "createdAt", "attempts"),
    "One agent run (times are ISO 8601, UTC).",
)
