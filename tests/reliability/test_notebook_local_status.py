"""While llama.cpp loads the embedded model a run shows nothing: the notebook's model resolution
says first that the local model is starting (in the output of the cell that started the run),
once, and not when the server is up already."""

from __future__ import annotations

import pytest

from pi_notebook.ai import Model, local
from pi_notebook.notebook import default_model


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
    monkeypatch: pytest.MonkeyPatch, fake_start: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(default_model, "local_model_running", lambda: True)
    await default_model.resolve_model("local")
    assert fake_start == ["started"] and capsys.readouterr().out == ""


async def test_by_default_it_goes_to_the_output(
    monkeypatch: pytest.MonkeyPatch, fake_start: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(default_model, "local_model_running", lambda: False)
    await default_model.resolve_model("local")
    assert capsys.readouterr().out.startswith("Starting the local model (SmolLM2 135M")


@pytest.mark.local_llm
@pytest.mark.timeout(300)
def test_the_real_server_is_running_once_started(local_model: Model) -> None:
    assert local.local_model_running()


class _Path:
    def __init__(self, exists: bool) -> None:
        self.exists = exists

    def is_file(self) -> bool:
        return self.exists
