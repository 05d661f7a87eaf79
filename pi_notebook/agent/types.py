"""Types of the agent loop: messages it carries, its working context, its config and hooks.

The loop works on ``AgentMessage``s: the LLM messages of ``pi_notebook.ai`` plus any app-defined
message with a ``role`` (the harness adds ``bashExecution``, ``custom``, ``branchSummary`` and
``compactionSummary``). They are turned into LLM messages only at the provider boundary, by the
``convert_to_llm`` hook.

Every hook may be a plain function or a coroutine function. Hooks that receive ``signal`` get the
run's ``AbortSignal`` (or ``None``) and must honour it themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ..ai.abort import AbortSignal
from ..ai.event_stream import AssistantMessageEventStream
from ..ai.options import ResponseInfo, StreamOptions
from ..ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .tools import AgentTool, AgentToolResult

__all__ = [
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "AgentLoopConfig",
    "AgentMessage",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "CustomAgentMessage",
    "GetApiKey",
    "GetQueuedMessages",
    "PrepareNextTurn",
    "QueueMode",
    "ShouldStopAfterTurn",
    "StreamFn",
    "ToolExecutionMode",
    "TransformContext",
    "TurnEndContext",
    "TurnUpdate",
    "default_convert_to_llm",
]

QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
"""How a steering/follow-up queue drains: everything at once, or the oldest message per poll."""

ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]


@runtime_checkable
class CustomAgentMessage(Protocol):
    """An app-defined message: any object with a ``role`` (pydantic models serialise as-is)."""

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomAgentMessage
"""What the loop carries: an LLM message, or an app-defined message with its own ``role``."""

_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the LLM messages (roles ``user``, ``assistant``, ``toolResult``); drop the rest."""
    return [m for m in messages if m.role in _LLM_ROLES]  # type: ignore[misc]


@dataclass(slots=True)
class AgentContext:
    """The loop's working context: system prompt, transcript and the tools the model may call.

    The loop appends to ``messages`` as the run goes; hooks receive it read-only.
    """

    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=list)
    tools: list[AgentTool] = field(default_factory=list)


# --- hook contexts and results -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeforeToolCallContext:
    """What ``before_tool_call`` sees: the call, its validated arguments, the working context."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    context: AgentContext


@dataclass(frozen=True, slots=True)
class BeforeToolCallResult:
    """``block=True`` turns the call into an error result carrying ``reason``."""

    block: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class AfterToolCallContext:
    """What ``after_tool_call`` sees: the call, its arguments and its (possibly error) result."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    result: AgentToolResult
    is_error: bool
    context: AgentContext


@dataclass(frozen=True, slots=True)
class AfterToolCallResult:
    """Field-wise override of a tool result; a field left ``None`` keeps the tool's value."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None


@dataclass(frozen=True, slots=True)
class TurnEndContext:
    """What ``prepare_next_turn`` and ``should_stop_after_turn`` see after a ``turn_end``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(frozen=True, slots=True)
class TurnUpdate:
    """Returned by ``prepare_next_turn``: replacements for the following turns of this run."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


StreamFn: TypeAlias = Callable[
    [Model, Context, StreamOptions],
    AssistantMessageEventStream | Awaitable[AssistantMessageEventStream],
]
"""Produces one assistant reply (pi's ``streamFn``); it must encode failures as ``error`` events."""

ConvertToLlm: TypeAlias = Callable[
    [list[AgentMessage]], Sequence[Message] | Awaitable[Sequence[Message]]
]
TransformContext: TypeAlias = Callable[
    [list[AgentMessage], AbortSignal | None],
    Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]],
]
GetApiKey: TypeAlias = Callable[[str], str | Awaitable[str | None] | None]
BeforeToolCall: TypeAlias = Callable[
    [BeforeToolCallContext, AbortSignal | None],
    BeforeToolCallResult | Awaitable[BeforeToolCallResult | None] | None,
]
AfterToolCall: TypeAlias = Callable[
    [AfterToolCallContext, AbortSignal | None],
    AfterToolCallResult | Awaitable[AfterToolCallResult | None] | None,
]
ShouldStopAfterTurn: TypeAlias = Callable[[TurnEndContext], bool | Awaitable[bool]]
PrepareNextTurn: TypeAlias = Callable[
    [TurnEndContext], TurnUpdate | Awaitable[TurnUpdate | None] | None
]
GetQueuedMessages: TypeAlias = Callable[
    [], Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]]
]


@dataclass(slots=True)
class AgentLoopConfig:
    """Configuration of one loop run: the model, the hooks, and options passed to every call.

    Hooks (all optional except ``convert_to_llm``, which defaults to keeping LLM roles):

    - ``convert_to_llm(messages)``: the messages sent to the model, before every call.
    - ``transform_context(messages, signal)``: runs before ``convert_to_llm``; its result is
      used for that call only (the working context is unchanged).
    - ``get_api_key(provider)``: resolved before every call (expiring tokens refresh); falls
      back to ``api_key``.
    - ``before_tool_call(ctx, signal)``: may block a call (``BeforeToolCallResult``).
    - ``after_tool_call(ctx, signal)``: may override a result field by field.
    - ``prepare_next_turn(ctx)``: after ``turn_end``, may replace context/model/thinking level.
    - ``should_stop_after_turn(ctx)``: after ``turn_end``; ``True`` ends the run.
    - ``get_steering_messages()``: polled at run start and after every turn.
    - ``get_follow_up_messages()``: polled when the run would otherwise end.

    The remaining fields are stream options handed to the stream function on every call;
    ``stream_options`` carries any other option by name (e.g. ``transport``, ``metadata``).
    """

    model: Model
    convert_to_llm: ConvertToLlm = default_convert_to_llm
    transform_context: TransformContext | None = None
    get_api_key: GetApiKey | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None
    prepare_next_turn: PrepareNextTurn | None = None
    get_steering_messages: GetQueuedMessages | None = None
    get_follow_up_messages: GetQueuedMessages | None = None
    tool_execution: ToolExecutionMode = "parallel"
    reasoning: ThinkingLevel | None = None
    api_key: str | None = None
    session_id: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    headers: dict[str, str] | None = None
    max_retry_delay_ms: int | None = None
    thinking_budgets: dict[str, int] | None = None
    on_payload: Callable[[dict[str, Any], Model], Any] | None = None
    on_response: Callable[[ResponseInfo, Model], Any] | None = None
    stream_options: dict[str, Any] = field(default_factory=dict)
