"""How a model on a server running on this machine is named: ``KIND/MODEL-ID``
(``ollama/qwen2.5-coder:7b``), or ``KIND:PORT/MODEL-ID`` for a server on another port than its
kind's usual one (``llamacpp:8081/qwen``). Plain string work, cheap to import: the magics check a
reference with it before anything is loaded.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = [
    "LOCAL_SERVER_COMPAT",
    "SERVER_KINDS",
    "default_port",
    "is_server_ref",
    "parse_server_ref",
    "server_ref",
]

SERVER_KINDS: Final[dict[str, tuple[int, str]]] = {
    "ollama": (11434, "Ollama"),
    "lmstudio": (1234, "LM Studio"),
    "llamacpp": (8080, "llama.cpp"),
}
"""Kind → (usual port, product name)."""

LOCAL_SERVER_COMPAT: Final[dict[str, str | bool]] = {
    "maxTokensField": "max_tokens",
    "supportsDeveloperRole": False,
    "supportsStore": False,
    "supportsReasoningEffort": False,
    "supportsUsageInStreaming": True,
}
"""The ``openai-completions`` quirks of the servers that run models on this machine (llama.cpp,
Ollama, LM Studio): ``max_tokens``, no developer role, no ``store``, no reasoning effort."""

_PORT_VARIABLES: Final = {"ollama": "OLLAMA_HOST", "llamacpp": "LLAMA_ARG_PORT"}
"""The servers' own environment variables for their address (Ollama's ``host:port``, llama.cpp's
port): where they are set, the server was most likely started with them."""


def default_port(kind: str) -> int:
    """The port a ``kind`` server listens on unless a reference names another: the port of its
    own environment variable when set, else the usual one."""
    port = SERVER_KINDS[kind][0]
    value = os.environ.get(_PORT_VARIABLES.get(kind, ""), "").strip()
    if value:
        text = value.rsplit(":", 1)[-1].rstrip("/")
        if text.isdigit() and 0 < int(text) < 65536:
            port = int(text)
    return port


def server_ref(kind: str, port: int, model_id: str) -> str:
    """The ``%model`` spelling of ``model_id`` on a ``kind`` server listening on ``port``."""
    return f"{kind}/{model_id}" if port == default_port(kind) else f"{kind}:{port}/{model_id}"


def is_server_ref(ref: str) -> bool:
    """Whether ``ref`` names a model on a local server (its syntax only)."""
    kind = ref.strip().split("/", 1)[0].split(":", 1)[0]
    return kind in SERVER_KINDS and "/" in ref


def parse_server_ref(ref: str) -> tuple[str, int, str]:
    """``KIND[:PORT]/MODEL-ID`` → (kind, port, model id). ``ValueError`` when it is not one."""
    head, sep, model_id = ref.strip().partition("/")
    kind, colon, port_text = head.partition(":")
    if kind not in SERVER_KINDS or not sep:
        raise ValueError(f"{ref!r} is not KIND/MODEL-ID with KIND one of {', '.join(SERVER_KINDS)}")
    if not model_id:
        raise ValueError(f"{ref!r} names no model: {kind}/MODEL-ID")
    port = default_port(kind)
    if colon:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{ref!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    return kind, port, model_id
