"""Models on servers already running on this machine: references (``ollama/NAME``,
``llamacpp:PORT/NAME``), finding the servers, and asking one for a model's window and tool
support, against a server that answers as Ollama does and the real llama.cpp."""

from __future__ import annotations

import asyncio

import pytest

from pi_notebook.ai import Context, Model, UserMessage, local, stream
from pi_notebook.ai.local_servers import (
    FALLBACK_CONTEXT,
    FoundServer,
    describe_servers,
    discover_servers,
    server_model,
)
from pi_notebook.ai.server_refs import default_port, is_server_ref, parse_server_ref, server_ref

from ..ollama_server import MODELS, OllamaLike, free_port


def test_references_name_the_kind_the_port_and_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("LLAMA_ARG_PORT", raising=False)
    assert parse_server_ref("ollama/qwen2.5-coder:7b") == ("ollama", 11434, "qwen2.5-coder:7b")
    assert parse_server_ref("lmstudio/qwen/qwen3-4b") == ("lmstudio", 1234, "qwen/qwen3-4b")
    assert parse_server_ref("llamacpp:8081/smol") == ("llamacpp", 8081, "smol")
    assert server_ref("llamacpp", 8080, "smol") == "llamacpp/smol"
    assert server_ref("llamacpp", 8081, "smol") == "llamacpp:8081/smol"
    assert is_server_ref("ollama/x") and not is_server_ref("openai/gpt-5.1")
    assert not is_server_ref("ollama")
    for bad, message in [
        ("ollama/", "names no model"),
        ("llamacpp:99999/x", "port must be a number"),
        ("llamacpp:abc/x", "port must be a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_server_ref(bad)
    # A server started with its own address variable is found there.
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")
    monkeypatch.setenv("LLAMA_ARG_PORT", "9090")
    assert default_port("ollama") == 11500 and default_port("llamacpp") == 9090
    assert parse_server_ref("ollama/x")[1] == 11500
    assert server_ref("ollama", 11500, "x") == "ollama/x"


async def test_an_ollama_server_is_found_with_its_models() -> None:
    closed = free_port()
    with OllamaLike() as ollama:
        found = await discover_servers([("ollama", ollama.port), ("llamacpp", closed)])
    assert found == [FoundServer("ollama", ollama.port, tuple(MODELS))]
    assert ollama.requests == [("GET", "/api/tags", None)]
    text = describe_servers(found)
    assert f"Ollama on 127.0.0.1:{ollama.port}" in text
    assert f"%model ollama:{ollama.port}/qwen2.5-coder:7b" in text
    assert describe_servers([]).startswith("No local model server answers (Ollama (")


async def test_a_server_that_does_not_answer_costs_only_the_timeout() -> None:
    with OllamaLike(hang=True) as ollama:
        found = await asyncio.wait_for(
            discover_servers([("ollama", ollama.port)], timeout=0.2), timeout=10
        )
    assert found == []


async def test_a_model_on_ollama_streams_and_says_whether_it_calls_tools() -> None:
    with OllamaLike(reply="Hello from Ollama.") as ollama:
        qwen = await server_model(f"ollama:{ollama.port}/qwen2.5-coder:7b")
        smol = await server_model(f"ollama:{ollama.port}/smollm2:135m")
        model = qwen.model
        assert (model.provider, model.id, model.api) == (
            f"ollama:{ollama.port}",
            "qwen2.5-coder:7b",
            "openai-completions",
        )
        assert model.base_url == f"http://127.0.0.1:{ollama.port}/v1"
        assert model.context_window == FALLBACK_CONTEXT  # Ollama's num_ctx, not the 32k maximum
        assert (qwen.calls_tools, smol.calls_tools) == (True, False)
        reply = await stream(model, Context(messages=[UserMessage(content="Hi")])).result()
        assert reply.stop_reason == "stop", reply.error_message
        assert reply.text == "Hello from Ollama."
        assert reply.usage.input == 31
        chat = [body for method, path, body in ollama.requests if path == "/v1/chat/completions"]
        assert chat[0]["model"] == "qwen2.5-coder:7b" and chat[0]["stream"] is True


async def test_a_missing_model_or_server_is_a_clear_error() -> None:
    missing = r"has no model 'nope' \(it has: qwen2.5-coder:7b, "
    with OllamaLike() as ollama, pytest.raises(LookupError, match=missing):
        await server_model(f"ollama:{ollama.port}/nope")
    closed = free_port()
    with pytest.raises(LookupError, match=f"no llama.cpp server answers on 127.0.0.1:{closed}"):
        await server_model(f"llamacpp:{closed}/x")


@pytest.mark.local_llm
async def test_the_real_llama_cpp_is_found_with_its_window(local_model: Model) -> None:
    port = int(local_model.base_url.removesuffix("/v1").rsplit(":", 1)[1])
    found = await discover_servers([("llamacpp", port)])
    assert found == [FoundServer("llamacpp", port, (local.MODEL_ID,))]
    on_server = await server_model(f"llamacpp:{port}/{local.MODEL_ID}")
    assert on_server.model.context_window == local.DEFAULT_N_CTX
    assert on_server.calls_tools is False  # SmolLM2's own template has no tool calls
    reply = await stream(
        on_server.model, Context(messages=[UserMessage(content="Hi")]), max_tokens=4
    ).result()
    assert reply.stop_reason in ("stop", "length"), reply.error_message
