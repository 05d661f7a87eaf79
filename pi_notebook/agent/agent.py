"""``Agent``: the stateful agent — a transcript, tools, queues, and one run at a time.

``await agent.prompt("…")`` runs the loop on the current transcript; every event first updates
``agent.state`` (the reducer) and is then handed to each subscriber in order, awaited.
While a run is active, ``steer`` queues messages injected after the current turn and
``follow_up`` queues messages that start a new turn when the run would otherwise end.

As in pi 1.6 the system prompt and the tool declarations live in the transcript: an agent built
with a system prompt or tools starts ``state.messages`` with a ``SystemMessage`` holding them
(no event reports it), ``state.system_prompt`` is the prompt replayed from the transcript's
system messages, and a change of the tools is declared by a system-message patch before the next
request (reported as message_start/message_end with the run's messages; pi 1.6's
``declareToolChanges``). Each run works on a snapshot (a copy of the transcript and tools, a
config built from the agent's fields); changes made during a run apply to the next one (hooks
that hand the loop another context, or edit its tools, reach the next request). A run that fails
(a hook or listener raising, a stream function breaking its contract) ends with a failure message
reported as message_start, message_end, turn_end, agent_end (pi 0.79 and 1.6), and ``prompt``
returns normally with ``state.error_message`` set.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

from ..ai.abort import AbortController, AbortSignal
from ..ai.options import ResponseInfo, StallNotice
from ..ai.producer import describe_error
from ..ai.system_message import current_system_message, system_message_text
from ..ai.types import (
    AssistantMessage,
    ImageContent,
    Model,
    SystemMessage,
    TextContent,
    ThinkingLevel,
    Usage,
    UserMessage,
)
from .call_stops import ToolCallStops
from .events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .listeners import Listener, Listeners
from .loop import run_agent_loop, run_agent_loop_continue
from .tool_declarations import tool_declaration
from .tools import AgentTool
from .types import (
    AfterToolCall,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BeforeToolCall,
    ConvertToLlm,
    FinishTurn,
    GetApiKey,
    PrepareNextTurn,
    PrepareRequest,
    QueueMode,
    StreamFn,
    ToolExecutionMode,
    TransformContext,
    default_convert_to_llm,
)

__all__ = ["BUSY_MESSAGE", "Agent", "AgentListener", "AgentState"]

_log = logging.getLogger(__name__)

BUSY_MESSAGE = (
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
    "or wait for completion."
)
_BUSY_CONTINUE_MESSAGE = "Agent is already processing. Wait for completion before continuing."
_QUEUE_MODES = ("all", "one-at-a-time")
_TOOL_EXECUTION_MODES = ("sequential", "parallel")


_EVENT_TYPES: dict[type[Any], str] = {
    cls: cls.model_fields["type"].default
    for cls in (
        AgentStartEvent,
        AgentEndEvent,
        TurnStartEvent,
        TurnEndEvent,
        MessageStartEvent,
        MessageUpdateEvent,
        MessageEndEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
        ToolExecutionEndEvent,
    )
}
"""Each event class's ``type`` (the one its ``type`` field allows)."""


AgentListener: TypeAlias = Listener
"""``listener(event)`` or ``listener(event, signal)``, sync or async."""


def _placeholder_model() -> Model:
    return Model(id="unknown", name="unknown", api="unknown", provider="unknown")


class AgentState:
    """What the agent is and is doing.

    ``model`` and ``thinking_level`` are plain fields; assigning ``tools`` or ``messages`` stores
    a copy of the list. ``system_prompt`` is the prompt the transcript's system messages replay
    to (pi 1.6); assigning it rewrites the content of the leading system message (adding one
    when there is none). ``is_streaming``, ``streaming_message`` (the message
    being received, including the partial assistant reply), ``pending_tool_calls`` (ids of tool
    calls between start and end) and ``error_message`` (of the last failed reply) are read-only.
    """

    __slots__ = (
        "_error_message",
        "_is_streaming",
        "_messages",
        "_pending_tool_calls",
        "_streaming",
        "_tools",
        "model",
        "thinking_level",
    )

    def __init__(
        self,
        system_prompt: str,
        model: Model,
        thinking_level: ThinkingLevel,
        tools: Iterable[AgentTool],
        messages: Iterable[AgentMessage],
    ) -> None:
        self.model = model
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        first = self._messages[0] if self._messages else None
        if not isinstance(first, SystemMessage) and (system_prompt or self._tools):
            declared = [tool_declaration(tool) for tool in self._tools]
            leading = SystemMessage(
                content=system_prompt, tools_added=declared or None, timestamp=0
            )
            self._messages.insert(0, leading)
        self._is_streaming = False
        self._streaming: AgentMessage | MessageUpdateEvent | None = None
        self._pending_tool_calls: set[str] = set()
        self._error_message: str | None = None

    @property
    def system_prompt(self) -> str:
        if not any(isinstance(m, SystemMessage) for m in self._messages):
            return ""
        replayed = current_system_message(self._messages)
        return system_message_text(replayed) if replayed is not None else ""

    @system_prompt.setter
    def system_prompt(self, prompt: str) -> None:
        first = self._messages[0] if self._messages else None
        if isinstance(first, SystemMessage):
            self._messages[0] = first.model_copy(update={"content": prompt})
        elif prompt:
            self._messages.insert(0, SystemMessage(content=prompt, timestamp=0))

    @property
    def tools(self) -> list[AgentTool]:
        return self._tools

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        self._tools = list(tools)

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None:
        self._messages = list(messages)

    @property
    def is_streaming(self) -> bool:
        return self._is_streaming

    @property
    def streaming_message(self) -> AgentMessage | None:
        current = self._streaming
        if isinstance(current, MessageUpdateEvent):
            return current.message  # materialised only when asked for
        return current

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return frozenset(self._pending_tool_calls)

    @property
    def error_message(self) -> str | None:
        return self._error_message

    def __repr__(self) -> str:
        return (
            f"<AgentState model={self.model.ref} messages={len(self._messages)} "
            f"tools={len(self._tools)} streaming={self._is_streaming}>"
        )


class _MessageQueue:
    """Steering or follow-up messages waiting for the loop to poll them."""

    __slots__ = ("_items", "mode")

    def __init__(self, mode: QueueMode) -> None:
        self.mode: QueueMode = _check_mode(mode)
        self._items: deque[AgentMessage] = deque()

    def push(self, message: AgentMessage) -> None:
        self._items.append(message)

    def peek(self) -> list[AgentMessage]:
        """What ``drain`` would take, left in the queue."""
        if not self._items:
            return []
        return list(self._items) if self.mode == "all" else [self._items[0]]

    def drain(self) -> list[AgentMessage]:
        if not self._items:
            return []
        if self.mode == "all":
            items = list(self._items)
            self._items.clear()
            return items
        return [self._items.popleft()]

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def _check_mode(mode: str) -> QueueMode:
    if mode not in _QUEUE_MODES:
        raise ValueError(f"queue mode must be 'all' or 'one-at-a-time', not {mode!r}")
    return mode  # type: ignore[return-value]


def _as_message(message: str | AgentMessage) -> AgentMessage:
    if isinstance(message, str):
        return UserMessage(content=[TextContent(text=message)])
    if not hasattr(message, "role"):
        raise TypeError(f"expected a message (with a role) or a str, not {type(message).__name__}")
    return message


class _ActiveRun:
    __slots__ = ("controller", "done")

    def __init__(self) -> None:
        self.controller = AbortController()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class Agent:
    """A stateful agent over the agent loop. See the module docstring.

    The hook attributes (``convert_to_llm``, ``transform_context``, ``stream_fn``,
    ``get_api_key``, ``before_tool_call``, ``after_tool_call``, ``prepare_request``,
    ``finish_turn``, ``prepare_next_turn``; see ``AgentLoopConfig`` for when each runs) and the
    pass-through options (``session_id``, ``thinking_budgets``, ``transport``,
    ``max_retry_delay_ms``, ``on_payload``, ``on_response``, ``on_stall``, ``stall_ms``,
    ``tool_execution``) are public and read when the next run starts.
    """

    def __init__(
        self,
        system_prompt: str = "",
        model: Model | None = None,
        thinking_level: ThinkingLevel = "off",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        convert_to_llm: ConvertToLlm | None = None,
        transform_context: TransformContext | None = None,
        stream_fn: StreamFn | None = None,
        get_api_key: GetApiKey | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecutionMode = "parallel",
        prepare_request: PrepareRequest | None = None,
        finish_turn: FinishTurn | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
    ) -> None:
        if tool_execution not in _TOOL_EXECUTION_MODES:
            raise ValueError(
                f"tool_execution must be 'parallel' or 'sequential', not {tool_execution!r}"
            )
        self._state = AgentState(
            system_prompt, model or _placeholder_model(), thinking_level, tools, messages
        )
        self.convert_to_llm: ConvertToLlm = convert_to_llm or default_convert_to_llm
        self.transform_context = transform_context
        self.stream_fn = stream_fn
        self.get_api_key = get_api_key
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.prepare_request: PrepareRequest | None = prepare_request
        self.finish_turn: FinishTurn | None = finish_turn
        self.prepare_next_turn: PrepareNextTurn | None = prepare_next_turn
        self.tool_execution: ToolExecutionMode = tool_execution
        self.session_id: str | None = None
        self.thinking_budgets: dict[str, int] | None = None
        self.transport: str | None = None
        self.max_retry_delay_ms: int | None = None
        self.on_payload: Callable[[dict[str, Any], Model], Any] | None = None
        self.on_response: Callable[[ResponseInfo, Model], Any] | None = None
        self.on_stall: Callable[[StallNotice], Any] | None = None
        """Told when a model request goes silent for ``StreamOptions.stall_ms`` and when data
        flows again (``StreamOptions.on_stall``): a run view shows "waiting for the model"."""
        self.stall_ms: int | None = None
        """The silence that counts as a stall (``None``: ``StreamOptions``' default, 5 s)."""
        self._steering = _MessageQueue(steering_mode)
        self._follow_up = _MessageQueue(follow_up_mode)
        self._listeners = Listeners("agent", _log)
        self._active: _ActiveRun | None = None
        self._signal: AbortSignal | None = None
        self._tool_stops = ToolCallStops()

    # --- state and subscriptions -----------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        return self._state

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal (``None`` while idle)."""
        return self._signal

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event, after the state was updated — or
        ``listener(event, signal)`` if it asks for the run's abort signal (its second parameter
        is named ``signal``, or positional-only without a default, or ``*args``: see
        ``listeners``). Async listeners are awaited, all in subscription order. A listener that
        raises is logged (``pi_notebook.agent.agent``) and skipped for that event: it never
        fails the run. Returns a function that unsubscribes."""
        return self._listeners.subscribe(listener)

    def _deliver(self, event: AgentEvent) -> Awaitable[None] | None:
        """The loop's ``emit``: apply ``event`` to the state (the reducer), then hand it
        to every listener in order. Returns ``None`` when every listener was synchronous (nothing
        to await, no coroutine made: this runs once per streamed delta), else an awaitable that
        finishes the delivery."""
        state = self._state
        if type(event) is MessageUpdateEvent:  # the per-delta case, told without reading a field
            state._streaming = event
        else:
            # its type (the literal-narrowing of mypy is lost: ignores below), by its class when
            # it is one of ours: reading a field of a pydantic model costs more than a dict lookup
            kind = _EVENT_TYPES.get(type(event)) or event.type
            if kind == "message_update":
                state._streaming = event  # type: ignore[assignment]
            elif kind == "message_start":
                state._streaming = event.message  # type: ignore[union-attr]
            elif kind == "message_end":
                state._streaming = None
                state._messages.append(event.message)  # type: ignore[union-attr]
            elif kind == "tool_execution_start":
                state._pending_tool_calls.add(event.tool_call_id)  # type: ignore[union-attr]
            elif kind == "tool_execution_end":
                state._pending_tool_calls.discard(event.tool_call_id)  # type: ignore[union-attr]
            elif kind == "turn_end":
                message = event.message  # type: ignore[union-attr]
                if isinstance(message, AssistantMessage) and message.error_message:
                    state._error_message = message.error_message
            elif kind == "agent_end":
                state._streaming = None

        return self._listeners.deliver(event, self._signal)

    # --- queues ----------------------------------------------------------------------------------

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = _check_mode(mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up.mode = _check_mode(mode)

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message for after the current turn (a str becomes a user message)."""
        self._steering.push(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message for when the run would end (a str becomes a user message)."""
        self._follow_up.push(_as_message(message))

    def clear_steering_queue(self) -> None:
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_up.clear()

    def clear_all_queues(self) -> None:
        self._steering.clear()
        self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering) or bool(self._follow_up)

    def peek_queued_messages(self) -> list[AgentMessage]:
        """The messages the next poll would deliver, without taking them: the steering queue's
        (one or all, per ``steering_mode``), else the follow-up queue's (pi 1.6)."""
        return self._steering.peek() or self._follow_up.peek()

    # --- runs ------------------------------------------------------------------------------------

    async def prompt(
        self,
        text_or_messages: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> None:
        """Run the agent on a prompt: a text (with optional images), a message, or messages.

        Raises ``RuntimeError`` if a run is active. Returns when the run and all listeners are
        done (failures are reported through events and ``state.error_message``).
        """
        if self._active is not None:
            raise RuntimeError(BUSY_MESSAGE)
        await self._run_prompt(self._prompt_messages(text_or_messages, images))

    async def continue_run(self) -> None:
        """Continue from the current transcript without a new prompt.

        If the last message is an assistant reply, queued steering (else follow-up) messages are
        sent as the prompt; with nothing queued that is an error.
        """
        if self._active is not None:
            raise RuntimeError(_BUSY_CONTINUE_MESSAGE)
        messages = self._state.messages
        if all(isinstance(m, SystemMessage) for m in messages):
            raise ValueError("No messages to continue from")
        if messages[-1].role == "assistant":
            queued = self._steering.drain()
            if queued:
                await self._run_prompt(queued, skip_initial_steering_poll=True)
                return
            queued = self._follow_up.drain()
            if queued:
                await self._run_prompt(queued)
                return
            raise ValueError("Cannot continue from message role: assistant")

        async def execute(signal: AbortSignal) -> None:
            await run_agent_loop_continue(
                self._snapshot(), self._config(), self._deliver, signal, self.stream_fn
            )

        await self._run(execute)

    def abort(self) -> None:
        """Abort the active run (no-op while idle). Queued messages are kept."""
        if self._active is not None:
            self._active.controller.abort()

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one running tool call; the run goes on. The call ends with an error result
        (``CANCELLED_TOOL_MESSAGE``) the model sees; a tool that honours its signal (an MCP
        call sends ``notifications/cancelled``) is told at once. ``False`` when that call is
        not running (it ended, or never started)."""
        return self._active is not None and self._tool_stops.stop(tool_call_id)

    async def wait_for_idle(self) -> None:
        """Return once no run is active."""
        active = self._active
        if active is not None:
            await asyncio.shield(active.done)

    def reset(self) -> None:
        """Forget the transcript, run status and queues (model, tools, and the system prompt and
        tool declarations replayed into one leading system message, stay)."""
        state = self._state
        baseline = current_system_message(state._messages)
        state._messages = [] if baseline is None else [baseline]
        state._is_streaming = False
        state._streaming = None
        state._pending_tool_calls = set()
        state._error_message = None
        self.clear_all_queues()

    # --- internals -------------------------------------------------------------------------------

    @staticmethod
    def _prompt_messages(
        text_or_messages: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None,
    ) -> list[AgentMessage]:
        if isinstance(text_or_messages, str):
            content: list[TextContent | ImageContent] = [TextContent(text=text_or_messages)]
            content.extend(images or ())
            return [UserMessage(content=content)]
        if images:
            raise ValueError("images can only be given with a text prompt")
        if hasattr(text_or_messages, "role"):
            return [text_or_messages]
        if isinstance(text_or_messages, Sequence):
            return [_as_message(m) for m in text_or_messages]
        raise TypeError(
            f"prompt takes a str, a message or a list of messages, "
            f"not {type(text_or_messages).__name__}"
        )

    def _snapshot(self) -> AgentContext:
        """The run's context: a copy of the transcript and the tools; the prompt travels in the
        transcript's system messages. The loop declares tool changes before every request
        (``declare_tools``), so they reach the transcript as reported system messages."""
        state = self._state
        return AgentContext("", list(state.messages), list(state.tools))

    def _config(self, *, skip_initial_steering_poll: bool = False) -> AgentLoopConfig:
        state = self._state
        skip = skip_initial_steering_poll
        queue = self._steering

        def steering() -> list[AgentMessage]:  # polled twice a turn: an empty queue costs no call
            nonlocal skip
            if skip:
                skip = False
                return []
            return queue.drain() if queue._items else []

        return AgentLoopConfig(
            model=state.model,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            prepare_next_turn=self.prepare_next_turn,
            prepare_request=self.prepare_request,
            finish_turn=self.finish_turn,
            get_steering_messages=steering,
            get_follow_up_messages=self._follow_up.drain,
            tool_execution=self.tool_execution,
            tool_call_stops=self._tool_stops,
            declare_tools=True,
            reasoning=None if state.thinking_level == "off" else state.thinking_level,
            session_id=self.session_id,
            thinking_budgets=self.thinking_budgets,
            max_retry_delay_ms=self.max_retry_delay_ms,
            on_payload=self.on_payload,
            on_response=self.on_response,
            stream_options=self._pass_through_options(),
        )

    def _pass_through_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.transport:
            options["transport"] = self.transport
        if self.on_stall is not None:
            options["on_stall"] = self.on_stall
        if self.stall_ms is not None:
            options["stall_ms"] = self.stall_ms
        return options

    async def _run_prompt(
        self, messages: list[AgentMessage], *, skip_initial_steering_poll: bool = False
    ) -> None:
        async def execute(signal: AbortSignal) -> None:
            config = self._config(skip_initial_steering_poll=skip_initial_steering_poll)
            await run_agent_loop(
                messages, self._snapshot(), config, self._deliver, signal, self.stream_fn
            )

        await self._run(execute)

    async def _run(self, execute: Callable[[AbortSignal], Awaitable[None]]) -> None:
        if self._active is not None:
            raise RuntimeError(BUSY_MESSAGE)
        active = self._active = _ActiveRun()
        self._signal = active.controller.signal
        state = self._state
        state._is_streaming = True
        state._streaming = None
        state._error_message = None
        try:
            await execute(active.controller.signal)
        except Exception as exc:
            await self._report_failure(exc, active.controller.signal.aborted)
        except asyncio.CancelledError:
            active.controller.abort()  # the caller gave up: stop the provider and the tools too
            raise
        finally:
            state._is_streaming = False
            state._streaming = None
            state._pending_tool_calls = set()
            self._active = None
            self._signal = None
            active.done.set_result(None)

    async def _report_failure(self, exc: Exception, aborted: bool) -> None:
        """End a failed run with a failure reply, reported as pi 0.79 does."""
        _log.warning("agent run failed: %s", describe_error(exc), exc_info=exc)
        model = self._state.model
        stop_reason: Literal["aborted", "error"] = "aborted" if aborted else "error"
        failure = AssistantMessage(
            content=[TextContent(text="")],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason=stop_reason,
            error_message=describe_error(exc),
        )
        for event in (
            MessageStartEvent._quick(type="message_start", message=failure),
            MessageEndEvent._quick(type="message_end", message=failure),
            TurnEndEvent._quick(type="turn_end", message=failure, tool_results=[]),
            AgentEndEvent._quick(type="agent_end", messages=[failure]),
        ):
            pending = self._deliver(event)
            if pending is not None:
                await pending
