"""``SystemPrompt`` alone, over a real session in a folder without instruction files: the
default prompt names the tools on offer, instructions are written to the session only once they
say more than the default, and the harness then leaves the prompt to the session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pi_notebook.agent.tools import AgentTool
from pi_notebook.ai.models import get_model
from pi_notebook.ai.types import Model
from pi_notebook.harness import Session
from pi_notebook.notebook.room import request_overhead
from pi_notebook.notebook.system_prompt import SystemPrompt
from pi_notebook.tools import tool


def run_python(code: str) -> str:
    """Run code in the kernel."""
    return code


@dataclass
class Harness:
    model: Model
    system_prompt: str | None


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SystemPrompt, Session]:
    monkeypatch.chdir(tmp_path)  # no AGENTS.md, SYSTEM.md or APPEND_SYSTEM.md here
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent-dir"))
    session = Session.create(tmp_path / "s.pi.jsonl")
    offered: list[AgentTool] = [tool(run_python)]
    return SystemPrompt(lambda: session, lambda _model: offered, lambda: False), session


def test_without_tools_the_model_is_told_it_cannot_run_code(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.pi.jsonl")
    text = SystemPrompt(lambda: session, lambda _model: [], lambda: True).default(None)
    assert "You cannot run code" in text and "open in the user's browser" in text


def test_the_default_prompt_names_the_tools_on_offer(
    setup: tuple[SystemPrompt, Session],
) -> None:
    prompt, _session = setup
    text = prompt.default(get_model("openai", "gpt-5.1"))
    assert text.startswith("You are a data analyst") and "a run_python call" in text
    assert "You cannot run code" not in text and "browser" not in text


def test_instructions_are_written_once_they_say_more_than_the_default(
    setup: tuple[SystemPrompt, Session],
) -> None:
    prompt, session = setup
    harness = Harness(get_model("openai", "gpt-5.1"), None)
    assert prompt.update(harness) is False  # only the default: no system message
    assert session.build_context().system_prompt is None
    assert harness.system_prompt == prompt.default(harness.model)

    assert prompt.update(harness, addendum="Answer in French.") is True
    own = session.build_context().system_prompt
    assert own is not None and own.endswith("<addendum>\nAnswer in French.\n</addendum>")
    assert harness.system_prompt is None  # the session's prompt is the one sent
    assert prompt.update(harness) is False  # nothing changed since


def test_the_overhead_counts_the_prompt_sent_and_the_tools(
    setup: tuple[SystemPrompt, Session],
) -> None:
    prompt, _session = setup
    harness = Harness(get_model("openai", "gpt-5.1"), "Be brief.")
    assert prompt.overhead(harness) == request_overhead("Be brief.", [tool(run_python)])  # type: ignore[arg-type]
