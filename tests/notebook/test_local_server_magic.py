"""``%model`` and models on servers already running on this machine, in a real kernel
(nbclient): ``%model`` lists what it finds, ``%model ollama/NAME`` switches to it with no code,
a run streams from it, and a reopened notebook keeps it. The server answers as Ollama does
(``tests/ollama_server.py``); the kernel finds it through Ollama's own ``OLLAMA_HOST``."""

from __future__ import annotations

from pathlib import Path

import nbformat

from pi_notebook import testing

from ..ollama_server import OllamaLike, free_port


def _write(directory: Path, name: str, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = directory / name
    nbformat.write(nb, path)
    return path


def test_model_lists_local_servers_and_switches_to_one_without_code(tmp_path: Path) -> None:
    with OllamaLike(reply="Revenue is in the sales column.") as ollama:
        env = {
            "OLLAMA_HOST": f"127.0.0.1:{ollama.port}",
            "LLAMA_ARG_PORT": str(free_port()),  # no llama.cpp of another test is listed
            "PI_NOTEBOOK_MODEL": "",
        }
        path = _write(
            tmp_path,
            "ollama.ipynb",
            [
                "%load_ext pi_notebook\n%agent_context off",
                "%model",
                "%model ollama/nope",
                "%model ollama/qwen2.5-coder:7b",
                "%%agent --wait\nWhere is the revenue?",
                "import pi_notebook\nprint(pi_notebook.current().last_run.result.text)",
                "%model",
            ],
        )
        nb = testing.run_notebook(path, cassette=None, env=env, workdir=tmp_path / "run")
        nb.check()
        listed = nb.text(1)
        assert f"Ollama on 127.0.0.1:{ollama.port}" in listed, listed
        assert "%model ollama/qwen2.5-coder:7b" in listed and "%model ollama/smollm2:135m" in listed
        assert nb.text(2) == (
            f"%model failed: Ollama on port {ollama.port} has no model 'nope' "
            "(it has: qwen2.5-coder:7b, smollm2:135m)"
        )
        assert nb.text(3) == "Model: ollama/qwen2.5-coder:7b"
        assert nb.text(5) == "Revenue is in the sales column.\n"
        shown = nb.text(6)
        assert shown.startswith("ollama/qwen2.5-coder:7b (qwen2.5-coder:7b (Ollama)) via ")
        assert "context window: 4,096 tokens" in shown
        chats = [body for _, route, body in ollama.requests if route == "/v1/chat/completions"]
        assert len(chats) == 1 and chats[0]["model"] == "qwen2.5-coder:7b"

        # Reopened (a new kernel on the same notebook and session): the session's model is
        # asked of the server again.
        (tmp_path / "reopen").mkdir()
        again = _write(
            tmp_path / "reopen",
            "ollama.ipynb",
            [
                "%load_ext pi_notebook\n%agent_context off",
                "%%agent --wait\nAnd the cities?",
                "import pi_notebook\nprint(pi_notebook.current().harness.model.ref)",
            ],
        )
        nb = testing.run_notebook(again, cassette=None, env=env, workdir=tmp_path / "run")
        nb.check()
        assert nb.text(2) == "ollama/qwen2.5-coder:7b\n"


def test_a_model_that_cannot_call_tools_is_offered_none_and_says_so(tmp_path: Path) -> None:
    """Ollama says smollm2:135m has no "tools" capability: it gets no tools, the run view and
    ``%model`` say it answers only; ``%model --tools yes`` overrides, ``auto`` goes back."""
    with OllamaLike(reply="Hi.") as ollama:
        env = {"OLLAMA_HOST": f"127.0.0.1:{ollama.port}", "PI_NOTEBOOK_MODEL": ""}
        path = _write(
            tmp_path,
            "smol.ipynb",
            [
                "%load_ext pi_notebook\n%agent_context off",
                "%model ollama/smollm2:135m",
                "%%agent --wait\nHello?",
                "%model",
                "%model --tools yes",
                "%%agent --wait\nAnd now?",
                "%model --tools auto",
                "%model ollama/qwen2.5-coder:7b",
                "%%agent --wait\nAnd with Qwen?",
            ],
        )
        nb = testing.run_notebook(path, cassette=None, env=env, workdir=tmp_path / "run")
        nb.check()
        chats = [body for _, route, body in ollama.requests if route == "/v1/chat/completions"]
        assert len(chats) == 3
        assert "tools" not in chats[0]  # answers only: no tools offered
        assert chats[1]["tools"] and chats[2]["tools"]  # overridden; a model that calls tools
        assert "tool calls: no: this model cannot call tools: answers only" in nb.text(3)
        assert nb.text(4) == "tool calls: yes (%model --tools)\n"
        assert nb.text(6) == "tool calls: no: this model cannot call tools: answers only\n"
        headers = [view["header"] for view in nb.run_views]
        assert [header["answers_only"] for header in headers] == [True, False, False]


def test_a_bad_server_reference_is_one_usage_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "bad.ipynb",
        [
            "%load_ext pi_notebook",
            "from IPython.core.error import UsageError\n"
            "try:\n"
            "    get_ipython().run_line_magic('model', 'llamacpp:99999/x')\n"
            "except UsageError as exc:\n"
            "    print('usage error:', exc)",
        ],
    )
    nb = testing.run_notebook(path, cassette=None, workdir=tmp_path / "run")
    nb.check()
    assert nb.text(1) == (
        "usage error: 'llamacpp:99999/x': the port must be a number from 1 to 65535\n"
    )
