"""Whether a model can call tools. A model that cannot is offered none and answers in text
(offering it tools only costs context and invites a tool call written as prose).

What is known, in order: what the model's server reported (llama.cpp's chat-template
capabilities, Ollama's and LM Studio's model capabilities, the local server's model family),
noted with :func:`note_tool_support`; else the model's family by its id (SmolLM2, which writes
no tool calls at any size we ship); else it can. A user's override is the caller's to apply.
"""

from __future__ import annotations

import re
import threading
from typing import Final

from .types import Model

__all__ = ["calls_tools", "note_tool_support"]

_ANSWERS_ONLY: Final = re.compile(r"smollm", re.IGNORECASE)
"""Ids of model families that write no tool calls."""

_reported: dict[str, bool] = {}
_lock = threading.Lock()


def note_tool_support(ref: str, supported: bool | None) -> None:
    """Remember what a server says of ``ref`` (``provider/id``); None forgets it."""
    with _lock:
        if supported is None:
            _reported.pop(ref, None)
        else:
            _reported[ref] = supported


def calls_tools(model: Model) -> bool:
    """Whether ``model`` can call tools, as far as is known (see the module's docstring)."""
    with _lock:
        reported = _reported.get(model.ref)
    if reported is not None:
        return reported
    return _ANSWERS_ONLY.search(model.id) is None
