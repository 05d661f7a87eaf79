"""While llama.cpp loads the embedded model a run shows nothing: ``%%agent`` says in its cell
that the local model is starting (and that its weights are downloaded first, when they are),
only when this run will start it; the model resolution tells its ``notify`` the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.ai import Model, local
from pi_notebook.notebook import default_model
from tests.notebook.kernel_notebook import execute, outputs_text


@pytest.fixture
def fake_start(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The server's start replaced by a marker (the real one: the test marked local_llm)."""
    started: list[str] = []

    async def start() -> Model:
        started.append("started")
        return Model(id="smollm2-135m", name="x", api="openai-completions", provider="local")

    monkeypatch.setattr(default_model, "start_local_model_async", start)
    return started


@pytest.mark.parametrize("cached", [True, False])
async def test_starting_the_local_model_is_announced_first(
    monkeypatch: pytest.MonkeyPatch, fake_start: list[str], cached: bool
) -> None:
    monkeypatch.setattr(default_model, "local_model_running", lambda: False)
    monkeypatch.setattr(default_model, "local_model_available", lambda: True)
    monkeypatch.setattr(default_model, "cached_model_path", lambda: _Path(cached))
    said: list[str] = []

    def notify(text: str) -> None:
        said.append(f"{text} (started: {len(fake_start)})")

    model = await default_model.resolve_default_model({}, notify=notify)
    assert model.provider == "local" and fake_start == ["started"]
    weights = "" if cached else ", downloading its weights once (93 MB)"
    assert said == [f"Starting the local model (SmolLM2 135M on llama.cpp){weights} … (started: 0)"]


async def test_nothing_is_said_when_the_server_is_up(
    monkeypatch: pytest.MonkeyPatch, fake_start: list[str]
) -> None:
    monkeypatch.setattr(default_model, "local_model_running", lambda: True)
    said: list[str] = []
    await default_model.resolve_model("local", notify=said.append)
    assert fake_start == ["started"] and said == []


def test_whether_a_run_will_start_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(default_model, "local_model_available", lambda: True)
    monkeypatch.setattr(default_model, "local_model_running", lambda: False)
    will = default_model.will_start_local
    assert will(None, {}) and will("local", {}) and will(" local/smollm2-135m", {})
    assert not will("faux/faux-1", {})
    assert not will(None, {"ANTHROPIC_API_KEY": "k"})
    assert not will(None, {"PI_NOTEBOOK_MODEL": "openai/gpt-5.1"})
    assert will(None, {"PI_NOTEBOOK_MODEL": "local", "ANTHROPIC_API_KEY": "k"})
    monkeypatch.setattr(default_model, "local_model_running", lambda: True)
    assert not will(None, {}) and default_model.local_start_notice() is None
    monkeypatch.setattr(default_model, "local_model_running", lambda: False)
    monkeypatch.setattr(default_model, "local_model_available", lambda: False)
    assert not will(None, {})


@pytest.mark.local_llm
@pytest.mark.timeout(300)
def test_agent_says_in_its_cell_that_the_local_model_starts(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            "%%agent --wait\nSay hello in five words.",
            "%%agent --wait\nAnd in three?",
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb"},
        timeout=240,
    )
    first, second = outputs_text(nb.cells[1]), outputs_text(nb.cells[2])
    assert first.startswith("Starting the local model (SmolLM2 135M on llama.cpp)"), first
    assert "Starting the local model" not in second, second


@pytest.mark.local_llm
@pytest.mark.timeout(300)
def test_the_real_server_is_running_once_started(local_model: Model) -> None:
    assert local.local_model_running()


class _Path:
    def __init__(self, exists: bool) -> None:
        self.exists = exists

    def is_file(self) -> bool:
        return self.exists


def test_a_bad_configured_model_is_reported_by_the_run_not_the_magic(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            "%%agent\nhi",
            "import pi_notebook\nawait pi_notebook.current().wait()\n"
            "print(pi_notebook.current().last_run.state)",
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb", "PI_NOTEBOOK_MODEL": "nonsense"},
        allow_errors=True,
    )
    agent_cell = outputs_text(nb.cells[1])
    assert "Traceback" not in agent_cell and "Starting the local model" not in agent_cell
    assert outputs_text(nb.cells[2]).strip().endswith("error"), outputs_text(nb.cells[2])
