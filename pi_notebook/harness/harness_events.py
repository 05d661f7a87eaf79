"""The harness's own events: what ``AgentHarness.subscribe`` listeners receive besides the agent
events (``agent_start`` … ``agent_end``).

Like the agent events they are pydantic models whose
``model_dump(mode="json", by_alias=True, exclude_none=True)`` is pi's camelCase JSON.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from ..agent.events import AgentEvent, AgentMessageField
from ..ai.types import Model, PiModel, ThinkingLevel, UserMessage
from .compaction import CompactionResult
from .entries import BranchSummaryEntry, CompactionEntry

__all__ = [
    "AbortEvent",
    "AfterProviderResponseEvent",
    "BudgetUpdateEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionStartEvent",
    "HarnessEvent",
    "HarnessOwnEvent",
    "ModelUpdateEvent",
    "QueueUpdateEvent",
    "ResourcesUpdateEvent",
    "SavePointEvent",
    "SessionCompactEvent",
    "SessionTreeEvent",
    "SessionWriteErrorEvent",
    "SettledEvent",
    "ThinkingLevelUpdateEvent",
    "ToolsUpdateEvent",
]

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]


class QueueUpdateEvent(PiModel):
    """The message queues changed: queued steering, follow-up and next-turn messages."""

    type: Literal["queue_update"] = "queue_update"
    steer: list[UserMessage]
    follow_up: list[UserMessage]
    next_turn: list[AgentMessageField]


class SavePointEvent(PiModel):
    """After a ``turn_end``: everything of the turn is in the session; ``had_pending_mutations``
    says whether changes made during the turn were written too."""

    type: Literal["save_point"] = "save_point"
    had_pending_mutations: bool


class SettledEvent(PiModel):
    """A prompt (with any automatic compaction and retry) is over; the harness is idle again."""

    type: Literal["settled"] = "settled"
    next_turn_count: int


class AbortEvent(PiModel):
    """``abort()`` took effect; the queued messages it dropped."""

    type: Literal["abort"] = "abort"
    cleared_steer: list[UserMessage]
    cleared_follow_up: list[UserMessage]


class AfterProviderResponseEvent(PiModel):
    """A provider answered a request (status and headers, before the body is read)."""

    type: Literal["after_provider_response"] = "after_provider_response"
    status: int
    headers: dict[str, str]


class SessionCompactEvent(PiModel):
    """A ``compaction`` entry was appended (``from_hook``: a hook provided the summary)."""

    type: Literal["session_compact"] = "session_compact"
    compaction_entry: CompactionEntry
    from_hook: bool


class SessionTreeEvent(PiModel):
    """The leaf moved (``navigate_tree``), maybe with a summary of the branch left behind."""

    type: Literal["session_tree"] = "session_tree"
    old_leaf_id: str | None
    new_leaf_id: str | None
    summary_entry: BranchSummaryEntry | None = None
    from_hook: bool = False


class SessionWriteErrorEvent(PiModel):
    """Writing to the session file failed: the entry is kept in memory with the others not saved
    yet (``Session.unsaved_entries``) and written with the next entry that can be written (or
    ``Session.flush()``). Also logged as a warning: nothing is lost, but nothing is on disk."""

    type: Literal["session_write_error"] = "session_write_error"
    error_message: str
    unsaved: int
    """How many entries are in memory only."""


class CompactionStartEvent(PiModel):
    """A compaction begins: asked for (``manual``), or automatic at the ``threshold`` or after a
    context ``overflow``."""

    type: Literal["compaction_start"] = "compaction_start"
    reason: CompactionReason
    tokens_before: int | None = None
    """The context's size in tokens as the compaction starts, when known (for a progress line;
    pi's event has no such field)."""


class CompactionEndEvent(PiModel):
    """A compaction ended: its ``result``, or ``error_message`` (``aborted`` if cancelled);
    ``will_retry``: the overflowed request is sent again now."""

    type: Literal["compaction_end"] = "compaction_end"
    reason: CompactionReason
    result: CompactionResult | None = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    tokens_after: int | None = None
    """The estimated size of the compacted context (summary and kept messages), on success."""


class ModelUpdateEvent(PiModel):
    type: Literal["model_update"] = "model_update"
    model: Model
    previous_model: Model


class ThinkingLevelUpdateEvent(PiModel):
    type: Literal["thinking_level_update"] = "thinking_level_update"
    level: ThinkingLevel
    previous_level: ThinkingLevel


class ToolsUpdateEvent(PiModel):
    """The tool set or the active tools changed (names before and after)."""

    type: Literal["tools_update"] = "tools_update"
    tool_names: list[str]
    previous_tool_names: list[str]
    active_tool_names: list[str]
    previous_active_tool_names: list[str]


class ResourcesUpdateEvent(PiModel):
    """``set_resources`` replaced the skills and prompt templates."""

    type: Literal["resources_update"] = "resources_update"
    skill_names: list[str]
    prompt_template_names: list[str]


class BudgetUpdateEvent(PiModel):
    """Spending against the caps of the run and of the session, before each request of a run
    that has caps and after each reply; ``stopped`` says why a cap ended the run (then no
    request is sent)."""

    type: Literal["budget_update"] = "budget_update"
    run_caps: dict[str, float]
    run_spent: dict[str, float]
    session_caps: dict[str, float]
    session_spent: dict[str, float]
    stopped: str | None = None


HarnessOwnEvent: TypeAlias = Annotated[
    QueueUpdateEvent
    | SavePointEvent
    | SettledEvent
    | AbortEvent
    | AfterProviderResponseEvent
    | SessionCompactEvent
    | SessionTreeEvent
    | SessionWriteErrorEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | ModelUpdateEvent
    | ThinkingLevelUpdateEvent
    | ToolsUpdateEvent
    | ResourcesUpdateEvent
    | BudgetUpdateEvent,
    Field(discriminator="type"),
]
"""An event of the harness itself (discriminator ``type``)."""

HarnessEvent: TypeAlias = AgentEvent | HarnessOwnEvent
"""What ``AgentHarness.subscribe`` listeners receive."""
