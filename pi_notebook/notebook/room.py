"""Room in the context window: pi's compaction settings scaled to a model's window, the size of
what every request carries besides the conversation, and the words for a context that a
compaction cannot bring under the line; :class:`RoomGuard` holds runs to that line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ai.types import Model, Tool
    from ..harness import AgentHarness, CompactionSettings

__all__ = [
    "RoomGuard",
    "compacted_size",
    "compaction_for",
    "no_room_words",
    "request_overhead",
    "request_size",
]

_SUMMARY_SHARE = 0.8
"""The part of the reserve a history summary may use (the harness's compaction)."""
_MIN_KEEP = 256
_KEEP_SHARE = 0.5
"""Of the room a compacted context has for the conversation, the part kept verbatim: the rest
is for the turns that follow, so the next compaction is turns away, not one (at 4k a turn of
a few hundred tokens filled what a 90% share left)."""


def compaction_for(model: Model, overhead: int = 0) -> CompactionSettings:
    """pi's compaction settings, scaled down for small context windows: its 16k-token reserve
    would compact a 4k-token model (the embedded local one) after every turn. ``overhead`` is
    the size of what every request carries besides the conversation (system prompt, tools):
    the kept part is cut so that it, the overhead and the summary fit under the threshold, or
    each compaction would leave the context over the line and the next turn compact again;
    and only a share of what is left, so that the turns after a compaction have room."""
    from ..harness.compaction import CompactionSettings

    pi = CompactionSettings()
    reserve = min(pi.reserve_tokens, model.context_window // 4)
    summary = int(_SUMMARY_SHARE * reserve)
    if model.max_tokens > 0:
        summary = min(summary, model.max_tokens)
    room = model.context_window - reserve - overhead - summary
    return CompactionSettings(
        reserve_tokens=reserve,
        keep_recent_tokens=max(
            _MIN_KEEP,
            min(pi.keep_recent_tokens, model.context_window // 2, int(room * _KEEP_SHARE)),
        ),
    )


def request_overhead(system_prompt: str, tools: Sequence[Tool]) -> int:
    """Tokens a request spends on the system prompt and the tools' declarations (estimated as
    the harness estimates messages: four characters a token)."""
    import json

    fields = {"name", "description", "parameters"}
    declared = json.dumps([t.model_dump(include=fields) for t in tools])
    return (len(system_prompt) + len(declared)) // 4


def no_room_words(harness: AgentHarness, tokens: int, overhead: int) -> str | None:
    """What to tell the user when a request of about ``tokens`` tokens (``overhead`` of them
    the instructions and tools) is over the compaction line; None when it is under."""
    window = harness.model.context_window
    reserve = harness.compaction_settings.reserve_tokens
    line = window - reserve
    if window <= 0 or tokens <= line:
        return None
    return (
        f"The context is still about {tokens:,} tokens after compacting ({overhead:,} of them "
        f"the instructions and tools), over the {line:,} this model takes before it compacts "
        f"(a {window:,}-token window, {reserve:,} kept for the reply); compacting again would "
        "not make room, so the run stops. Use a model with a larger window, redo the "
        "compaction keeping less of the latest turns (%compact --keep 0), offer fewer tools "
        "(%tools remove NAME), or start a new session (%session new)."
    )


def compacted_size(harness: AgentHarness, prompt: str) -> int:
    """About how many tokens the session's context and ``prompt`` hold, by their text alone
    (as a compaction's ``tokens_after``): a reply's usage kept from before a compaction would
    count what the compaction removed."""
    from ..ai.types import UserMessage
    from ..harness.tokens import estimate_tokens

    messages = [*harness.session.build_context().messages, UserMessage(content=prompt)]
    return sum(estimate_tokens(m) for m in messages)


def request_size(harness: AgentHarness, prompt: str) -> int:
    """About how many tokens the run's first request holds: the session's context as pi
    estimates it (the last reply's usage and what came after) plus the prompt."""
    from ..ai.types import UserMessage
    from ..harness.tokens import estimate_context_tokens, estimate_tokens

    messages = harness.session.build_context().messages
    asked = estimate_tokens(UserMessage(content=prompt, timestamp=0))
    return estimate_context_tokens(messages).tokens + asked


class RoomGuard:
    """What is known of the room after a compaction. When an automatic compaction leaves the
    context over the line, compacting again would cost another summary each turn and free
    nothing: the live run stops, and the next run starts only if its request fits.
    ``overhead`` gives what each request of a harness carries besides the conversation."""

    def __init__(self, overhead: Callable[[AgentHarness], int]) -> None:
        self._overhead = overhead
        self._no_room: tuple[str, int, str] | None = None
        """(model, request overhead, what to tell the user) after a compaction that could not
        bring the context under the line."""

    def fit(self, harness: AgentHarness) -> None:
        """Size the compaction for the model and what each request carries besides the
        conversation (a model switch, tools or instructions changed since the last run)."""
        harness.compaction_settings = compaction_for(harness.model, self._overhead(harness))

    def after_compaction(self, harness: AgentHarness, event: object) -> str | None:
        """A harness event: after a compaction, whether the context is under the line now.
        What to stop the live run with when it is not (None: it is, the event is no finished
        compaction, or it was ``%compact``, which says so itself; the next run is held to the
        line all the same)."""
        if getattr(event, "type", None) != "compaction_end":
            return None
        after = getattr(event, "tokens_after", None)
        if getattr(event, "result", None) is None or after is None:
            return None
        overhead = self._overhead(harness)
        words = no_room_words(harness, after + overhead, overhead)
        if words is None:
            self._no_room = None
            return None
        model = harness.model
        self._no_room = (f"{model.provider}/{model.id}", overhead, words)
        return None if getattr(event, "reason", None) == "manual" else words

    def refusal(self, harness: AgentHarness, prompt: str) -> str | None:
        """Why a run cannot start: a compaction left the context over the line, and with this
        prompt the request still is (the same model and tools). None: it may start."""
        if self._no_room is None:
            return None
        model, overhead, _words = self._no_room
        now = self._overhead(harness)
        if model != f"{harness.model.provider}/{harness.model.id}" or now != overhead:
            self._no_room = None  # another model or other tools: the line moved
            return None
        words = no_room_words(harness, compacted_size(harness, prompt) + now, now)
        if words is None:
            self._no_room = None
        return words
