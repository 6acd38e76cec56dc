"""The openai backend: any OpenAI-compatible `/v1/chat/completions` endpoint, with tool calling.

Settings: {"type": "openai", "baseUrl", "model", "apiKeyEnv"?}. The API key is read from the
environment variable named by apiKeyEnv at run time, so it never sits in the database.

One turn is a loop: send the transcript (converted from OpenClaw's message shape to OpenAI's)
and the offered tools; while the model answers with tool calls, run them as the session's own
calls (`call_tool`), append the assistant and toolResult messages, and ask again. Usage is
summed over every request of the turn.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from openclaw_common.errors import ToolError

from ...lib import outbound
from .base import (
    BackendError,
    CallTool,
    CheckAbort,
    ToolSpec,
    TurnInput,
    TurnOutput,
    ends_turn,
)

REQUEST_TIMEOUT_SECONDS = 120
# How often an in-flight request checks for an abort or a passed deadline.
ABORT_POLL_SECONDS = 0.25
# Model requests per turn; the last one must answer in text.
MAX_ROUNDS = 8
# Transcript messages sent as context (the turn's own tool rounds come on top).
MAX_HISTORY_MESSAGES = 50
ERROR_BODY_CHARS = 300  # of a failed answer's body, in the log only
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
logger = logging.getLogger(__name__)
IMAGE_PLACEHOLDER = "[image omitted]"
STOP_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


class OpenAIBackend:
    def run(self, turn: TurnInput, *, call_tool: CallTool, check_abort: CheckAbort) -> TurnOutput:
        settings = turn.backend or {}
        url = endpoint_url(settings.get("baseUrl") or "")
        headers = request_headers(settings.get("apiKeyEnv") or "")
        # An explicit override (a spawn's `model`, the session's model) wins over the default.
        model = turn.model or settings.get("model")
        if not model:
            raise BackendError("backend.model is not set")
        offered = {spec.name for spec in turn.tools}
        prompt = turn.extra_system_prompt
        system = [{"role": "system", "content": prompt}] if prompt else []
        history = window(to_openai_messages(turn.messages))

        out: list[dict[str, Any]] = turn.progress
        totals = {"input": 0, "output": 0, "totalTokens": 0}
        rounds = 0
        while True:
            rounds += 1
            check_abort()
            body: dict[str, Any] = {
                "model": model,
                "messages": system + pair_tool_messages(history + to_openai_messages(out)),
            }
            if turn.tools:
                body["tools"] = [tool_schema(spec) for spec in turn.tools]
                body["tool_choice"] = "auto"
            data = post_json(url, body, headers, check_abort=check_abort)
            message, finish_reason = first_choice(data)
            usage = read_usage(data.get("usage"))
            for name in totals:
                totals[name] += usage[name]
            text = content_text(message.get("content"))
            calls = message.get("tool_calls")
            calls = calls if isinstance(calls, list) else []
            meta = {
                "api": "openai-completions",
                "provider": "openai",
                "model": data.get("model") or model,
                "usage": {**usage, "cacheWrite": 0},
            }
            if not calls:
                stop = STOP_REASONS.get(finish_reason, "stop")
                content = [{"type": "text", "text": text}]
                out.append({"role": "assistant", "content": content, **meta, "stopReason": stop})
                return TurnOutput(messages=out, usage=totals)
            if rounds >= MAX_ROUNDS:
                raise BackendError("too many tool rounds")
            blocks, bad_arguments = tool_call_blocks(calls)
            content = [{"type": "text", "text": text}] if text else []
            out.append(
                {"role": "assistant", "content": content + blocks, **meta, "stopReason": "toolUse"}
            )
            yielded = False
            for block in blocks:
                check_abort()
                name = block["name"]
                if name not in offered:
                    details = {"status": "error", "error": f"tool not available: {name}"}
                elif block["id"] in bad_arguments:
                    reason = bad_arguments[block["id"]]
                    details = {
                        "status": "error",
                        "error": f"invalid arguments for {name}: {reason}",
                    }
                else:
                    details = run_tool(call_tool, name, block["arguments"])
                    yielded = yielded or ends_turn(details)
                out.append(tool_result(block, details))
            if yielded:  # sessions_yield: this response's calls are answered; the turn ends
                return TurnOutput(messages=out, usage=totals)


def endpoint_url(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    if not url:
        raise BackendError("backend.baseUrl is not set")
    return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


def request_headers(api_key_env: str) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "openclaw-sessions",
    }
    if api_key_env:
        refused = outbound.check_key_env(api_key_env)
        if refused:  # saved before the deployment narrowed the list: checked again here
            raise BackendError(refused)
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise BackendError(f"environment variable {api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"
    return headers


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


# --- Transcript conversion (OpenClaw → OpenAI) ---------------------------------------------


def blocks_text(content: Any, *, keep: tuple[str, ...] = ("text",)) -> str:
    """Text of a string or a list of blocks; image blocks become a short placeholder."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") in keep and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append(IMAGE_PLACEHOLDER)
    return "\n".join(p for p in parts if p)


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenClaw transcript messages as chat.completions messages; other roles are left out."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = blocks_text(message.get("content"))
            if text:
                converted.append({"role": "user", "content": text})
        elif role == "assistant":
            content = message.get("content")
            text = blocks_text(content)
            calls = []
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id"):
                    arguments = block.get("arguments")
                    calls.append(
                        {
                            "id": str(block["id"]),
                            "type": "function",
                            "function": {
                                "name": str(block.get("name") or ""),
                                "arguments": json.dumps(
                                    arguments if isinstance(arguments, dict) else {},
                                    ensure_ascii=False,
                                ),
                            },
                        }
                    )
            if calls:
                converted.append(
                    {"role": "assistant", "content": text or None, "tool_calls": calls}
                )
            elif text:
                converted.append({"role": "assistant", "content": text})
        elif role == "toolResult" and message.get("toolCallId"):
            converted.append(
                {
                    "role": "tool",
                    "tool_call_id": str(message["toolCallId"]),
                    "content": blocks_text(message.get("content")),
                }
            )
    return converted


def window(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last MAX_HISTORY_MESSAGES, never starting with a tool message whose call was cut."""
    kept = messages[-MAX_HISTORY_MESSAGES:]
    while kept and kept[0]["role"] == "tool":
        kept = kept[1:]
    return kept


def pair_tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make tool calls and results pair up as chat.completions requires.

    Each assistant tool_calls message must be followed by one tool message per call id, and a
    tool message must answer a call of the assistant message just before it. Transcripts from
    elsewhere (ingest, import, an aborted run) do not always look like that: results without
    their call are dropped, calls without a result get a placeholder result.
    """
    paired: list[dict[str, Any]] = []
    pending: list[str] = []

    def close_pending() -> None:
        for call_id in pending:
            paired.append({"role": "tool", "tool_call_id": call_id, "content": "(no result)"})
        pending.clear()

    for message in messages:
        if message["role"] == "tool":
            if message["tool_call_id"] in pending:
                pending.remove(message["tool_call_id"])
                paired.append(message)
            continue
        close_pending()
        paired.append(message)
        if message["role"] == "assistant":
            pending.extend(call["id"] for call in message.get("tool_calls") or [])
    close_pending()
    return paired


# --- Responses (OpenAI → OpenClaw) ---------------------------------------------------------


def first_choice(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            # The model's own words stay in the log (the URL may not be a model at all).
            logger.warning("model backend error: %s", str(error["message"])[:ERROR_BODY_CHARS])
            raise BackendError("model error (the response has an error and no choices)")
        raise BackendError("the response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BackendError("the response has no message")
    return message, str(choices[0].get("finish_reason") or "stop")


def content_text(content: Any) -> str:
    # Some compatible servers send content as a list of parts.
    return blocks_text(content, keep=("text", "output_text")) if content else ""


def read_usage(usage: Any) -> dict[str, int]:
    usage = usage if isinstance(usage, dict) else {}

    def number(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt = number(usage.get("prompt_tokens"))
    completion = number(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = number(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return {
        "input": prompt,
        "output": completion,
        "totalTokens": number(usage.get("total_tokens")) or prompt + completion,
        "cacheRead": cached,
    }


def tool_call_blocks(calls: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """toolCall blocks for the transcript, and {call id: why its arguments were refused}."""
    blocks = []
    bad: dict[str, str] = {}
    for i, call in enumerate(calls):
        call = call if isinstance(call, dict) else {}
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        call_id = str(call.get("id") or f"call_{i}")
        raw = function.get("arguments")
        arguments: Any = {}
        if isinstance(raw, dict):
            arguments = raw
        elif isinstance(raw, str) and raw.strip():
            try:
                arguments = json.loads(raw)
            except ValueError:
                bad[call_id] = "not valid JSON"
                arguments = {}
        if not isinstance(arguments, dict):
            bad[call_id] = "not a JSON object"
            arguments = {}
        blocks.append(
            {
                "type": "toolCall",
                "id": call_id,
                "name": str(function.get("name") or ""),
                "arguments": arguments,
            }
        )
    return blocks, bad


def run_tool(call_tool: CallTool, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Malformed arguments come back to the model as an error result, as in OpenClaw, so it can
    correct itself; anything else (a bug, an abort) ends the turn."""
    try:
        details = call_tool(name, arguments)
    except ToolError as exc:
        status = getattr(exc, "status", None) or (
            "forbidden" if exc.http_status == 403 else "error"
        )
        return {"status": status, "error": exc.message}
    return details if isinstance(details, dict) else {"result": details}


def tool_result(block: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": block["id"],
        "toolName": block["name"],
        "content": [{"type": "text", "text": json.dumps(details, ensure_ascii=False)}],
        "isError": details.get("status") in ("error", "forbidden"),
    }


# --- HTTP ----------------------------------------------------------------------------------


def post_json(
    url: str, body: dict[str, Any], headers: dict[str, str], *, check_abort: CheckAbort
) -> dict[str, Any]:
    """POST in a worker thread and poll check_abort meanwhile, so an abort or a run deadline
    stops the turn within ABORT_POLL_SECONDS instead of after the model's answer. An abandoned
    request finishes (or times out) in the background and its answer is dropped."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["data"] = http_post(url, payload, headers)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="openai-request", daemon=True).start()
    while not done.wait(ABORT_POLL_SECONDS):
        check_abort()
    if "error" in box:
        raise box["error"]
    return box["data"]


def http_post(url: str, payload: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """One request through the outbound policy (sessions_app/lib/outbound.py). Errors say what came
    back (status, content type, size) and never the body: the URL may be anything an operator
    typed, and run errors are readable by every viewer of the session. The body of a failed
    request goes to the log only, shortened."""
    try:
        response = outbound.post(
            url, payload, headers, timeout=REQUEST_TIMEOUT_SECONDS, max_bytes=MAX_RESPONSE_BYTES
        )
    except outbound.OutboundRefused as exc:
        raise BackendError(f"backend.baseUrl refused: {exc}") from None
    except outbound.OutboundFailed as exc:
        raise BackendError(str(exc)) from None
    if not 200 <= response.status < 300:
        logger.warning("model backend %s: %s", response.describe(), error_text(response.body))
        raise BackendError(response.describe())
    try:
        data = json.loads(response.body)
    except ValueError:
        raise BackendError(f"the response is not JSON: {response.describe()}") from None
    if not isinstance(data, dict):
        raise BackendError("the response is not a JSON object")
    return data


def error_text(raw: bytes) -> str:
    """The short reason of an error body, for the log: OpenAI's {"error": {"message"}} if
    present."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(text.split())
    return text if len(text) <= ERROR_BODY_CHARS else text[: ERROR_BODY_CHARS - 1] + "…"
