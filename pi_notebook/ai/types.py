"""The message model shared by every layer: content blocks, messages, usage, models, context.

Every type serialises to pi's camelCase JSON with
``model_dump(mode="json", by_alias=True, exclude_none=True)`` and accepts both spellings on input.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .construct import set_extra, set_fields_set
from .fields_sets import SharedExtras, SharedFieldsSet
from .thinking_levels import ThinkingLevel

__all__ = [
    "Api",
    "AssistantContent",
    "AssistantMessage",
    "Content",
    "Context",
    "Cost",
    "DeferredHandle",
    "ImageContent",
    "Message",
    "Model",
    "ModelCost",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "Tool",
    "ToolCall",
    "ToolReference",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "now_ms",
]

StopReason: TypeAlias = Literal[
    "stop", "length", "toolUse", "error", "aborted", "deferred", "pending"
]
"""``deferred``: the provider answers later (see ``AssistantMessage.deferred``); ``pending``: only
on streaming partials, never persisted (pi 1.6)."""
Api: TypeAlias = str


def now_ms() -> int:
    """The current time as Unix epoch milliseconds (the timestamp unit of every message)."""
    return time.time_ns() // 1_000_000


class PiModel(BaseModel):
    """Base of every pi data type: camelCase aliases, snake_case attributes, extra keys kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        ser_json_inf_nan="constants",
    )

    def to_json_dict(self) -> dict[str, Any]:
        """pi's JSON shape of this object."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def __setattr__(self, name: str, value: Any) -> None:
        # A fields set shared with other models (``share_fields_sets``) is copied before
        # pydantic adds the name to it, and shared empty extras are replaced before it does.
        fields = self.__pydantic_fields_set__
        if type(fields) is SharedFieldsSet:
            set_fields_set(self, set(fields))
        if type(self.__pydantic_extra__) is SharedExtras:
            set_extra(self, {})
        super().__setattr__(name, value)


# --- content blocks ------------------------------------------------------------------------------


class TextContent(PiModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ThinkingContent(PiModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(PiModel):
    type: Literal["image"] = "image"
    data: str
    """Base64-encoded image bytes."""
    mime_type: str


class ToolCall(PiModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None
    namespace: str | None = None
    arguments_error: str | None = None
    """pi 1.6: why the arguments could not be used (the tool then gets "Invalid arguments")."""
    parse_error: str | None = Field(default=None, exclude=True)
    """Set when the streamed argument text was not valid JSON; never serialised."""
    raw_arguments: str | None = Field(default=None, exclude=True)
    """The argument text as streamed, kept for error reports; never serialised."""


Content: TypeAlias = Annotated[
    TextContent | ThinkingContent | ImageContent | ToolCall, Field(discriminator="type")
]
UserContent: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
ToolResultContent: TypeAlias = UserContent
AssistantContent: TypeAlias = Annotated[
    TextContent | ThinkingContent | ToolCall, Field(discriminator="type")
]


# --- usage and cost ------------------------------------------------------------------------------


class Cost(PiModel):
    """Dollars spent, per bucket."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    total_from_provider: bool | None = None
    """pi 1.6: ``total`` is the provider's own figure rather than computed from prices."""


class Usage(PiModel):
    """Tokens of one response. ``input`` counts only non-cached prompt tokens."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int | None = Field(default=None, alias="cacheWrite1h")
    """pi 1.6: the part of ``cache_write`` written with one-hour retention."""
    reasoning: int | None = None
    """pi 1.6: reasoning tokens (already counted in ``output``)."""
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)


# --- messages ------------------------------------------------------------------------------------


class ToolReference(PiModel):
    """A tool named by a system message's ``tools_removed``."""

    name: str


class SystemMessage(PiModel):
    """pi 1.6: the system prompt and tool set as a message of the transcript.

    ``content`` appends instructions, ``sections`` patches named sections (``None`` deletes one),
    ``tools_added``/``tools_removed`` change the tool list; the state at any point is the replay
    of every system message before it (``pi_notebook.ai.system_message``).
    """

    role: Literal["system"] = "system"
    content: str | list[TextContent] = ""
    sections: dict[str, str | None] | None = None
    tools_added: list[Tool] | None = None
    tools_removed: list[ToolReference] | None = None
    timestamp: int = Field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The content as one string (text blocks joined with newlines, as pi does)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(block.text for block in self.content)


class UserMessage(PiModel):
    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = Field(default_factory=now_ms)


class DeferredHandle(PiModel):
    """pi 1.6: where to fetch a reply the provider will finish later (stop reason ``deferred``)."""

    provider: str
    model_id: str
    api: str
    id: str
    expires_at: int | None = None
    poll_after_ms: int | None = None
    data: Any = None


class AssistantMessage(PiModel):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str
    provider: str
    model: str
    response_id: str | None = None
    response_model: str | None = None
    provider_thinking_level: str | None = None
    """pi 1.6: the provider's own name of the reasoning effort it was asked for."""
    thinking_level: ThinkingLevel | None = None
    """pi 1.6: the thinking level the loop requested for this reply."""
    diagnostics: list[dict[str, Any]] | None = None
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    deferred: DeferredHandle | None = None
    error_message: str | None = None
    raw_stop_reason: str | None = None
    end_turn: bool | None = None
    timestamp: int = Field(default_factory=now_ms)
    duration_ms: int | None = None

    @property
    def text(self) -> str:
        """The concatenated text blocks (thinking and tool calls left out)."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(PiModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = Field(default_factory=list)
    details: Any = None
    usage: Usage | None = None
    """pi 1.6: tokens the tool itself spent (a nested model call); counts in session totals."""
    nested_calls: dict[str, Any] | None = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)
    duration_ms: int | None = None


Message: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage,
    Field(discriminator="role"),
]


# --- models, tools, context ----------------------------------------------------------------------


class ModelCost(PiModel):
    """Prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


def _text_only() -> list[Literal["text", "image"]]:
    return ["text"]


class Model(PiModel):
    """Describes one model: which wire protocol, where, what it can do and what it costs."""

    id: str
    name: str = ""
    api: Api
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = Field(default_factory=_text_only)
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    thinking_level_map: dict[str, str | None] | None = None

    @property
    def ref(self) -> str:
        """``provider/id``, the spelling ``parse_model`` accepts."""
        return f"{self.provider}/{self.id}"


class Tool(PiModel):
    """A tool as the model sees it: ``parameters`` is a JSON-Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Context(PiModel):
    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] | None = None


SystemMessage.model_rebuild()
