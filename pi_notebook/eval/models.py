"""Which model the systems under test talk to, and serving a local one for all of them.

``--model local`` (or ``local/smollm2-135m``) serves the embedded SmolLM2 once, in the harness's
process; ``--gguf PATH`` serves that GGUF file (``--chat-template`` for a Jinja template that
teaches it tool calls). The served model is registered in each kernel as ``served/<id>``, and the
baselines call the same OpenAI-compatible endpoint. Without either, ``--model PROVIDER/ID`` is
resolved in the kernel as ``%model`` resolves it (API keys from the environment), and the
baselines use the model's endpoint when it speaks OpenAI Chat Completions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ai.local import LocalServer
    from ..ai.types import Model

__all__ = ["ModelSpec", "serve_model"]

SERVED_PROVIDER = "served"


@dataclass(frozen=True)
class ModelSpec:
    """The model under test, picklable for the worker processes."""

    ref: str
    """What the user asked for (``local``, ``openai/gpt-4o-mini``)."""
    served: Model | None = None
    """The model the harness serves itself (registered in each kernel)."""

    @property
    def kernel_ref(self) -> str:
        """The ``%model`` reference the notebook uses."""
        if self.served is not None:
            return f"{self.served.provider}/{self.served.id}"
        return self.ref

    def resolved(self) -> Model:
        """The ``Model`` (a catalogue or served one)."""
        if self.served is not None:
            return self.served
        from ..ai.models import parse_model

        return parse_model(self.ref)

    def chat_endpoint(self) -> tuple[str, str, str | None]:
        """``(base_url, model_id, api_key)`` of an OpenAI-compatible Chat Completions endpoint,
        for the baselines; ``ValueError`` when the model speaks another API."""
        model = self.resolved()
        if model.api != "openai-completions":
            raise ValueError(
                f"{self.ref} speaks {model.api}; the baselines need an OpenAI-compatible "
                "Chat Completions endpoint"
            )
        key = None
        if self.served is None:
            from ..ai.models import get_env_api_key

            key = get_env_api_key(model.provider)
        return model.base_url, model.id, key


_SERVED_FILE = "served-model.json"
_NOBODY = "http://127.0.0.1:9/v1"


def save_served(spec: ModelSpec, cassettes: Path) -> None:
    """Keep the served model's description next to recorded cassettes, so a replay names the
    same model without serving it (its address is dropped: nothing answers there)."""
    if spec.served is not None:
        cassettes.mkdir(parents=True, exist_ok=True)
        model = spec.served.model_copy(update={"base_url": _NOBODY})
        (cassettes / _SERVED_FILE).write_text(model.model_dump_json(indent=1), encoding="utf-8")


def replay_spec(ref: str, cassettes: Path) -> ModelSpec:
    """The model of a replay: the served model recorded with the cassettes, else ``ref``."""
    from ..ai.types import Model

    saved = cassettes / _SERVED_FILE
    if saved.is_file():
        return ModelSpec(ref, Model.model_validate_json(saved.read_text(encoding="utf-8")))
    return ModelSpec(ref)


def serve_model(
    ref: str,
    *,
    gguf: Path | None = None,
    chat_template: Path | None = None,
    n_ctx: int | None = None,
    threads: int = 1,
) -> tuple[ModelSpec, LocalServer | None]:
    """The model spec for ``ref``, starting a llama.cpp server for the embedded model or a GGUF
    file (the caller stops it)."""
    from ..ai.local import DEFAULT_N_CTX, MODEL_ID, LocalServer

    local = ref.strip() in ("local", f"local/{MODEL_ID}")
    if gguf is None and not local:
        return ModelSpec(ref), None
    alias = (ref.partition("/")[2] or MODEL_ID) if gguf is not None else MODEL_ID
    server = LocalServer(
        gguf,
        n_ctx=n_ctx or (8192 if gguf is not None else DEFAULT_N_CTX),
        threads=threads,
        alias=alias,
        chat_template=chat_template.read_text(encoding="utf-8") if chat_template else None,
        sampling={"temp": 0.0} if gguf is not None else None,
        startup_timeout=300,
    ).start()
    model = server.model().model_copy(update={"provider": SERVED_PROVIDER})
    return ModelSpec(ref, model), server
