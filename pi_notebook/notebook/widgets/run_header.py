"""The run view's header line: model and thinking level, usage and context size, spending against
budget caps, and how a compaction of the conversation is going."""

from __future__ import annotations

from typing import Any, Literal

from ...ai.types import Model
from .items import add_usage, context_tokens, usage_summary
from .protocol import AssistantItem, BudgetMeterRow, RunHeader

__all__ = ["HeaderState", "budget_rows", "compaction_ended", "compaction_started"]


def budget_rows(event: Any) -> list[BudgetMeterRow]:
    """The meter rows of a ``budget_update`` event: one per cap set, run then session."""
    rows: list[BudgetMeterRow] = []
    scopes: tuple[tuple[Literal["run", "session"], Any, Any], ...] = (
        ("run", event.run_caps, event.run_spent),
        ("session", event.session_caps, event.session_spent),
    )
    kinds: tuple[tuple[Literal["cost", "tokens", "turns"], str], ...] = (
        ("cost", "maxCost"),
        ("tokens", "maxTokens"),
        ("turns", "maxTurns"),
    )
    for scope, caps, spent in scopes:
        for kind, key in kinds:
            if key in caps:
                rows.append({"scope": scope, "kind": kind, "spent": spent[kind], "cap": caps[key]})
    return rows


def compaction_started(event: Any) -> str:
    """The header's words while a compaction runs."""
    before = getattr(event, "tokens_before", None)
    return f"compacting: {before:,} tokens → …" if before else "compacting the conversation …"


def compaction_ended(event: Any) -> tuple[str, int | None]:
    """The header's words once a compaction ended, and the context's size after it (None:
    not known, or it failed)."""
    before = getattr(getattr(event, "result", None), "tokens_before", None)
    after = getattr(event, "tokens_after", None)
    if getattr(event, "error_message", None) or getattr(event, "aborted", False):
        return ("compaction failed" if not event.aborted else "compaction stopped"), None
    if before and after is not None:
        return f"compacted: {before:,} → {after:,} tokens", after
    return "compacted", None


class HeaderState:
    """What the header shows, updated as the run goes (:meth:`as_dict` is the ``header``
    trait)."""

    def __init__(self, model: Model | None, thinking_level: str) -> None:
        self.model = ""
        self.context_window = 0
        self.thinking_level = thinking_level
        self.usage = usage_summary(None)
        self.context_tokens = 0
        self.budget: list[BudgetMeterRow] = []
        self.answers_only = False
        self.compaction = ""
        self.set_model(model)

    def set_model(self, model: Model | None, thinking_level: str | None = None) -> None:
        if model is not None:
            self.model = f"{model.provider}/{model.id}"
            self.context_window = model.context_window
        if thinking_level is not None:
            self.thinking_level = thinking_level

    def add_reply(self, item: AssistantItem) -> None:
        """Count a finished reply's usage; its context size is the context's now."""
        usage = item["usage"] or usage_summary(None)
        self.usage = add_usage(self.usage, usage)
        if context_tokens(usage):
            self.context_tokens = context_tokens(usage)
        if item["model"] and not self.model:
            self.model = item["model"]

    def compaction_start(self, event: Any) -> None:
        self.compaction = compaction_started(event)

    def compaction_end(self, event: Any) -> None:
        self.compaction, after = compaction_ended(event)
        if after is not None:
            self.context_tokens = after  # the context bar shows the compacted size

    def as_dict(self) -> RunHeader:
        return {
            "model": self.model,
            "thinking_level": self.thinking_level,
            "usage": self.usage,
            "context_tokens": self.context_tokens,
            "context_window": self.context_window,
            "budget": list(self.budget),
            "answers_only": self.answers_only,
            "compaction": self.compaction,
        }
