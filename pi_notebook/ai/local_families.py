"""What the local server needs to know about a GGUF model: its family, the chat template that
lets it call tools, and the sampling its makers recommend.

A family is recognised from the file's own metadata (architecture, base name, pre-tokenizer).
The chat template is chosen in this order: one the user names (``--chat-template``); the
family's maintained template where the model does not follow its own template's tool format;
the file's own template when it describes tool calls; the family's maintained template
otherwise. A model left with no tool-call template can only answer in text, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Final

from .gguf_metadata import GgufError, GgufValue, read_gguf_metadata

__all__ = [
    "TEMPLATE_NAMES",
    "ModelFamily",
    "TemplateChoice",
    "choose_template",
    "detect_family",
    "family_of",
    "maintained_template",
]

_METADATA_KEYS: Final = (
    "general.architecture",
    "general.basename",
    "general.name",
    "tokenizer.ggml.pre",
    "tokenizer.chat_template",
)


@dataclass(frozen=True)
class ModelFamily:
    """A family of small models the local server knows."""

    name: str
    template: str | None = None
    """The maintained chat template (a name in :data:`TEMPLATE_NAMES`) that teaches the family
    tool calls; None: the family has none."""
    template_first: bool = False
    """Use the maintained template even when the file's own template has tool calls (the model
    does not write the format its own template asks for)."""
    sampling: Mapping[str, float | int] = field(default_factory=dict)
    """llama.cpp sampling parameters (``CommonParams.sampling`` names); empty: llama.cpp's."""
    max_output: int = 2048
    calls_tools: bool = True
    """False for a model too small to call tools whatever the template: it answers only."""


SMOLLM2: Final = ModelFamily(
    "smollm2",
    calls_tools=False,
    # llama.cpp's defaults let SmolLM2 loop on one sentence until the cap: repetition and
    # frequency penalties over the recent tokens, and the DRY sampler (which penalises repeating
    # any earlier sequence), keep it from looping; a lower temperature keeps it on topic.
    sampling={
        "temp": 0.5,
        "top_k": 40,
        "top_p": 0.9,
        "min_p": 0.05,
        "penalty_repeat": 1.1,
        "penalty_last_n": 128,
        "penalty_freq": 0.1,
        "dry_multiplier": 0.8,
        "dry_base": 1.75,
        "dry_allowed_length": 2,
        "dry_penalty_last_n": -1,
    },
    # A 135M model does not write good long answers; a cap keeps a reply that goes wrong short.
    max_output=512,
)
QWEN2: Final = ModelFamily(
    "qwen2.5",
    template="qwen2.5",
    template_first=True,
    # The generation config Qwen ships with its Qwen2.5 instruct models.
    sampling={"temp": 0.7, "top_p": 0.8, "top_k": 20, "penalty_repeat": 1.05},
)
LLAMA3: Final = ModelFamily(
    "llama3",
    template="llama3",
    # The generation config Meta ships with Llama 3.1/3.2 instruct.
    sampling={"temp": 0.6, "top_p": 0.9},
)
OTHER: Final = ModelFamily("other")
"""A model of no known family: its own template, llama.cpp's sampling."""

TEMPLATE_NAMES: Final = ("qwen2.5", "llama3")


def detect_family(metadata: Mapping[str, GgufValue]) -> ModelFamily:
    """The family of a model from its GGUF metadata."""
    arch = str(metadata.get("general.architecture") or "").lower()
    names = " ".join(
        str(metadata.get(key) or "") for key in ("general.basename", "general.name")
    ).lower()
    pre = str(metadata.get("tokenizer.ggml.pre") or "").lower()
    if "smollm" in names or pre == "smollm":
        return SMOLLM2
    if arch == "qwen2":
        return QWEN2
    if arch == "llama" and (pre == "llama-bpe" or "llama 3" in names or "llama-3" in names):
        return LLAMA3
    return OTHER


def family_of(model_path: str | Path) -> ModelFamily:
    """The family of the GGUF model at ``model_path``; :data:`OTHER` for a file that cannot be
    read as one (llama.cpp reports what is wrong with it when it loads)."""
    try:
        return detect_family(read_gguf_metadata(model_path, _METADATA_KEYS[:-1]))
    except (GgufError, OSError):
        return OTHER


def maintained_template(name_or_path: str) -> str:
    """The text of a maintained template (by name) or of a Jinja file."""
    if name_or_path in TEMPLATE_NAMES:
        return (
            resources.files(__package__)
            .joinpath("chat_templates", f"{name_or_path}.jinja")
            .read_text(encoding="utf-8")
        )
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise ValueError(
            f"--chat-template {name_or_path}: not a template name ({', '.join(TEMPLATE_NAMES)}) "
            "nor a file"
        )
    return path.read_text(encoding="utf-8")


def _has_tool_calls(template: str) -> bool:
    """Whether a chat template renders tools and past tool calls (a template without them makes
    llama.cpp answer in plain text whatever tools a request offers)."""
    return "tools" in template and "tool_calls" in template


@dataclass(frozen=True)
class TemplateChoice:
    """The outcome of :func:`choose_template` for one model file."""

    family: ModelFamily
    template: str | None
    """The template to serve with; None: the file's own."""
    source: str
    """Where it came from, for the start-up message: a template name, a path, ``gguf``."""
    calls_tools: bool


def choose_template(model_path: str | Path, requested: str | None = None) -> TemplateChoice:
    """The chat template to serve ``model_path`` with (see the module's docstring for the
    order). Raises ``ValueError`` for a ``requested`` template that does not exist and
    :class:`~pi_notebook.ai.gguf_metadata.GgufError` for a file that is not a GGUF model."""
    metadata = read_gguf_metadata(model_path, _METADATA_KEYS)
    family = detect_family(metadata)
    own = str(metadata.get("tokenizer.chat_template") or "")
    if requested is not None:
        text = maintained_template(requested)
        # Naming a template is also how a user says a model can call tools.
        return TemplateChoice(family, text, requested, _has_tool_calls(text))
    if family.template is not None and (family.template_first or not _has_tool_calls(own)):
        text = maintained_template(family.template)
        return TemplateChoice(family, text, family.template, family.calls_tools)
    return TemplateChoice(family, None, "gguf", family.calls_tools and _has_tool_calls(own))
