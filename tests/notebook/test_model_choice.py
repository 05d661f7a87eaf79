"""``ModelChoice`` alone: the session's own model wins over the environment's, a model this kernel
lacks is reported rather than replaced, and what needs no start resolves at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.ai.models import get_model
from pi_notebook.harness import Session
from pi_notebook.notebook import model_choice
from pi_notebook.notebook.default_model import SessionModelMissing
from pi_notebook.notebook.model_choice import ModelChoice


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "s.pi.jsonl")


def test_the_sessions_own_model_wins_over_the_environments(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "openai/gpt-5.1")
    choice = ModelChoice(lambda: session)
    assert choice.session_ref() is None
    known = choice.known()
    assert known is not None and known.ref == "openai/gpt-5.1"
    session.append_model_change("anthropic", "claude-sonnet-4-5")
    assert choice.session_ref() == "anthropic/claude-sonnet-4-5"
    known = choice.known()
    assert known is not None and known.ref == "anthropic/claude-sonnet-4-5"
    assert choice.problem() is None


def test_a_session_not_open_has_no_model_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "openai/gpt-5.1")
    choice = ModelChoice(lambda: None)
    assert choice.session_ref() is None
    known = choice.known()
    assert known is not None and known.ref == "openai/gpt-5.1"


def test_a_model_this_kernel_lacks_is_reported_never_replaced(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "openai/gpt-5.1")
    session.append_model_change("mylab", "tiny-custom")
    choice = ModelChoice(lambda: session)
    with pytest.raises(SessionModelMissing, match="mylab/tiny-custom"):
        choice.known()
    problem = choice.problem()
    assert problem is not None and "mylab/tiny-custom" in problem


def test_the_pending_note_names_the_local_model_only_where_it_is_installed(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_choice, "local_model_available", lambda: True)
    from pi_notebook.ai import models

    def unstarted(ref: str) -> object:
        # an earlier test in this process may have started the local model (and registered it)
        if ref.startswith("local"):
            raise KeyError(ref)
        return parse(ref)

    parse = models.parse_model
    monkeypatch.setattr(models, "parse_model", unstarted)
    session.append_model_change("local", "smollm2-135m")
    choice = ModelChoice(lambda: session)
    note = choice.pending_note()
    assert note is not None and note.startswith("This session's model is the embedded local")
    assert choice.known() is None  # started by the first run, not known before
    monkeypatch.setattr(model_choice, "local_model_available", lambda: False)
    assert choice.pending_note() is None


async def test_what_needs_no_start_resolves_at_once() -> None:
    choice = ModelChoice(lambda: None)
    now = choice.resolve_now(" openai/gpt-5.1 ")
    assert now is not None and now.ref == "openai/gpt-5.1"
    assert choice.resolve_now("ollama/qwen2.5-coder:7b") is None  # its server is asked
    assert choice.resolve_now("local") is None  # started in the background
    given = get_model("anthropic", "claude-sonnet-4-5")
    assert await choice.first(given) is given
    resolved = await choice.resolve("openai/gpt-5.1")
    assert resolved.ref == "openai/gpt-5.1"


def test_without_a_cassette_the_stream_function_is_the_one_given() -> None:
    def stream(*_args: object) -> object:
        raise AssertionError("not called")

    choice = ModelChoice(lambda: None, stream)  # type: ignore[arg-type]
    assert choice.stream() is stream
    assert ModelChoice(lambda: None).stream() is None
