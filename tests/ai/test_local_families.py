"""Model files of one's own: reading a GGUF header, recognising the family, and choosing the
chat template and sampling the local server uses for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.ai.gguf_metadata import GgufError, read_gguf_metadata
from pi_notebook.ai.local_families import (
    LLAMA3,
    OTHER,
    QWEN2,
    SMOLLM2,
    TEMPLATE_NAMES,
    choose_template,
    detect_family,
    family_of,
    maintained_template,
)

from .gguf_files import write_gguf

VOCAB = [f"tok{i}" for i in range(5000)]
OWN_WITH_TOOLS = (
    "{% if tools %}{{ tools }}{% endif %}{% for m in messages %}{{ m.tool_calls }}{% endfor %}"
)
OWN_PLAIN = "{% for m in messages %}{{ m.content }}{% endfor %}"


def _model(tmp_path: Path, name: str, **metadata: object) -> Path:
    keys = {key.replace("__", "."): value for key, value in metadata.items()}
    return write_gguf(tmp_path / f"{name}.gguf", {"tokenizer.ggml.tokens": VOCAB, **keys})  # type: ignore[dict-item]


def test_the_header_is_read_and_arrays_skipped(tmp_path: Path) -> None:
    path = write_gguf(
        tmp_path / "m.gguf",
        {
            "general.architecture": "qwen2",
            "tokenizer.ggml.tokens": VOCAB,
            "qwen2.context_length": 32768,
            "qwen2.rope.freq_base": 0.5,
            "tokenizer.chat_template": "{{ x }}",
        },
    )
    metadata = read_gguf_metadata(path)
    assert metadata == {
        "general.architecture": "qwen2",
        "tokenizer.ggml.tokens": None,
        "qwen2.context_length": 32768,
        "qwen2.rope.freq_base": 0.5,
        "tokenizer.chat_template": "{{ x }}",
    }
    assert read_gguf_metadata(path, ["tokenizer.chat_template"]) == {
        "tokenizer.chat_template": "{{ x }}"
    }


def test_a_file_that_is_not_gguf_or_is_cut_short_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(GgufError, match="not a GGUF model file"):
        read_gguf_metadata(bogus)
    whole = write_gguf(tmp_path / "whole.gguf", {"general.architecture": "llama"}).read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:-3])
    with pytest.raises(GgufError, match="ends inside a string"):
        read_gguf_metadata(cut)
    assert family_of(bogus) is OTHER and family_of(tmp_path / "missing.gguf") is OTHER


@pytest.mark.parametrize(
    ("metadata", "family"),
    [
        ({"general.architecture": "llama", "general.basename": "smollm2"}, SMOLLM2),
        ({"general.architecture": "llama", "tokenizer.ggml.pre": "smollm"}, SMOLLM2),
        ({"general.architecture": "qwen2", "general.basename": "Qwen2.5-Coder"}, QWEN2),
        ({"general.architecture": "llama", "tokenizer.ggml.pre": "llama-bpe"}, LLAMA3),
        ({"general.architecture": "llama", "general.name": "Llama 3.2 1B Instruct"}, LLAMA3),
        ({"general.architecture": "llama", "general.name": "TinyLlama 1.1B"}, OTHER),
        ({"general.architecture": "phi3"}, OTHER),
        ({}, OTHER),
    ],
)
def test_the_family_is_recognised_from_the_metadata(
    metadata: dict[str, str], family: object
) -> None:
    assert detect_family(metadata) is family


def test_only_smollm2_gets_the_repeat_and_dry_penalties() -> None:
    assert SMOLLM2.sampling["penalty_repeat"] > 1 and SMOLLM2.sampling["dry_multiplier"] > 0
    for family in (QWEN2, LLAMA3, OTHER):
        assert "dry_multiplier" not in family.sampling
        assert family.sampling.get("penalty_repeat", 1.0) <= 1.05
    assert not SMOLLM2.calls_tools and QWEN2.calls_tools and LLAMA3.calls_tools


def test_the_maintained_templates_exist_and_describe_tool_calls() -> None:
    for name in TEMPLATE_NAMES:
        text = maintained_template(name)
        assert "tools" in text and "tool_calls" in text, name
    assert "```json" in maintained_template("qwen2.5")
    assert "<|start_header_id|>ipython<|end_header_id|>" in maintained_template("llama3")


def test_template_order(tmp_path: Path) -> None:
    # Qwen2.5: the maintained template even though its own has tool calls (the 1.5B model
    # answers its own template's tools with a fenced JSON, which would stay text).
    qwen = _model(
        tmp_path, "qwen", general__architecture="qwen2", tokenizer__chat_template=OWN_WITH_TOOLS
    )
    choice = choose_template(qwen)
    assert (choice.family, choice.source, choice.calls_tools) == (QWEN2, "qwen2.5", True)
    assert choice.template == maintained_template("qwen2.5")
    # Llama 3.x: its own template when it has tool calls, the maintained one otherwise.
    llama_tools = _model(
        tmp_path,
        "llama-tools",
        general__architecture="llama",
        tokenizer__ggml__pre="llama-bpe",
        tokenizer__chat_template=OWN_WITH_TOOLS,
    )
    assert choose_template(llama_tools).source == "gguf"
    assert choose_template(llama_tools).template is None
    llama_plain = _model(
        tmp_path,
        "llama-plain",
        general__architecture="llama",
        tokenizer__ggml__pre="llama-bpe",
        tokenizer__chat_template=OWN_PLAIN,
    )
    assert choose_template(llama_plain).source == "llama3"
    # A model of no known family: its own template; without tool calls it answers only.
    other = _model(
        tmp_path, "other", general__architecture="phi3", tokenizer__chat_template=OWN_PLAIN
    )
    choice = choose_template(other)
    assert (choice.family, choice.source, choice.calls_tools) == (OTHER, "gguf", False)
    # SmolLM2 cannot call tools with its own template ...
    smol = _model(tmp_path, "smol", general__basename="smollm2", tokenizer__chat_template=OWN_PLAIN)
    assert not choose_template(smol).calls_tools
    # ... and a template the user names wins, and says the model may call tools.
    named = choose_template(smol, "llama3")
    assert (named.source, named.calls_tools) == ("llama3", True)
    custom = tmp_path / "mine.jinja"
    custom.write_text(OWN_PLAIN, encoding="utf-8")
    assert choose_template(smol, str(custom)).template == OWN_PLAIN


def test_an_unknown_template_name_is_a_clear_error(tmp_path: Path) -> None:
    qwen = _model(tmp_path, "qwen", general__architecture="qwen2")
    with pytest.raises(
        ValueError, match=r"--chat-template qwen3: not a template name \(qwen2.5, llama3\)"
    ):
        choose_template(qwen, "qwen3")
