"""Whether a model can call tools: what its server said, else its family."""

from __future__ import annotations

from pi_notebook.ai import Model
from pi_notebook.ai.tool_support import calls_tools, note_tool_support


def _model(provider: str, model_id: str) -> Model:
    return Model(id=model_id, api="openai-completions", provider=provider)


def test_smollm2_answers_only_and_other_models_call_tools() -> None:
    assert not calls_tools(_model("local", "smollm2-135m"))
    assert not calls_tools(_model("ollama", "SmolLM2:360m"))
    assert calls_tools(_model("ollama", "qwen2.5-coder:7b"))
    assert calls_tools(_model("anthropic", "claude-sonnet-4-5"))


def test_what_a_server_reports_wins_until_forgotten() -> None:
    qwen = _model("llamacpp:8099", "qwen-own-template")
    smol = _model("llamacpp:8099", "smollm2-with-a-tool-template")
    try:
        note_tool_support(qwen.ref, False)
        note_tool_support(smol.ref, True)
        assert not calls_tools(qwen) and calls_tools(smol)
    finally:
        note_tool_support(qwen.ref, None)
        note_tool_support(smol.ref, None)
    assert calls_tools(qwen) and not calls_tools(smol)
