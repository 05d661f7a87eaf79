"""OpenAI-compatible model servers running on this machine: Ollama, LM Studio and llama.cpp on
their usual ports, found with short loopback requests and named as models.

A model on such a server is named as ``server_refs`` says (``ollama/qwen2.5-coder:7b``).
Everything here is async: looking for servers never blocks the caller's event loop, and a port
nobody listens on answers at once (a refused loopback connection): a look takes at most
``timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx

from .server_refs import (
    LOCAL_SERVER_COMPAT,
    SERVER_KINDS,
    default_port,
    parse_server_ref,
    server_ref,
)
from .types import Model, ModelCost

__all__ = [
    "FoundServer",
    "ServerModel",
    "describe_servers",
    "discover_servers",
    "server_model",
]

DEFAULT_TIMEOUT: Final = 0.5
FALLBACK_CONTEXT: Final = 4096
"""The context window assumed when a server does not say: Ollama's default ``num_ctx``."""
_OUTPUT_SHARE: Final = 4
"""A reply may take up to a quarter of the window: room is left for the prompt and tools."""


@dataclass(frozen=True)
class FoundServer:
    """A server that answered, with the models it offers."""

    kind: str
    port: int
    models: tuple[str, ...]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def product(self) -> str:
        return SERVER_KINDS[self.kind][1]

    def refs(self) -> list[str]:
        return [server_ref(self.kind, self.port, model) for model in self.models]


@dataclass(frozen=True)
class ServerModel:
    """A model on a local server: the ``Model`` to talk to it, and whether it calls tools
    (None: the server does not say)."""

    model: Model
    calls_tools: bool | None


def _client(timeout: float) -> httpx.AsyncClient:
    # trust_env=False: a proxy from the environment must not see loopback requests.
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False)


async def _get_json(client: httpx.AsyncClient, url: str) -> Any:
    response = await client.get(url)
    response.raise_for_status()
    return response.json()


async def _models_of(client: httpx.AsyncClient, kind: str, port: int) -> tuple[str, ...] | None:
    base = f"http://127.0.0.1:{port}"
    try:
        if kind == "ollama":
            tags = await _get_json(client, f"{base}/api/tags")
            return tuple(str(entry["name"]) for entry in tags.get("models", []))
        listed = await _get_json(client, f"{base}/v1/models")
        return tuple(str(entry["id"]) for entry in listed.get("data", []))
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return None


async def discover_servers(
    ports: Iterable[tuple[str, int]] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> list[FoundServer]:
    """The servers answering on the known ports (or on ``ports``, pairs of kind and port),
    asked all at once."""
    wanted = list(ports) if ports is not None else [(k, default_port(k)) for k in SERVER_KINDS]
    async with _client(timeout) as client:
        answers = await asyncio.gather(*(_models_of(client, k, p) for k, p in wanted))
    return [
        FoundServer(kind, port, models)
        for (kind, port), models in zip(wanted, answers, strict=True)
        if models is not None
    ]


def describe_servers(found: Sequence[FoundServer]) -> str:
    """What ``%model`` prints about the servers found."""
    if not found:
        names = ", ".join(f"{name} ({default_port(k)})" for k, (_, name) in SERVER_KINDS.items())
        return f"No local model server answers ({names})."
    lines = ["Local model servers:"]
    for server in found:
        lines.append(f"  {server.product} on 127.0.0.1:{server.port}")
        lines.extend(f"    %model {ref}" for ref in server.refs())
        if not server.models:
            lines.append("    (no models)")
    return "\n".join(lines)


async def server_model(ref: str, *, timeout: float = 2.0) -> ServerModel:
    """The ``Model`` for ``KIND[:PORT]/MODEL-ID``, with the context window and tool support the
    server reports. Raises ``LookupError`` when the server does not answer or lacks the model."""
    kind, port, model_id = parse_server_ref(ref)
    product = SERVER_KINDS[kind][1]
    async with _client(timeout) as client:
        models = await _models_of(client, kind, port)
        if models is None:
            raise LookupError(f"no {product} server answers on 127.0.0.1:{port}")
        if model_id not in models:
            offered = ", ".join(models) or "none"
            raise LookupError(
                f"{product} on port {port} has no model {model_id!r} (it has: {offered})"
            )
        context, calls_tools = await _details(client, kind, port, model_id)
    model = Model(
        id=model_id,
        name=f"{model_id} ({product})",
        api="openai-completions",
        provider=kind if port == default_port(kind) else f"{kind}:{port}",
        base_url=f"http://127.0.0.1:{port}/v1",
        input=["text"],
        cost=ModelCost(),
        context_window=context,
        max_tokens=max(256, context // _OUTPUT_SHARE),
        # llama.cpp may drop a kept-alive connection after a streamed reply (see LocalServer).
        headers={"connection": "close"} if kind == "llamacpp" else None,
        compat=dict(LOCAL_SERVER_COMPAT),
    )
    return ServerModel(model, calls_tools)


async def _details(
    client: httpx.AsyncClient, kind: str, port: int, model_id: str
) -> tuple[int, bool | None]:
    """(context window, calls tools) as the server reports them; the fallbacks otherwise."""
    base = f"http://127.0.0.1:{port}"
    try:
        if kind == "llamacpp":
            props = await _get_json(client, f"{base}/props")
            n_ctx = int(props["default_generation_settings"]["n_ctx"])
            caps = props.get("chat_template_caps") or {}
            return n_ctx, bool(caps["supports_tool_calls"]) if caps else None
        if kind == "ollama":
            response = await client.post(f"{base}/api/show", json={"model": model_id})
            response.raise_for_status()
            capabilities = response.json().get("capabilities")
            tools = "tools" in capabilities if isinstance(capabilities, list) else None
            # Ollama serves the OpenAI API with its default num_ctx, not the model's maximum.
            return FALLBACK_CONTEXT, tools
        info = await _get_json(client, f"{base}/api/v0/models/{model_id}")
        context = int(info.get("loaded_context_length") or info.get("max_context_length"))
        capabilities = info.get("capabilities")
        tools = "tool_use" in capabilities if isinstance(capabilities, list) else None
        return context, tools
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return FALLBACK_CONTEXT, None
