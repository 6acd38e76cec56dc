"""Creating and updating agents (`PUT /api/v1/agents/{id}/`, seed_demo, import_openclaw)."""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import urlparse

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument

from ..lib import outbound
from ..lib.args import closed
from ..models import Agent, ApiKey
from ..runs import model_catalog, webhooks
from ..runs.subagent_limits import OVERRIDES
from ..store import check_storable, require_scope

AGENT_FIELDS = frozenset(
    {"name", "description", "model", "backend", "subagents", "sandboxed", "tools", "webhook"}
)


RULE_FIELDS = frozenset({"match", "on", "reply", "toolCalls", "error", "delayMs"})
RUN_KINDS = ("send", "step", "announce", "spawn", "ingest", "completion")


# One scripted turn may spawn as many children as maxChildrenPerAgent allows at most (100).
MAX_SCRIPTED_TOOL_CALLS = 100


def clean_rule(i: int, rule: Any) -> None:
    """One scripted rule (sessions_app/runs/backends/scripted.py documents the fields)."""
    where = f"backend.rules[{i}]"
    if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
        raise InvalidArgument(f"{where}.match must be a string")
    closed(rule, RULE_FIELDS, where=where)
    try:
        re.compile(rule["match"])
    except re.error as exc:
        raise InvalidArgument(f"{where}.match is not a valid regex: {exc}") from None
    for field in ("reply", "error"):
        if field in rule and not isinstance(rule[field], str):
            raise InvalidArgument(f"{where}.{field} must be a string")
    on = rule.get("on")
    if on is not None and (not isinstance(on, list) or not all(k in RUN_KINDS for k in on)):
        raise InvalidArgument(f"{where}.on must be an array of {', '.join(RUN_KINDS)}")
    delay = rule.get("delayMs", 0)
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= 600_000:
        raise InvalidArgument(f"{where}.delayMs must be an integer from 0 to 600000")
    calls = rule.get("toolCalls")
    if calls is not None:
        if not isinstance(calls, list) or len(calls) > MAX_SCRIPTED_TOOL_CALLS:
            raise InvalidArgument(
                f"{where}.toolCalls must be an array of at most {MAX_SCRIPTED_TOOL_CALLS} calls"
            )
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise InvalidArgument(f"{where}.toolCalls[{j}].name must be a string")
            if not isinstance(call.get("arguments", {}), dict) or set(call) - {"name", "arguments"}:
                raise InvalidArgument(f"{where}.toolCalls[{j}] must be {{name, arguments}}")


def clean_backend(value: Any) -> dict:
    """{"type": "scripted", "rules"?, "delayMs"?} or {"type": "openai", "baseUrl", "model", "apiKeyEnv"}."""
    if value is None:
        return {"type": "scripted"}
    if not isinstance(value, dict):
        raise InvalidArgument("backend must be an object")
    kind = value.get("type")
    if kind == "scripted":
        closed(value, {"type", "rules", "delayMs", "models"}, where="backend")
        _clean_models(value)
        rules = value.get("rules", [])
        if not isinstance(rules, list) or len(rules) > 200:
            raise InvalidArgument("backend.rules must be an array of at most 200 rules")
        for i, rule in enumerate(rules):
            clean_rule(i, rule)
        delay = value.get("delayMs", 0)
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= 600_000:
            raise InvalidArgument("backend.delayMs must be an integer from 0 to 600000")
        return dict(value)
    if kind == "openai":
        return clean_openai_backend(value)
    raise InvalidArgument('backend.type must be "scripted" or "openai"')


def clean_openai_backend(value: dict) -> dict:
    """The openai backend's fields; the URL and the key's variable pass sessions_app/lib/outbound.py."""
    closed(
        value, {"type", "baseUrl", "model", "apiKeyEnv", "models", "refreshModels"}, where="backend"
    )
    _clean_models(value)
    if not isinstance(value.get("refreshModels", False), bool):
        raise InvalidArgument("backend.refreshModels must be a boolean")
    for field in ("baseUrl", "model"):
        if not isinstance(value.get(field), str) or not value[field].strip():
            raise InvalidArgument(f"backend.{field} is required for an openai backend")
    parsed = urlparse(value["baseUrl"])
    if parsed.scheme not in {"http", "https"} or not parsed.netloc:
        raise InvalidArgument("backend.baseUrl must be an http(s) URL")
    refused = outbound.check_saved_url(value["baseUrl"])
    if refused:
        raise InvalidArgument(f"backend.baseUrl: {refused}")
    env = value.get("apiKeyEnv", "")
    if not isinstance(env, str) or (env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env)):
        raise InvalidArgument("backend.apiKeyEnv must be an environment variable name")
    refused = outbound.check_key_env(env)
    if refused:
        raise InvalidArgument(refused)
    return dict(value)


def _clean_models(backend: dict) -> None:
    """backend.models: the model ids the backend serves (model_catalog.py), checked in place."""
    if "models" in backend:
        backend["models"] = model_catalog.clean_model_list("backend.models", backend["models"])


def clean_subagent_settings(subagents: dict) -> dict[str, int]:
    """The agent's overrides of agents.defaults.subagents.* (runs/subagent_limits.py)."""
    found = {}
    for name, (_, low, high) in OVERRIDES.items():
        value = subagents.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidArgument(f"subagents.{name} must be an integer from {low} to {high}")
        found[name] = value
    return found


def clean_webhook(value: Any) -> dict[str, str]:
    """{"url": …} or null: where this agent's finished sends and spawns are POSTed, signed
    (delivery/adapters/agent_webhook.py). The signing secret is made here, once, and kept."""
    if value is None:
        return {"webhook_url": ""}
    if not isinstance(value, dict) or set(value) - {"url"}:
        raise InvalidArgument('webhook must be an object with only "url", or null')
    url = value.get("url")
    if url in (None, ""):
        return {"webhook_url": ""}
    if not isinstance(url, str) or len(url) > 2000:
        raise InvalidArgument("webhook.url must be a string of at most 2000 characters")
    parsed = urlparse(url.strip())
    if parsed.scheme not in {"http", "https"} or not parsed.netloc:
        raise InvalidArgument("webhook.url must be an http(s) URL")
    refused = outbound.check_saved_url(url)
    if refused:
        raise InvalidArgument(f"webhook.url: {refused}")
    return {"webhook_url": url.strip()}


def _str_list(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidArgument(f"{name} must be an array of non-empty strings")
    if len(value) > 200:
        raise InvalidArgument(f"{name} must have at most 200 entries")
    return [v.strip() for v in value]


def upsert_agent(*, api_key: ApiKey | None, agent_id: Any, data: Any) -> tuple[Agent, bool]:
    """Create or replace an agent's settings. Returns (agent, created)."""
    if api_key is not None:
        require_scope(api_key, ApiKey.OPERATOR)
    if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > 64:
        raise InvalidArgument("agent id must be a non-empty string of at most 64 characters")
    normalized = keys.normalize_agent_id(agent_id)
    if normalized != agent_id.strip():
        raise InvalidArgument(
            f"agent id must be lowercase letters, digits, - and _ (try {normalized})"
        )
    if not isinstance(data, dict):
        raise InvalidArgument("body must be a JSON object")
    # What the API's body check does, for the admin's JSON fields, the importer and seeds too
    # (a NUL in a scripted rule was a DataError on PostgreSQL).
    check_storable(data)
    closed(data, AGENT_FIELDS)
    values: dict[str, Any] = {}
    for field, limit in (("name", 200), ("description", 5000), ("model", 200)):
        value = data.get(field, "")
        if value is None:
            value = ""
        if not isinstance(value, str) or len(value) > limit:
            raise InvalidArgument(f"{field} must be a string of at most {limit} characters")
        values[field] = value.strip()
    values["backend"] = clean_backend(data.get("backend"))
    subagents = data.get("subagents") or {}
    if not isinstance(subagents, dict) or set(subagents) - {"allowAgents", *OVERRIDES}:
        names = ", ".join(f'"{n}"' for n in ("allowAgents", *OVERRIDES))
        raise InvalidArgument(f"subagents must be an object with only {names}")
    allow = _str_list("subagents.allowAgents", subagents.get("allowAgents"))
    values["allow_agents"] = [a if a == "*" else keys.normalize_agent_id(a) for a in allow]
    values["subagent_settings"] = clean_subagent_settings(subagents)
    values.update(clean_webhook(data.get("webhook")))
    sandboxed = data.get("sandboxed", False)
    if not isinstance(sandboxed, bool):
        raise InvalidArgument("sandboxed must be a boolean")
    values["sandboxed"] = sandboxed
    tools = data.get("tools") or {}
    if not isinstance(tools, dict) or set(tools) - {"allow", "deny"}:
        raise InvalidArgument('tools must be an object with "allow" and/or "deny"')
    values["tools_allow"] = _str_list("tools.allow", tools.get("allow"))
    values["tools_deny"] = _str_list("tools.deny", tools.get("deny"))
    agent, created = Agent.objects.update_or_create(id=normalized, defaults=values)
    webhooks.forget()
    if agent.webhook_url and not agent.webhook_secret:
        agent.webhook_secret = secrets.token_urlsafe(32)
        agent.save(update_fields=["webhook_secret"])
    return agent, created


def agent_as_dict(agent: Agent) -> dict:
    return {
        "id": agent.id,
        "name": agent.name,
        "description": agent.description,
        "model": agent.model,
        "backend": agent.backend,
        "subagents": {"allowAgents": agent.allow_agents, **(agent.subagent_settings or {})},
        "sandboxed": agent.sandboxed,
        "tools": {"allow": agent.tools_allow, "deny": agent.tools_deny},
        # The secret is shown to operators only (they verify the signatures with it).
        "webhook": {"url": agent.webhook_url, "secret": agent.webhook_secret}
        if agent.webhook_url
        else None,
    }
