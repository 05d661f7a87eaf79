"""Room in the context window: pi's compaction settings scaled to a model's window, the size of
what every request carries besides the conversation, and the words for a context that a
compaction cannot bring under the line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ai.types import Model, Tool
    from ..harness import AgentHarness, CompactionSettings

__all__ = ["compacted_size", "compaction_for", "no_room_words", "request_overhead", "request_size"]

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
