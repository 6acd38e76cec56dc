"""Which models an agent serves (its catalog), and whether a requested model is one of them.

An agent's backend says what it serves: the agent's own `model`, the backend's `model` (an
OpenAI-compatible backend's default), the backend's configured `models` list and, for an
OpenAI-compatible backend with `refreshModels: true`, what its `/v1/models` answered when it was
last refreshed (`refresh_models()`, through the outbound policy of outbound.py; the admin's
"Refresh model catalog" action and `manage.py refresh_models` call it). OpenClaw's
`agents.defaults.models` (`{"<model id>": {"alias"?}}`) narrows every catalog to its ids when it
is not empty, and its aliases name models.

sessions_spawn checks an explicit `model` against the target agent's catalog (reference §5.2
step 12: an unknown model is an error and no run starts), and a session's model override
(session_status, the sessions tool, sessions.patch) is held to it the same way
(check_session_model); agents_list and the admin show it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.utils import timezone

from openclaw_common.errors import InvalidArgument

from ..lib import outbound
from ..models import Agent, GatewayConfig, Session
from .backends import BackendError
from .backends.openai import request_headers

MODEL_SHAPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
MAX_MODELS = 500
REFRESH_TIMEOUT_SECONDS = 10
REFRESH_MAX_BYTES = 2 * 1024 * 1024


class ModelNotAllowed(Exception):
    """The requested model is not in the agent's catalog; the message names the allowed ones."""


class RefreshFailed(Exception):
    """/v1/models could not be read; the message says why (never the remote body)."""


# --- settings and backend fields -------------------------------------------------------------


def clean_model_list(where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_MODELS:
        raise InvalidArgument(f"{where} must be an array of at most {MAX_MODELS} model ids")
    for item in value:
        if not isinstance(item, str) or not MODEL_SHAPE.match(item.strip()):
            raise InvalidArgument(
                f"{where}: {item!r} is not a model id (letters, digits and . _ : / @ + -)"
            )
    return list(dict.fromkeys(item.strip() for item in value))


def clean_default_models(path: str, value: Any) -> dict[str, dict]:
    """agents.defaults.models: OpenClaw's map {"<id>": {"alias"?: str}}, or a list of ids."""
    if isinstance(value, list):
        return {model: {} for model in clean_model_list(path, value)}
    if not isinstance(value, dict):
        raise InvalidArgument(f'{path} must be an object {{"<model id>": {{"alias"?}}}}')
    clean_model_list(path, list(value))
    cleaned: dict[str, dict] = {}
    for model, entry in value.items():
        entry = entry or {}
        if not isinstance(entry, dict) or set(entry) - {"alias"}:
            raise InvalidArgument(f'{path}.{model} must be an object with only "alias"')
        alias = entry.get("alias")
        if alias is not None and (not isinstance(alias, str) or not MODEL_SHAPE.match(alias)):
            raise InvalidArgument(f"{path}.{model}.alias must be a short name")
        cleaned[model.strip()] = {"alias": alias} if alias else {}
    return cleaned


# --- the catalog -----------------------------------------------------------------------------


def served_models(agent: Agent | None) -> list[str]:
    """What the agent's backend serves, before agents.defaults.models narrows it."""
    if agent is None:
        return []
    backend = agent.backend or {}
    found = [agent.model, backend.get("model") or "", *(backend.get("models") or [])]
    if backend.get("type") == "openai" and backend.get("refreshModels"):
        found += agent.discovered_models or []
    return list(dict.fromkeys(m.strip() for m in found if isinstance(m, str) and m.strip()))


def catalog(agent: Agent | None, config: GatewayConfig) -> list[str]:
    """The models `agent` may be given: what it serves, narrowed by agents.defaults.models."""
    models = served_models(agent)
    allowed = config.default_models or {}
    return [m for m in models if m in allowed] if allowed else models


def resolve(agent: Agent | None, agent_id: str, requested: str, config: GatewayConfig) -> str:
    """The model id `requested` names for `agent` (an alias of agents.defaults.models is read
    as its id). Raises ModelNotAllowed, naming what is allowed."""
    aliases = {
        (entry or {}).get("alias"): model
        for model, entry in (config.default_models or {}).items()
        if (entry or {}).get("alias")
    }
    model = aliases.get(requested, requested)
    allowed = catalog(agent, config)
    if model in allowed:
        return model
    if allowed:
        raise ModelNotAllowed(
            f"model not allowed: {requested} (agent {agent_id} serves: {', '.join(allowed)})"
        )
    raise ModelNotAllowed(
        f"model not allowed: {requested} (agent {agent_id} has no models to choose from: set "
        "its model or backend.models"
        + (", within agents.defaults.models" if config.default_models else "")
        + ")"
    )


def check_session_model(
    session: Session, requested: str, config: GatewayConfig | None = None
) -> str:
    """The model id for a session's runs (session_status `model`, the sessions tool's and
    sessions.patch's `model`), held to what sessions_spawn holds a child to: when the session's
    agent has a catalog, one of it (an alias names its id). An agent with none takes any id,
    its backend deciding, as before catalogs. Raises InvalidArgument with resolve's text."""
    config = config or GatewayConfig.load()
    agent = session.agent
    if not catalog(agent, config):
        return requested
    try:
        return resolve(agent, session.agent_id, requested, config)
    except ModelNotAllowed as exc:
        raise InvalidArgument(str(exc)) from None


# --- /v1/models ------------------------------------------------------------------------------


def models_url(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    return f"{url}/models"


def refresh_models(agent: Agent) -> list[str]:
    """Read the backend's `/v1/models` (OpenAI's list: {"data": [{"id"}]}) and store the ids.

    Only for an OpenAI-compatible backend; through outbound.get (the deployment's outbound
    policy, no redirects, bounded size). Raises RefreshFailed, and then keeps the old list.
    """
    backend = agent.backend or {}
    if backend.get("type") != "openai":
        raise RefreshFailed(f"agent {agent.id}: only an openai backend lists its models")
    try:
        headers = request_headers(backend.get("apiKeyEnv", ""))
        response = outbound.get(
            models_url(backend.get("baseUrl", "")),
            headers,
            timeout=REFRESH_TIMEOUT_SECONDS,
            max_bytes=REFRESH_MAX_BYTES,
        )
    except (outbound.OutboundRefused, outbound.OutboundFailed, BackendError) as exc:
        raise RefreshFailed(f"agent {agent.id}: {exc}") from None
    if response.status != 200:
        raise RefreshFailed(f"agent {agent.id}: /models answered {response.describe()}")
    models = _model_ids(response.body)
    if models is None:
        raise RefreshFailed(
            f'agent {agent.id}: /models did not answer {{"data": [{{"id": …}}]}} '
            f"({response.describe()})"
        )
    agent.discovered_models = models
    agent.models_refreshed_at = timezone.now()
    agent.save(update_fields=["discovered_models", "models_refreshed_at", "updated_at"])
    return models


def _model_ids(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    ids = [item.get("id") for item in items if isinstance(item, dict)]
    # Ids a model could not be asked for are left out rather than failing the whole list.
    return list(dict.fromkeys(i for i in ids if isinstance(i, str) and MODEL_SHAPE.match(i)))[
        :MAX_MODELS
    ]
