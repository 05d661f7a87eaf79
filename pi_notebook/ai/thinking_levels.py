"""The thinking levels, in their own module without pydantic: the magics offer them as choices
(``%thinking``, ``%%agent --thinking``) when ``%load_ext`` has not imported the message models
yet. ``ai.types`` re-exports :data:`ThinkingLevel`."""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

__all__ = ["THINKING_LEVELS", "ThinkingLevel"]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]

THINKING_LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
"""Every level, from none to the most."""
