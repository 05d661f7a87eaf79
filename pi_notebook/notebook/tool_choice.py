"""Which read tools a model is offered: a small model gets a lean set.

A small local model (a window of a few thousand tokens) drowns in many similar read tools: it
calls them in turn instead of running code, and their schemas alone can triple its first
request. Such a model gets the few read tools that fit the context: with a notebook frontend,
``list_cells`` (the document, whose cells the cell tools edit); without one, ``list_variables``
(the kernel's data); and ``read_last_error`` in both (the change summary points to it). Any tool
the user adds with ``%tools add`` is offered whatever the model.
"""

from __future__ import annotations

from collections.abc import Collection

from ..ai.types import Model

__all__ = ["LEAN_WINDOW", "READ_TOOL_NAMES", "held_back"]

LEAN_WINDOW = 32_768
"""Models with a smaller context window get the lean set of read tools."""
READ_TOOL_NAMES = (
    "list_variables",
    "describe_variable",
    "list_cells",
    "read_cell",
    "read_history",
    "read_last_error",
)
_LEAN_FRONTEND = ("list_cells", "read_last_error")
_LEAN_HEADLESS = ("list_variables", "read_last_error")


def held_back(
    model: Model | None, *, frontend: bool, pinned: Collection[str] = ()
) -> dict[str, str]:
    """The read tools not offered to ``model``, each with the reason ``%tools list`` gives."""
    window = model.context_window if model is not None else 0
    if not 0 < window < LEAN_WINDOW:
        return {}
    keep = _LEAN_FRONTEND if frontend else _LEAN_HEADLESS
    reason = (
        f"a small model ({window:,}-token window) gets fewer read tools"
        f"{' with a notebook open' if frontend else ' without a notebook frontend'}"
    )
    return {name: reason for name in READ_TOOL_NAMES if name not in keep and name not in pinned}
