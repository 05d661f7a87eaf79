"""``python -m pi_notebook.ai.local serve --model PATH.gguf``: one command serves a model file
with its family's chat template and sampling, on the real llama.cpp server, and prints the
``%model`` line that reaches it. Qwen2.5-Coder-1.5B (1 GB) is used where it is cached (as
``scripts/record_workspace.py`` downloads it, or ``PI_NOTEBOOK_QWEN_GGUF``); SmolLM2 always."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from pi_notebook.ai import Context, Model, Tool, UserMessage, local, stream
from pi_notebook.ai.local_families import LLAMA3, maintained_template
from pi_notebook.ai.local_servers import server_model

from ..ollama_server import free_port

QWEN = Path(
    os.environ.get("PI_NOTEBOOK_QWEN_GGUF")
    or Path.home() / ".cache" / "pi_notebook" / "qwen" / "qwen2.5-coder-1.5b-q4_k_m.gguf"
)
needs_qwen = pytest.mark.skipif(not QWEN.is_file(), reason=f"Qwen2.5-Coder-1.5B not at {QWEN}")
INSERT_CELL = Tool(
    name="insert_cell",
    description="Insert a code cell into the notebook and run it.",
    parameters={
        "type": "object",
        "properties": {"source": {"type": "string", "description": "The cell's code."}},
        "required": ["source"],
    },
)


@contextmanager
def _serve(*args: str) -> Iterator[tuple[list[str], int]]:
    """Run the serve command until it has printed its ``%model`` line; yield the lines and the
    port, then stop it with Ctrl-C."""
    port = free_port()
    command = [sys.executable, "-m", "pi_notebook.ai.local", "serve", "--port", str(port), *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            lines: list[str] = []
            while not lines or not lines[-1].startswith("Press Ctrl-C"):
                line = proc.stdout.readline()
                assert line, f"serve ended early: {lines} {proc.stderr and proc.stderr.read()}"
                lines.append(line.rstrip("\n"))
            yield lines, port
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=5, trust_env=False)


def _props(port: int) -> dict[str, object]:
    props: dict[str, object] = httpx.get(
        f"http://127.0.0.1:{port}/props", timeout=30, trust_env=False
    ).json()
    return props


@pytest.mark.local_llm
def test_serving_the_embedded_model_says_it_answers_only(local_model: Model) -> None:
    with _serve("--n-ctx", "512", "--threads", "1") as (lines, port):
        assert lines[0] == f"Serving smollm2-135m at http://127.0.0.1:{port}"
        assert "family: smollm2, chat template: gguf, context: 512 tokens" in lines[2]
        assert "tool calls: no (this model cannot call tools: answers only)" in lines[2]
        assert lines[3] == f"In a notebook: %model llamacpp:{port}/smollm2-135m"
        params = _props(port)["default_generation_settings"]["params"]  # type: ignore[index]
        assert params["dry_multiplier"] == pytest.approx(local.SAMPLING["dry_multiplier"])
        assert params["repeat_penalty"] == pytest.approx(local.SAMPLING["penalty_repeat"])


@pytest.mark.local_llm
async def test_the_printed_model_line_reaches_the_server(local_model: Model) -> None:
    path = str(local.cached_model_path())
    with _serve("--model", path, "--n-ctx", "1024", "--threads", "1", "--alias", "smol") as (
        lines,
        port,
    ):
        ref = lines[3].removeprefix("In a notebook: %model ")
        found = await server_model(ref)
        assert found.calls_tools is False
        model = found.model
        assert (model.provider, model.id, model.context_window) == (
            f"llamacpp:{port}",
            "smol",
            1024,
        )
        reply = await stream(
            model, Context(messages=[UserMessage(content="Hi")]), max_tokens=4
        ).result()
        assert reply.stop_reason in ("stop", "length"), reply.error_message


@pytest.mark.local_llm
def test_a_taken_port_or_a_missing_file_is_one_clear_line(
    local_model: Model, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "pi_notebook.ai.local", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: port {port} is in use (another server?); choose one with --port N"
    )
    missing = tmp_path / "nope.gguf"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pi_notebook.ai.local",
            "serve",
            "--port",
            "0",
            "--model",
            str(missing),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (1, f"error: --model {missing}: no such file")


@pytest.mark.local_llm
def test_the_llama3_template_is_one_llama_cpp_reads_tool_calls_with(local_model: Model) -> None:
    """No Llama 3 model is at hand: the template is loaded on SmolLM2, which llama.cpp accepts
    as a tool-call template and renders a request's tools with."""
    server = local.LocalServer(
        local.cached_model_path(),
        n_ctx=512,
        threads=1,
        chat_template=maintained_template(LLAMA3.template or ""),
    )
    with server:
        props = httpx.get(f"{server.address}/props", timeout=30, trust_env=False).json()
        assert props["chat_template_caps"]["supports_tool_calls"] is True
        rendered = httpx.post(
            f"{server.address}/apply-template",
            json={
                "messages": [{"role": "user", "content": "Insert a cell."}],
                "tools": [{"type": "function", "function": INSERT_CELL.model_dump()}],
            },
            timeout=30,
            trust_env=False,
        ).json()["prompt"]
        assert '"name": "insert_cell"' in rendered
        assert rendered.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


@pytest.mark.local_llm
@needs_qwen
async def test_qwen_served_with_its_family_template_calls_a_tool(local_model: Model) -> None:
    with _serve("--model", str(QWEN), "--n-ctx", "4096", "--threads", "1") as (lines, port):
        assert "family: qwen2.5, chat template: qwen2.5" in lines[2]
        assert "tool calls: yes" in lines[2]
        params = _props(port)["default_generation_settings"]["params"]  # type: ignore[index]
        assert params["temperature"] == pytest.approx(0.7)
        assert params["dry_multiplier"] == 0  # SmolLM2's penalties stay with SmolLM2
        found = await server_model(lines[3].removeprefix("In a notebook: %model "))
        assert found.calls_tools is True
        context = Context(
            system_prompt="You work in a Jupyter notebook. Use the tools.",
            messages=[UserMessage(content="Load sales.csv with pandas and show the first rows.")],
            tools=[INSERT_CELL],
        )
        reply = await stream(found.model, context, max_tokens=200, temperature=0).result()
        assert reply.stop_reason == "toolUse", (reply.stop_reason, reply.text)
        (call,) = reply.tool_calls
        assert call.name == "insert_cell" and "read_csv" in call.arguments["source"]
