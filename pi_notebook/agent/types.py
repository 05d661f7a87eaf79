"""Types of the agent loop: messages it carries, its working context, its config and hooks.

The loop works on ``AgentMessage``s: the LLM messages of ``pi_notebook.ai`` plus any app-defined
message with a ``role`` (the harness adds ``bashExecution``, ``custom``, ``branchSummary`` and
``compactionSummary``). They are turned into LLM messages only at the provider boundary, by the
``convert_to_llm`` hook.

Every hook may be a plain function or a coroutine function. Hooks that receive ``signal`` get the
run's ``AbortSignal`` (or ``None``) and must honour it themselves.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
    SystemMessage,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .call_stops import ToolCallStops
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
    "FinishTurn",
    "FinishTurnAction",
    "GetApiKey",
    "GetQueuedMessages",
    "PrepareNextTurn",
    "PrepareRequest",
    "QueueMode",
    "RequestContext",
    "RequestUpdate",
    "ShouldStopAfterTurn",
    "StreamFn",
    "ToolExecutionMode",
    "TransformContext",
    "TurnDecision",
    "TurnEndContext",
    "TurnUpdate",
    "default_convert_to_llm",
    "finish_turn_action",
]

QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
"""How a steering/follow-up queue drains: everything at once, or the oldest message per poll."""

ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]


@runtime_checkable
class CustomAgentMessage(Protocol):
    """An app-defined message: any object with a ``role`` (pydantic models serialise as-is)."""

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = (
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage | CustomAgentMessage
)
"""What the loop carries: an LLM message, or an app-defined message with its own ``role``."""

_LLM_ROLES = frozenset({"system", "user", "assistant", "toolResult"})


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the LLM messages (roles ``system`` — pi 1.6's prompt and tool patches, folded into
    the request by ``pi_notebook.ai.stream`` — ``user``, ``assistant``, ``toolResult``); drop
    the rest."""
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
    """``block=True`` turns the call into an error result carrying ``reason``; with
    ``terminate=True`` that result also asks to end the run (pi 1.6), like a tool's own
    ``terminate``."""

    block: bool = False
    reason: str | None = None
    terminate: bool = False


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
    """A completed turn, as ``finish_turn`` (before its ``turn_end``) and ``prepare_next_turn``
    (before the next ``turn_start``) see it: the reply, its tool results, the working context and
    every message the run added so far (pi's ``lastCompletedTurn``)."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(frozen=True, slots=True)
class TurnUpdate:
    """Returned by ``prepare_next_turn``: replacements for the following turns of this run, and
    ``messages`` to add before the next request (reported like steering messages).

    ``thinking_level="off"`` turns reasoning off; a field left ``None`` keeps the current value.
    """

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None
    messages: Sequence[AgentMessage] | None = None


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What ``prepare_request`` sees before every provider request: the working context, the
    model and the thinking level about to be used (``"off"`` when none)."""

    context: AgentContext
    model: Model
    thinking_level: ThinkingLevel


@dataclass(frozen=True, slots=True)
class RequestUpdate:
    """Returned by ``prepare_request``: what to use for this request and the ones after it."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


FinishTurnAction: TypeAlias = Literal["end", "continue"]
_FINISH_ACTIONS = ("end", "continue")


@dataclass(frozen=True, slots=True)
class TurnDecision:
    """Returned by ``finish_turn``: ``"end"`` ends the run after this turn's ``turn_end``;
    ``"continue"`` asks for one more request even when nothing else would start one."""

    action: FinishTurnAction


def finish_turn_action(decision: object) -> FinishTurnAction | None:
    """The action of what ``finish_turn`` returned: ``None``, ``{"action": …}`` or any object
    with an ``action`` attribute. Anything else is a ``TypeError``/``ValueError`` naming it."""
    if decision is None:
        return None
    if isinstance(decision, Mapping):
        if "action" not in decision:
            raise ValueError(f"finish_turn returned a mapping without 'action': {dict(decision)!r}")
        action = decision["action"]
    elif hasattr(decision, "action"):
        action = decision.action
    else:
        raise TypeError(
            "finish_turn must return None, {'action': 'end' | 'continue'} or an object with "
            f"an 'action', not {type(decision).__name__}"
        )
    if action is None:
        return None
    if action not in _FINISH_ACTIONS:
        raise ValueError(f"finish_turn action must be 'end' or 'continue', not {action!r}")
    return action  # type: ignore[no-any-return]


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
"""Deprecated (pi removed it in 0.87): use ``FinishTurn`` returning ``{"action": "end"}``."""
PrepareNextTurn: TypeAlias = Callable[
    [TurnEndContext], TurnUpdate | Awaitable[TurnUpdate | None] | None
]
PrepareRequest: TypeAlias = Callable[
    [RequestContext, AbortSignal | None],
    RequestUpdate | Awaitable[RequestUpdate | None] | None,
]
FinishTurn: TypeAlias = Callable[[TurnEndContext, AbortSignal | None], Any]
"""Returns ``None``, ``{"action": "end" | "continue"}`` or an object with ``action``
(``TurnDecision``), or an awaitable of one."""
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
    - ``prepare_request(ctx, signal)``: before every provider request; may replace the
      context, model or thinking level from this request on (``RequestUpdate``).
    - ``finish_turn(ctx, signal)``: after a turn's tool results, before its ``turn_end``;
      ``{"action": "end"}`` ends the run there, ``{"action": "continue"}`` makes one more
      request even when no tool call, steering or follow-up message would. Also called for a
      reply that failed or was aborted, whose decision is ignored (that run ends anyway).
    - ``prepare_next_turn(ctx)``: only when another turn is about to start (before its
      ``turn_start``); may replace context/model/thinking level and add messages.
    - ``get_steering_messages()``: polled at run start and after every turn.
    - ``get_follow_up_messages()``: polled when the run would otherwise end.
    - ``should_stop_after_turn(ctx)``: deprecated, kept for 0.79-era callers (pi removed it in
      0.87): after ``turn_end``, ``True`` ends the run. Use ``finish_turn``.

    ``tool_call_stops`` lets the runner stop one tool call while the run goes on
    (``ToolCallStops.stop``); without it a call stops only with the run.

    ``declare_tools``: before each request, declare the difference between ``context.tools``
    and the tools the transcript's system messages declare as a system message, reported like
    any other (pi 1.6's loop; ``Agent`` runs set it, see ``tool_declarations``). Off, the tools
    are handed to the stream function beside the transcript, as the harness does.

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
    prepare_request: PrepareRequest | None = None
    finish_turn: FinishTurn | None = None
    get_steering_messages: GetQueuedMessages | None = None
    get_follow_up_messages: GetQueuedMessages | None = None
    tool_execution: ToolExecutionMode = "parallel"
    tool_call_stops: ToolCallStops | None = None
    declare_tools: bool = False
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

    def __post_init__(self) -> None:
        if self.should_stop_after_turn is not None:
            warnings.warn(
                "AgentLoopConfig.should_stop_after_turn is deprecated (pi removed it in 0.87): "
                "use finish_turn returning {'action': 'end'}",
                DeprecationWarning,
                stacklevel=3,
            )
