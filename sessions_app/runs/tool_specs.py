"""The session tools as function-calling schemas, and which of them an agent's run is offered.

Parameter names follow the reference (session-tools.md §2.1, §3.1, §4.1, §5.1) and api.md §1.
Numeric parameters are JSON type `number`, not `integer`, as OpenClaw's schemas are (Gemini
rejects `integer` in some positions); the tools floor finite numbers (sessions_app/args.py).
The tool functions refuse unknown argument names, so a schema lists only what its tool reads.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from .backends.base import ToolSpec

SESSION_TOOLS = ("sessions_list", "sessions_history", "sessions_send", "sessions_spawn")
ALL_TOOLS = (*SESSION_TOOLS, "agents_list")
# Sub-agents get the full tool set minus the session tools (seeds). agents_list goes too: it
# only names sessions_spawn targets, and OpenClaw's DEFAULT_SUBAGENT_TOOL_DENY lists it as well.
SUBAGENT_DEFAULT_DENY = frozenset(ALL_TOOLS)
# OpenClaw's tool-policy group name, so an agent's allow/deny lists can say it as OpenClaw does.
TOOL_GROUPS = {"group:sessions": SESSION_TOOLS}

KINDS = ["main", "group", "cron", "hook", "node", "other"]


def _number(description: str, *, minimum: int) -> dict:
    return {"type": "number", "minimum": minimum, "description": description}


def _string(description: str, **extra) -> dict:
    return {"type": "string", "description": description, **extra}


def _object(properties: dict, required: Iterable[str] = ()) -> dict:
    # No additionalProperties: some OpenAI-compatible servers (Gemini's) reject the keyword; the
    # tools refuse unknown names themselves.
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


TOOL_SPECS: dict[str, ToolSpec] = {
    "sessions_list": ToolSpec(
        name="sessions_list",
        description=(
            "List the sessions you can see, most recently active first, with their key, kind, "
            "channel and token counts. Set messageLimit to include each session's last "
            "messages (tool results left out; use sessions_history for those)."
        ),
        parameters=_object(
            {
                "kinds": {
                    "type": "array",
                    "items": {"type": "string", "enum": KINDS},
                    "description": "Only sessions of these kinds.",
                },
                "limit": _number("Maximum rows (default 100, at most 200).", minimum=1),
                "activeMinutes": _number(
                    "Only sessions updated within this many minutes.", minimum=1
                ),
                "messageLimit": _number(
                    "Include the last N messages of each session (0-20, default 0).", minimum=0
                ),
                "offset": _number("Skip this many rows (paging; see nextOffset).", minimum=0),
                "agentId": _string("Only sessions of this agent.", maxLength=64),
                "label": _string("Only sessions with exactly this label."),
                "search": _string("Text to find in the key, label, display name or sessionId."),
                "archived": _string(
                    'Archived sessions: "false" (default), "true" or "all".',
                    enum=["false", "true", "all"],
                ),
            }
        ),
    ),
    "sessions_history": ToolSpec(
        name="sessions_history",
        description=(
            "Fetch the transcript of one session (oldest first, newest `limit` messages). "
            "Tool results are left out unless includeTools is true."
        ),
        parameters=_object(
            {
                "sessionKey": _string(
                    'Session key or sessionId from sessions_list; "main" is your main session.'
                ),
                "limit": _number("Maximum messages (default 200, at most 1000).", minimum=1),
                "includeTools": {
                    "type": "boolean",
                    "description": "Include toolResult messages (default false).",
                },
                "offset": _number(
                    "Skip the newest N messages (paging backwards; see nextOffset).", minimum=0
                ),
            },
            required=["sessionKey"],
        ),
    ),
    "sessions_send": ToolSpec(
        name="sessions_send",
        description=(
            "Send a message into another session and, unless timeoutSeconds is 0, wait for "
            "its reply. Returns {runId, status: accepted|ok|timeout|error|forbidden, reply?}. "
            "On timeout the run goes on; read sessions_history later."
        ),
        parameters=_object(
            {
                "sessionKey": _string("Target session key or sessionId from sessions_list."),
                "label": _string("Target session label (instead of sessionKey).", minLength=1),
                "agentId": _string(
                    "Agent whose session has that label.", minLength=1, maxLength=64
                ),
                "message": _string("The message to send."),
                "timeoutSeconds": _number(
                    "Seconds to wait for the reply (default 30; 0 = do not wait).", minimum=0
                ),
            },
            required=["message"],
        ),
    ),
    "sessions_spawn": ToolSpec(
        name="sessions_spawn",
        description=(
            "Start a sub-agent on a task in a new isolated session. Never blocks: returns "
            "{status: accepted, runId, childSessionKey} at once, and the result is announced "
            "back to this session when the sub-agent finishes; do not poll or sleep."
        ),
        parameters=_object(
            {
                "task": _string("What the sub-agent should do."),
                "label": _string("Short label for logs and the UI."),
                "agentId": _string(
                    "Spawn under this agent id, if allowed (see agents_list).", maxLength=64
                ),
                "model": _string("Model for the sub-agent (overrides its default)."),
                "runTimeoutSeconds": _number(
                    "Abort the sub-agent run after N seconds (default 0 = no limit).", minimum=0
                ),
                "cleanup": _string(
                    'Delete the sub-agent session after the announce ("delete") or keep it '
                    '("keep", default).',
                    enum=["delete", "keep"],
                ),
                "attachments": {
                    "type": "array",
                    "maxItems": 50,
                    "description": "Files for the sub-agent's workspace (if enabled).",
                    "items": _object(
                        {
                            "name": _string("File name (no path)."),
                            "content": _string("File content."),
                            "encoding": _string(
                                "How content is encoded (default utf8).", enum=["utf8", "base64"]
                            ),
                            "mimeType": _string("MIME type."),
                        },
                        required=["name", "content"],
                    ),
                },
                "attachAs": _object(
                    {"mountPath": _string("Where you would like the files (a hint only).")}
                ),
            },
            required=["task"],
        ),
    ),
    "agents_list": ToolSpec(
        name="agents_list",
        description="List the agent ids you may use as agentId in sessions_spawn.",
        parameters=_object({}),
    ),
}


def _names(values: Iterable[str] | None) -> set[str]:
    names: set[str] = set()
    for value in values or ():
        name = str(value).strip().lower()
        names.update(TOOL_GROUPS.get(name, (name,)))
    return names


def tools_for(
    agent_tools_allow: Iterable[str] | None,
    agent_tools_deny: Iterable[str] | None,
    *,
    is_subagent: bool,
) -> list[ToolSpec]:
    """The tools a run of this agent is offered, in ALL_TOOLS order (fresh copies).

    With an empty allow list an agent gets every tool, a sub-agent none of the session tools.
    A non-empty allow list replaces that default: it names the tools ("*" = all, so an agent can
    give its sub-agents session tools on purpose). The deny list then removes names ("*" = all).
    """
    allow = _names(agent_tools_allow)
    deny = _names(agent_tools_deny)
    if "*" in allow:
        names = list(ALL_TOOLS)
    elif allow:
        names = [n for n in ALL_TOOLS if n in allow]
    elif is_subagent:
        names = [n for n in ALL_TOOLS if n not in SUBAGENT_DEFAULT_DENY]
    else:
        names = list(ALL_TOOLS)
    if "*" in deny:
        return []
    return [_fresh(TOOL_SPECS[n]) for n in names if n not in deny]


# Every turn gets its own copy of the schemas (a backend may change what it is given), and
# copy.deepcopy of them cost ~1 ms a turn: a decode of their JSON costs a few microseconds.
_PARAMETERS_JSON: dict[str, bytes] = {}


def _fresh(spec: ToolSpec) -> ToolSpec:
    encoded = _PARAMETERS_JSON.get(spec.name)
    if encoded is None:
        encoded = _PARAMETERS_JSON[spec.name] = orjson.dumps(spec.parameters)
    return ToolSpec(name=spec.name, description=spec.description, parameters=orjson.loads(encoded))
