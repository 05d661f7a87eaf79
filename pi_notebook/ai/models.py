"""The model catalogue (``catalogue.json`` in this package), API keys from the environment, and
``parse_model("provider/model-id")``."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from .types import Model, ThinkingLevel

__all__ = [
    "PROVIDER_ENV_KEYS",
    "clamp_thinking_level",
    "custom_model",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "models_are_equal",
    "parse_model",
    "register_model",
    "supported_thinking_levels",
    "unregister_model",
]

PROVIDER_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "huggingface": ("HF_TOKEN",),
}
"""Environment variables holding each provider's key, in order of preference."""

_THINKING_ORDER: tuple[ThinkingLevel, ...] = (
    "off",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)
_custom: dict[str, dict[str, Model]] = {}


@cache
def _catalogue() -> dict[str, dict[str, Model]]:
    text = resources.files(__package__).joinpath("catalogue.json").read_text(encoding="utf-8")
    raw: dict[str, Any] = json.loads(text)
    out: dict[str, dict[str, Model]] = {}
    for provider, block in raw["providers"].items():
        defaults = {k: v for k, v in block.items() if k != "models"}
        models: dict[str, Model] = {}
        for entry in block["models"]:
            model = _catalogue_entry(provider, defaults, entry)
            if model.id in models:
                raise ValueError(f"catalogue.json: duplicate model {provider}/{model.id}")
            models[model.id] = model
        out[provider] = models
    return out


def _catalogue_entry(provider: str, defaults: dict[str, Any], entry: dict[str, Any]) -> Model:
    """One catalogue model: the provider block's defaults under the entry's own fields, with
    ``compat`` and ``headers`` merged key by key rather than replaced."""
    fields = {**defaults, "provider": provider, **entry}
    for key in ("compat", "headers"):
        if key in defaults and key in entry:
            fields[key] = {**defaults[key], **entry[key]}
    try:
        return Model.model_validate(fields)
    except ValueError as exc:
        raise ValueError(f"catalogue.json: bad entry {provider}/{entry.get('id')}: {exc}") from exc


def _all() -> dict[str, dict[str, Model]]:
    merged = {p: dict(ms) for p, ms in _catalogue().items()}
    for provider, models in _custom.items():
        merged.setdefault(provider, {}).update(models)
    return merged


def get_providers() -> list[str]:
    """Every provider with at least one model, in catalogue order."""
    return list(_all())


def get_models(provider: str | None = None) -> list[Model]:
    """The models of ``provider`` (or of all providers)."""
    catalogue = _all()
    if provider is None:
        return [m for models in catalogue.values() for m in models.values()]
    if provider not in catalogue:
        raise KeyError(f"Unknown provider {provider!r}. Known: {', '.join(catalogue)}")
    return list(catalogue[provider].values())


def get_model(provider: str, model_id: str) -> Model:
    """One model of the catalogue; a ``KeyError`` naming the nearest ids when unknown."""
    models = {m.id: m for m in get_models(provider)}
    if model_id in models:
        return models[model_id]
    needle = model_id.lower()
    close = [m for m in models if needle in m.lower()]
    similar = difflib.get_close_matches(model_id, list(models), n=5, cutoff=0.5)
    close += [m for m in similar if m not in close]
    hint = f" Did you mean: {', '.join(close[:5])}?" if close else f" Known: {', '.join(models)}."
    raise KeyError(f"Unknown model {provider}/{model_id}.{hint}")


def parse_model(ref: str) -> Model:
    """``"provider/model-id"`` → ``Model``. The model id may itself contain slashes
    (``openrouter/anthropic/claude-sonnet-4.5``)."""
    if not isinstance(ref, str):
        raise TypeError(f"Expected a 'provider/model-id' string, got {type(ref).__name__}")
    provider, sep, model_id = ref.strip().partition("/")
    if not sep or not provider.strip() or not model_id.strip():
        raise ValueError(
            f"Expected PROVIDER/MODEL-ID (e.g. anthropic/claude-sonnet-4-5), got {ref!r}"
        )
    return get_model(provider.strip(), model_id.strip())


def register_model(model: Model) -> None:
    """Add (or replace) a model for this process: custom endpoints, local servers.
    ``get_model``/``parse_model`` find it under ``model.provider``."""
    if not isinstance(model, Model):
        raise TypeError(f"register_model expects a Model, got {type(model).__name__}")
    _custom.setdefault(model.provider, {})[model.id] = model


def unregister_model(provider: str, model_id: str) -> None:
    """Remove a model added with ``register_model`` (no-op when absent)."""
    _custom.get(provider, {}).pop(model_id, None)


_COMPATIBLE_SERVER_COMPAT: dict[str, Any] = {
    "maxTokensField": "max_tokens",
    "supportsDeveloperRole": False,
    "supportsStore": False,
    "supportsReasoningEffort": False,
}
"""What a generic OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio) understands."""


def custom_model(
    model_id: str,
    base_url: str,
    *,
    provider: str = "custom",
    api: str = "openai-completions",
    **fields: Any,
) -> Model:
    """A model on any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, …).

    ``base_url`` is the API root the server's paths hang off (``http://localhost:11434/v1``).
    For ``openai-completions`` the compat flags default to what such servers accept
    (``max_tokens``, no developer role, no ``store``); ``compat=`` overrides them key by key.
    Other keyword arguments are ``Model`` fields (``context_window``, ``max_tokens``, ``cost``…).
    """
    if not model_id:
        raise ValueError("custom_model needs a model id")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"custom_model needs an http(s) base URL, got {base_url!r}")
    if api == "openai-completions":
        fields["compat"] = {**_COMPATIBLE_SERVER_COMPAT, **(fields.get("compat") or {})}
    return Model(
        id=model_id,
        name=fields.pop("name", model_id),
        api=api,
        provider=provider,
        base_url=base_url.rstrip("/"),
        **fields,
    )


def models_are_equal(a: Model | None, b: Model | None) -> bool:
    """Whether ``a`` and ``b`` name the same model (``id`` and ``provider``; pi's rule)."""
    return a is not None and b is not None and a.id == b.id and a.provider == b.provider


def get_env_api_key(provider: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key for ``provider`` from its environment variables (or ``environ``), if set."""
    env = os.environ if environ is None else environ
    for name in PROVIDER_ENV_KEYS.get(provider, (f"{provider.upper().replace('-', '_')}_API_KEY",)):
        value = env.get(name)
        if value:
            return value
    return None


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """``["off"]`` for a model that cannot think; else every level not mapped to ``None`` in
    ``thinking_level_map``, with ``xhigh`` and ``max`` only when the map names them."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    levels: list[ThinkingLevel] = []
    for level in _THINKING_ORDER:
        if level in ("xhigh", "max") and level not in mapping:
            continue
        if level in mapping and mapping[level] is None:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """The supported level nearest to ``level``, searching upward first, then downward."""
    supported = supported_thinking_levels(model)
    if level in supported:
        return level
    start = _THINKING_ORDER.index(level)
    for candidate in _THINKING_ORDER[start + 1 :]:
        if candidate in supported:
            return candidate
    for candidate in reversed(_THINKING_ORDER[:start]):
        if candidate in supported:
            return candidate
    return "off"
