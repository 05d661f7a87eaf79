"""Token-budget thinking, as pi sizes it for the providers that take a budget (Anthropic's
``budget_tokens``, Google's ``thinkingBudget``): one table of default budgets per level and one
rule for fitting the budget beside the answer under the model's output limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .types import ThinkingLevel

__all__ = ["DEFAULT_THINKING_BUDGETS", "MIN_OUTPUT_TOKENS", "budget_for", "thinking_budget"]

DEFAULT_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
"""pi's thinking budgets in tokens per level (``xhigh`` and ``max`` use ``high``)."""
MIN_OUTPUT_TOKENS: Final = 1024
"""Tokens kept for the visible answer when the thinking budget has to shrink."""


def budget_for(level: ThinkingLevel, budgets: Mapping[str, int] | None = None) -> int:
    """The budget of ``level``: ``budgets`` over pi's defaults (``xhigh``, ``max``: ``high``)."""
    if level == "off":
        raise ValueError("a thinking budget needs a thinking level other than 'off'")
    key = "high" if level in ("xhigh", "max") else level
    return {**DEFAULT_THINKING_BUDGETS, **(budgets or {})}[key]


def thinking_budget(
    level: ThinkingLevel,
    base_max_tokens: int,
    model_max_tokens: int,
    budgets: Mapping[str, int] | None = None,
) -> tuple[int, int]:
    """``(max_tokens, budget_tokens)`` for a thinking level, as pi computes them.

    The budget is added on top of the requested output, capped by the model's limit; when the
    cap leaves no room for an answer the budget shrinks to keep ``MIN_OUTPUT_TOKENS`` for it.
    """
    budget = budget_for(level, budgets)
    max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_OUTPUT_TOKENS)
    return max_tokens, budget
