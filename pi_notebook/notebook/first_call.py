"""Constrained sampling for the first request of a run: a local model starts with a tool call.

Small local models asked a question about data often answer at once, in the requested format,
with numbers from nowhere. llama.cpp (and LM Studio) can constrain generation to the tool
schemas: with ``tool_choice: "required"`` the reply is a tool call from its first token. The
notebook asks for that on the first request of each ``%%agent`` run when the model is served on
this machine and a tool that runs code is offered; every later request of the run is free, so
the model can answer once it has seen output.

``PI_NOTEBOOK_FIRST_CALL`` overrides the choice: ``required`` (any model) or ``auto`` (never).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..ai.types import Model

__all__ = ["CODE_TOOLS", "FIRST_CALL_VARIABLE", "constrain_first_call"]

FIRST_CALL_VARIABLE = "PI_NOTEBOOK_FIRST_CALL"
CODE_TOOLS = frozenset({"run_python", "insert_cell", "run_cell"})
"""Tools that run code: the first call is constrained only when one of them is offered."""
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def constrain_first_call(model: Model, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """``payload`` (an ``openai-completions`` request, the first of a run) with
    ``tool_choice: "required"``, or None to send it as it is."""
    setting = os.environ.get(FIRST_CALL_VARIABLE, "").strip().lower()
    if setting == "auto" or model.api != "openai-completions" or "tool_choice" in payload:
        return None
    if setting != "required" and (urlsplit(model.base_url).hostname or "") not in _LOOPBACK:
        return None
    offered = {
        tool.get("function", {}).get("name")
        for tool in payload.get("tools") or ()
        if isinstance(tool, Mapping)
    }
    if not offered & CODE_TOOLS:
        return None
    return {**payload, "tool_choice": "required"}
