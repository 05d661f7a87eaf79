"""Spending caps that stop a run: dollars, tokens and model requests, per run and per session.

Meters only say what a run cost after the fact; a cap has to act *before* the money is spent.
So the harness checks every provider request against the caps with what that request could
cost at most: the context's tokens (estimated as compaction estimates them: the last reply's
reported usage plus chars/4 for what came after) at the model's input price, plus the
request's output limit at the output price. When the output limit alone would pass a cap, the
request is sent with a smaller limit if at least :data:`MIN_REPLY_TOKENS` fit; otherwise the run
ends before the request, like an abort: what the run did so far stays, and the reason is
recorded in the session.

Token caps count every token a reply reports (input, output, cache reads and writes), so they
work for local models without prices; a cost cap on a model without prices never stops a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..ai.thinking import budget_for
from ..ai.types import AssistantMessage, Context, Model, ThinkingLevel, Usage
from .entries import CustomEntry, MessageEntry, SessionEntry
from .tokens import estimate_context_tokens, js_json_stringify, js_length

if TYPE_CHECKING:
    # the events module pulls in the agent loop; the run view reads this module's constants
    # on the kernel's thread at %load_ext, where the loop must not be imported yet
    from .harness_events import BudgetUpdateEvent

__all__ = [
    "BUDGET_CUSTOM_TYPE",
    "BUDGET_STOP_PREFIX",
    "BUDGET_STOP_TYPE",
    "MIN_REPLY_TOKENS",
    "BudgetCaps",
    "BudgetCheck",
    "BudgetMeter",
    "BudgetScope",
    "BudgetSettings",
    "Spend",
    "check_request",
    "estimate_request_tokens",
    "format_cost",
    "latest_budget_settings",
    "output_limit",
    "session_spend",
]

BUDGET_CUSTOM_TYPE = "pi_notebook.budget"
"""The ``custom`` entry that records the caps (the latest one in the file holds)."""
BUDGET_STOP_TYPE = "pi_notebook.budget_stop"
"""The ``custom_message`` entry that says a run was stopped by a cap."""
BUDGET_STOP_PREFIX = "Budget: "
"""How the reason of a stop begins (the run view tells a budget stop from a user's Stop by it)."""
MIN_REPLY_TOKENS = 1024
"""A request whose output limit has to shrink below this is not sent: the reply would be cut
before it could say anything useful."""
DEFAULT_OUTPUT_LIMIT = 32_000
"""The output limit of a request that sets none (the provider layer's default)."""

BudgetScope: TypeAlias = Literal["run", "session"]
CapKind: TypeAlias = Literal["cost", "tokens", "turns"]


@dataclass(frozen=True, slots=True)
class BudgetCaps:
    """Caps on spending; ``None`` means no cap. ``max_turns`` counts model requests."""

    max_cost: float | None = None
    """Dollars."""
    max_tokens: int | None = None
    max_turns: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_cost", "max_tokens", "max_turns"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{name} must be a number or None, not {type(value).__name__}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
            if name != "max_cost" and not float(value).is_integer():
                raise ValueError(f"{name} must be a whole number, not {value!r}")

    @property
    def empty(self) -> bool:
        return self.max_cost is None and self.max_tokens is None and self.max_turns is None

    def overridden_by(self, other: BudgetCaps | None) -> BudgetCaps:
        """These caps with every cap ``other`` sets taking its place."""
        if other is None:
            return self
        return BudgetCaps(
            other.max_cost if other.max_cost is not None else self.max_cost,
            other.max_tokens if other.max_tokens is not None else self.max_tokens,
            other.max_turns if other.max_turns is not None else self.max_turns,
        )

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.max_cost is not None:
            data["maxCost"] = self.max_cost
        if self.max_tokens is not None:
            data["maxTokens"] = int(self.max_tokens)
        if self.max_turns is not None:
            data["maxTurns"] = int(self.max_turns)
        return data

    @classmethod
    def from_data(cls, data: object) -> BudgetCaps:
        """Caps from :meth:`to_data`'s shape; anything malformed reads as no cap (a hand-edited
        session must not stop the notebook from opening)."""
        if not isinstance(data, Mapping):
            return cls()

        def number(key: str, whole: bool) -> Any:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            if not math.isfinite(value) or value <= 0:
                return None
            if whole:
                return int(value) if float(value).is_integer() else None
            return float(value)

        return cls(number("maxCost", False), number("maxTokens", True), number("maxTurns", True))

    def describe(self) -> str:
        parts = []
        if self.max_cost is not None:
            parts.append(f"cost {format_cost(self.max_cost)}")
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,} tokens")
        if self.max_turns is not None:
            parts.append(f"{self.max_turns} turns")
        return ", ".join(parts) if parts else "none"


@dataclass(frozen=True, slots=True)
class BudgetSettings:
    """What a session stores: its own caps and the default caps of every run."""

    session: BudgetCaps = BudgetCaps()
    run: BudgetCaps = BudgetCaps()

    def to_data(self) -> dict[str, Any]:
        return {"session": self.session.to_data(), "run": self.run.to_data()}

    @classmethod
    def from_data(cls, data: object) -> BudgetSettings:
        if not isinstance(data, Mapping):
            return cls()
        return cls(BudgetCaps.from_data(data.get("session")), BudgetCaps.from_data(data.get("run")))


@dataclass(frozen=True, slots=True)
class Spend:
    """What was spent: dollars, tokens (every kind a reply reports) and model requests."""

    cost: float = 0.0
    tokens: int = 0
    turns: int = 0

    def plus(self, usage: Usage) -> Spend:
        tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        return Spend(self.cost + usage.cost.total, self.tokens + tokens, self.turns + 1)

    def to_data(self) -> dict[str, Any]:
        return {"cost": self.cost, "tokens": self.tokens, "turns": self.turns}


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """The verdict on one request. ``allowed`` with ``max_tokens`` set: send it with that
    output limit; not ``allowed``: ``reason`` says which cap, in words."""

    allowed: bool
    max_tokens: int | None = None
    reason: str | None = None
    scope: BudgetScope | None = None
    cap: CapKind | None = None


def format_cost(dollars: float) -> str:
    return f"${dollars:.4f}" if dollars < 1 else f"${dollars:.2f}"


def latest_budget_settings(entries: Sequence[SessionEntry]) -> BudgetSettings:
    """The caps the session stores: its latest ``pi_notebook.budget`` entry, on any branch (a
    cap belongs to the session, not to one conversation in it)."""
    for entry in reversed(entries):
        if isinstance(entry, CustomEntry) and entry.custom_type == BUDGET_CUSTOM_TYPE:
            return BudgetSettings.from_data(entry.data)
    return BudgetSettings()


def session_spend(entries: Sequence[SessionEntry], cost: float, tokens: int) -> Spend:
    """The session's spend: ``cost`` and ``tokens`` as the session totals them, and one turn
    per assistant reply on any branch."""
    turns = sum(
        1
        for entry in entries
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
    )
    return Spend(cost, tokens, turns)


def output_limit(model: Model, max_tokens: int | None, reasoning: ThinkingLevel | None) -> int:
    """The most output tokens a request may produce: its limit (the provider layer's default
    when none), plus the thinking budget that budget-based providers add on top."""
    base = max_tokens if max_tokens is not None else min(model.max_tokens, DEFAULT_OUTPUT_LIMIT)
    if reasoning is not None and reasoning != "off" and model.reasoning:
        return min(base + budget_for(reasoning), max(model.max_tokens, base))
    return base


def estimate_request_tokens(context: Context) -> int:
    """The input tokens of ``context``: the last reply's reported usage plus estimates of what
    follows; without a usable reply, the system prompt and the tool schemas are estimated
    too (chars/4, as compaction counts)."""
    estimate = estimate_context_tokens(context.messages)
    if estimate.last_usage_index is not None:
        return estimate.tokens
    chars = js_length(context.system_prompt or "")
    for tool in context.tools or ():
        chars += js_length(tool.name) + js_length(tool.description)
        chars += js_length(js_json_stringify(tool.parameters))
    return estimate.tokens + math.ceil(chars / 4)


def _price(model: Model) -> tuple[float, float]:
    """Dollars per token, input and output."""
    return model.cost.input / 1_000_000, model.cost.output / 1_000_000


def check_request(
    model: Model,
    input_tokens: int,
    limit: int,
    caps: Sequence[tuple[BudgetScope, BudgetCaps, Spend]],
) -> BudgetCheck:
    """Whether a request with ``input_tokens`` of context and an output limit of ``limit``
    fits every cap given as ``(scope, caps, spent so far)``; if it fits only with a smaller
    output limit (at least :data:`MIN_REPLY_TOKENS`), that limit."""
    input_price, output_price = _price(model)
    room = limit
    for scope, cap, spent in caps:
        if cap.max_turns is not None and spent.turns + 1 > cap.max_turns:
            return _stop(scope, "turns", f"{cap.max_turns} turns reached")
        if cap.max_tokens is not None:
            left = cap.max_tokens - spent.tokens - input_tokens
            if left < min(MIN_REPLY_TOKENS, limit):
                return _stop(
                    scope,
                    "tokens",
                    f"{cap.max_tokens:,} tokens would be passed ({spent.tokens:,} used, the next "
                    f"request holds about {input_tokens:,} before its reply)",
                )
            room = min(room, left)
        if cap.max_cost is not None:
            left_dollars = cap.max_cost - spent.cost - input_tokens * input_price
            affordable = (
                limit if output_price <= 0 else math.floor(max(left_dollars, 0) / output_price)
            )
            if left_dollars <= 0 or affordable < min(MIN_REPLY_TOKENS, limit):
                worst = input_tokens * input_price + limit * output_price
                return _stop(
                    scope,
                    "cost",
                    f"{format_cost(cap.max_cost)} would be passed ({format_cost(spent.cost)} "
                    f"spent, the next request could cost up to {format_cost(worst)})",
                )
            room = min(room, affordable)
    if room < limit:
        return BudgetCheck(True, max_tokens=room)
    return BudgetCheck(True)


def _stop(scope: BudgetScope, cap: CapKind, detail: str) -> BudgetCheck:
    owner = "this run's" if scope == "run" else "the session's"
    return BudgetCheck(
        False,
        reason=f"{BUDGET_STOP_PREFIX}stopped, {owner} cap of {detail}.",
        scope=scope,
        cap=cap,
    )


class BudgetMeter:
    """The caps of one run and its session, and what was spent against them."""

    def __init__(self, run_caps: BudgetCaps, session_caps: BudgetCaps, session_spent: Spend):
        self.run_caps = run_caps
        self.session_caps = session_caps
        self.run_spent = Spend()
        self.session_spent = session_spent
        self.stopped: str | None = None

    @property
    def active(self) -> bool:
        return not (self.run_caps.empty and self.session_caps.empty)

    def check(
        self,
        model: Model,
        context: Context,
        max_tokens: int | None,
        reasoning: ThinkingLevel | None,
    ) -> BudgetCheck:
        """The verdict on the next request (see :func:`check_request`)."""
        verdict = check_request(
            model,
            estimate_request_tokens(context),
            output_limit(model, max_tokens, reasoning),
            [
                ("run", self.run_caps, self.run_spent),
                ("session", self.session_caps, self.session_spent),
            ],
        )
        if not verdict.allowed:
            self.stopped = verdict.reason
        return verdict

    def record(self, usage: Usage) -> None:
        """A reply's usage (one request)."""
        self.run_spent = self.run_spent.plus(usage)
        self.session_spent = self.session_spent.plus(usage)

    def event(self) -> BudgetUpdateEvent:
        from .harness_events import BudgetUpdateEvent

        return BudgetUpdateEvent(
            run_caps=self.run_caps.to_data(),
            run_spent=self.run_spent.to_data(),
            session_caps=self.session_caps.to_data(),
            session_spent=self.session_spent.to_data(),
            stopped=self.stopped,
        )
