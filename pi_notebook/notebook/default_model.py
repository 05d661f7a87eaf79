"""Which model a fresh notebook agent uses.

In order: ``PI_NOTEBOOK_MODEL`` (``provider/model-id``, or ``local``); else the first provider
whose API key is in the environment (its default model below); else the embedded local model
(SmolLM2 on llama.cpp, when the ``local`` extra is installed); else ``NoModelError`` saying how to
configure one. ``%model`` changes it for the session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..ai.local import local_model_available, start_local_model_async
from ..ai.models import get_env_api_key, get_model, parse_model
from ..ai.types import Model

__all__ = [
    "LOCAL_ALIASES",
    "PROVIDER_DEFAULTS",
    "NoModelError",
    "check_model_ref",
    "model_from_api_keys",
    "resolve_default_model",
    "resolve_model",
]

PROVIDER_DEFAULTS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5.1",
    "google": "gemini-2.5-flash",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "groq": "openai/gpt-oss-120b",
    "deepseek": "deepseek-chat",
    "xai": "grok-4-1-fast-reasoning",
    "mistral": "mistral-large-latest",
}
"""Each provider's model when only its API key is known, in order of preference."""

LOCAL_ALIASES = ("local", "local/smollm2-135m")


class NoModelError(RuntimeError):
    """No model is configured and none can be started."""

    def __init__(self) -> None:
        keys = ", ".join(sorted({"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"}))
        super().__init__(
            "No model is configured. Choose one with `%model PROVIDER/MODEL-ID` (or set "
            f"PI_NOTEBOOK_MODEL), set an API key such as {keys}, or install the embedded "
            'local model with `pip install "pi-notebook[local]"`.'
        )


def model_from_api_keys(environ: Mapping[str, str] | None = None) -> Model | None:
    """The default model of the first provider whose API key is set."""
    for provider, model_id in PROVIDER_DEFAULTS.items():
        if get_env_api_key(provider, environ) is not None:
            return get_model(provider, model_id)
    return None


def check_model_ref(ref: str) -> None:
    """Raise the error :func:`resolve_model` would for ``ref``, without starting anything (a
    magic checks its argument before it queues the switch). An unknown provider's message
    names ``local`` too, which is not in the catalogue."""
    if ref.strip() in LOCAL_ALIASES:
        return
    try:
        parse_model(ref)
    except KeyError as exc:
        text = str(exc.args[0]) if exc.args else str(exc)
        if text.startswith("Unknown provider"):
            text += f", or {LOCAL_ALIASES[0]} (the embedded local model)"
        raise KeyError(text) from None


async def resolve_model(ref: str) -> Model:
    """``provider/model-id`` (or ``local``) → ``Model``; starts the local model when asked for."""
    ref = ref.strip()
    if ref in LOCAL_ALIASES:
        return await start_local_model_async()
    return parse_model(ref)


async def resolve_default_model(environ: Mapping[str, str] | None = None) -> Model:
    env = os.environ if environ is None else environ
    configured = env.get("PI_NOTEBOOK_MODEL", "").strip()
    if configured:
        return await resolve_model(configured)
    from_keys = model_from_api_keys(environ)
    if from_keys is not None:
        return from_keys
    if local_model_available():
        return await start_local_model_async()
    raise NoModelError()
