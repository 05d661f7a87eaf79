"""The agent loop: prompt → model reply → tool calls → next reply …, reported as agent events.

``run_agent_loop(prompts, context, config, emit)`` hands every event to ``emit`` and awaits what
it returns, if anything (the ``Agent`` and the harness use it: a slow listener back-pressures the
run), and returns the messages the run added. ``agent_loop(...)`` runs the same loop as a
background task and hands its events to an async iterator. The ``*_continue`` variants resume from
an existing transcript without a prompt.

Event order (pi's)::

    agent_start, turn_start, message_start/end per prompt,
    [turn_start (not for the first turn), message_start/end per injected steering/follow-up
     message, message_start, message_update…, message_end (assistant),
     tool events (see ``tool_execution``), turn_end] …, agent_end

A reply that ends in ``error`` or ``aborted`` ends the run after its ``turn_end``. Steering
messages are polled at the start and after every turn, follow-ups only when the run would end.

The hooks of pi 1.6 (see ``AgentLoopConfig``): ``prepare_request`` before every request,
``finish_turn`` before each ``turn_end`` (it may end the run or ask for one more request),
``prepare_next_turn`` only when another turn starts (before its ``turn_start``). A reply that
stopped at the token limit (``length``) does not run its tool calls: each gets an error result
and the loop asks again. Every reply records the thinking level it was requested with. With
``declare_tools`` (the ``Agent``'s runs) a change of ``context.tools`` is declared to the model as
a system message before the next request, reported with the prompts or the injected messages
(``tool_declarations``).

Cost per turn does not grow with the transcript: the working context is appended to, and with the
default ``convert_to_llm`` only new messages are converted, into a list that is copied only while
an earlier request still holds it.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from dataclasses import fields, replace
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.event_stream import AssistantMessageEventStream, DeltaRun
from ..ai.events import BLOCK_EVENT_CLASSES, BLOCK_EVENT_TYPES, AssistantMessageEvent
from ..ai.options import StreamOptions, maybe_await
from ..ai.registry import stream_simple_options
from ..ai.types import AssistantMessage, Context, Message, Model, ThinkingLevel, ToolResultMessage
from .events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    Emit,
    EventSink,
    MessageEndEvent,
    MessageStartEvent,
    TurnEndEvent,
    TurnStartEvent,
    fast_construct,
    new_event,
)
from .tool_declarations import ToolDeclarations, declare_tool_changes
from .tool_execution import execute_tool_calls, fail_truncated_tool_calls
from .types import (
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    GetQueuedMessages,
    RequestContext,
    RequestUpdate,
    StreamFn,
    TurnEndContext,
    TurnUpdate,
    default_convert_to_llm,
    finish_turn_action,
)

__all__ = [
    "AgentEventStream",
    "agent_loop",
    "agent_loop_continue",
    "default_stream_fn",
    "run_agent_loop",
    "run_agent_loop_continue",
]

_STREAM_OPTION_NAMES = tuple(f.name for f in fields(StreamOptions) if f.name != "extra")
_OWN_REFERENCES = 2
"""``sys.getrefcount`` of the converted message list when only ``_Run`` holds it (its attribute
and the call's own argument)."""


default_stream_fn: StreamFn = stream_simple_options
"""pi-ai's ``stream_simple`` over the provider registered for ``model.api``, given the loop's
``StreamOptions`` as they are."""


class _Run:
    """One run of the loop: its working context, the messages it added, and where events go."""

    def __init__(
        self,
        context: AgentContext,
        new_messages: list[AgentMessage],
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        sink: EventSink,
        stream_fn: StreamFn | None,
    ) -> None:
        self.context = context
        self.new_messages = new_messages
        self.config = config
        self.signal = signal
        self.sink = sink
        self.stream_fn: StreamFn = stream_fn or default_stream_fn
        self.model = config.model
        self.reasoning = config.reasoning
        self._options = self._run_options()
        self._converted: list[Message] = []
        self._converted_from: list[AgentMessage] | None = None
        self._converted_count = 0
        self.declarations = ToolDeclarations() if config.declare_tools else None

    async def emit_message(self, message: AgentMessage) -> None:
        """``message_start`` + ``message_end`` for a message that arrives whole."""
        await self.sink.send(
            new_event(MessageStartEvent, {"type": "message_start", "message": message})
        )
        await self.sink.send(
            new_event(MessageEndEvent, {"type": "message_end", "message": message})
        )

    async def end(self) -> None:
        await self.sink.send(
            new_event(AgentEndEvent, {"type": "agent_end", "messages": list(self.new_messages)})
        )

    async def poll(self, hook: GetQueuedMessages | None) -> list[AgentMessage]:
        if hook is None:
            return []
        queued = hook()
        if type(queued) is list:  # a plain hook's answer, told without an ABC check
            return list(queued)
        return list(await maybe_await(queued))

    # --- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        config = self.config
        send = self.sink.send
        pending = await self.poll(config.get_steering_messages)
        last_turn: TurnEndContext | None = None
        explicit_continue = False
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                prepared: list[AgentMessage] = []
                if last_turn is not None:
                    if config.prepare_next_turn is not None:
                        update = await maybe_await(config.prepare_next_turn(last_turn))
                        prepared = self.apply_next_turn(update)
                    if not pending:  # pick up steering queued while the preparation ran
                        pending = await self.poll(config.get_steering_messages)
                    await send(new_event(TurnStartEvent, {"type": "turn_start"}))
                incoming = [*prepared, *pending]
                if self.declarations is not None:  # pi 1.6: tool changes before every request
                    incoming = self.declarations.declare(self.context, incoming)
                for message in incoming:
                    await self.emit_message(message)
                    self.context.messages.append(message)
                    self.new_messages.append(message)
                pending = []

                if config.prepare_request is not None:
                    request = RequestContext(self.context, self.model, self.reasoning or "off")
                    self.apply_request(
                        await maybe_await(config.prepare_request(request, self.signal))
                    )
                reply = await self.stream_reply()
                self.new_messages.append(reply)
                if reply.stop_reason == "error" or reply.stop_reason == "aborted":
                    last_turn = TurnEndContext(reply, [], self.context, self.new_messages)
                    if config.finish_turn is not None:  # told, but the run ends regardless
                        await maybe_await(config.finish_turn(last_turn, self.signal))
                    await send(
                        new_event(
                            TurnEndEvent, {"type": "turn_end", "message": reply, "tool_results": []}
                        )
                    )
                    await self.end()
                    return

                tool_results: list[ToolResultMessage] = []
                more_tool_calls = False
                if any(block.type == "toolCall" for block in reply.content):
                    run_calls = (
                        fail_truncated_tool_calls
                        if reply.stop_reason == "length"
                        else execute_tool_calls
                    )
                    batch = await run_calls(reply, self.context, config, self.signal, self.sink)
                    tool_results = batch.messages
                    self.context.messages.extend(tool_results)
                    self.new_messages.extend(tool_results)
                    more_tool_calls = not batch.terminate
                last_turn = TurnEndContext(reply, tool_results, self.context, self.new_messages)
                action = None
                if config.finish_turn is not None:
                    decision = await maybe_await(config.finish_turn(last_turn, self.signal))
                    action = finish_turn_action(decision)
                await send(
                    new_event(
                        TurnEndEvent,
                        {"type": "turn_end", "message": reply, "tool_results": tool_results},
                    )
                )
                if action == "end":
                    await self.end()
                    return
                if config.should_stop_after_turn is not None and await maybe_await(
                    config.should_stop_after_turn(last_turn)
                ):
                    await self.end()
                    return
                explicit_continue = action == "continue"
                pending = await self.poll(config.get_steering_messages)
                if more_tool_calls or pending:
                    explicit_continue = False  # a request follows anyway

            pending = await self.poll(config.get_follow_up_messages)
            if pending:
                explicit_continue = False
                continue
            if explicit_continue:  # finish_turn asked for one more request with nothing new
                explicit_continue = False
                continue
            break
        await self.end()

    def apply_next_turn(self, update: TurnUpdate | None) -> list[AgentMessage]:
        """Take over what ``prepare_next_turn`` replaced; returns the messages it added."""
        if update is None:
            return []
        if not isinstance(update, TurnUpdate):
            raise TypeError(
                f"prepare_next_turn must return a TurnUpdate or None, not {type(update).__name__}"
            )
        self._take(update.context, update.model, update.thinking_level)
        return list(update.messages or ())

    def apply_request(self, update: RequestUpdate | None) -> None:
        """Take over what ``prepare_request`` replaced."""
        if update is None:
            return
        if not isinstance(update, RequestUpdate):
            raise TypeError(
                f"prepare_request must return a RequestUpdate or None, not {type(update).__name__}"
            )
        self._take(update.context, update.model, update.thinking_level)

    def _take(
        self, context: AgentContext | None, model: Model | None, level: ThinkingLevel | None
    ) -> None:
        if context is not None:
            self.context = context
            self._converted_from = None  # convert the new context afresh
        if model is not None:
            self.model = model
        if level is not None:
            self.reasoning = None if level == "off" else level

    # --- one model call --------------------------------------------------------------------------

    async def llm_messages(self) -> list[Message]:
        """The messages for the next call: hooks applied, or the default conversion extended
        by the messages appended since the last call."""
        config = self.config
        messages = self.context.messages
        if config.transform_context is None and config.convert_to_llm is default_convert_to_llm:
            if self._converted_from is not messages or self._converted_count > len(messages):
                self._converted, self._converted_from, self._converted_count = [], messages, 0
            elif sys.getrefcount(self._converted) > _OWN_REFERENCES:
                # The last request's context (or whoever took its list) still holds it: it must
                # not see this request's messages, so this one extends a copy. Once nothing else
                # refers to it, the list is extended in place: no copy of the history per turn.
                self._converted = list(self._converted)
            self._converted.extend(default_convert_to_llm(messages[self._converted_count :]))
            self._converted_count = len(messages)
            return self._converted
        view: list[AgentMessage] = messages
        if config.transform_context is not None:
            view = list(await maybe_await(config.transform_context(list(messages), self.signal)))
        return list(await maybe_await(config.convert_to_llm(view)))

    async def stream_options(self) -> StreamOptions:
        """The options of the next call: the run's, with what may change per call."""
        config = self.config
        api_key = config.api_key
        if config.get_api_key is not None:
            api_key = await maybe_await(config.get_api_key(self.model.provider)) or api_key
        options = self._options
        return replace(
            options,
            api_key=api_key,
            signal=self.signal,
            reasoning=self.reasoning,
            extra=dict(options.extra),
        )

    def _run_options(self) -> StreamOptions:
        """The options object of the run's calls, from the config's stream options (fields of
        ``StreamOptions``, and the rest kept in ``extra``)."""
        config = self.config
        given: dict[str, Any] = dict(config.stream_options)
        explicit = {
            "session_id": config.session_id,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "headers": config.headers,
            "max_retry_delay_ms": config.max_retry_delay_ms,
            "thinking_budgets": config.thinking_budgets,
            "on_payload": config.on_payload,
            "on_response": config.on_response,
        }
        given.update((k, v) for k, v in explicit.items() if v is not None)
        for per_call in ("api_key", "signal", "reasoning", "extra"):
            given.pop(per_call, None)
        fixed = {k: v for k, v in given.items() if k in _STREAM_OPTION_NAMES and v is not None}
        extra = {k: v for k, v in given.items() if k not in _STREAM_OPTION_NAMES}
        return StreamOptions(**fixed, extra=extra)

    async def stream_reply(self) -> AssistantMessage:
        """Call the model and relay its reply as message_start / message_update… / message_end."""
        context = self.context
        messages = await self.llm_messages()
        declarations = self.declarations
        tools = (
            context.tools if declarations is None else declarations.request_tools(context, messages)
        )
        llm_context = fast_construct(
            Context,
            system_prompt=context.system_prompt,
            messages=messages,
            tools=list(tools) or None,
        )
        options = await self.stream_options()
        produced = self.stream_fn(self.model, llm_context, options)
        if type(produced) is AssistantMessageEventStream:  # the common case, told at once
            stream = produced
        else:
            stream = await produced if inspect.isawaitable(produced) else produced

        send, offer_update, offer_run = self.sink.send, self.sink.offer_update, self.sink.offer_run
        next_batch = (
            _queued(stream)
            if isinstance(stream, AssistantMessageEventStream)
            else _one_at_a_time(stream)
        )
        started = False
        final: AssistantMessage | None = None
        while final is None and (batch := await next_batch()):
            for event in batch:
                if type(event) is DeltaRun:  # deltas into one block: their events built as sent
                    if started and (pending := offer_run(event)) is not None:
                        await pending
                elif type(event) in BLOCK_EVENT_CLASSES or (
                    (kind := event.type) in BLOCK_EVENT_TYPES  # type: ignore[union-attr]
                ):
                    if started and (pending := offer_update(event)) is not None:  # type: ignore[arg-type]
                        await pending
                elif kind == "start":
                    if not started:
                        started = True
                        message = event.partial  # type: ignore[union-attr]
                        await send(
                            new_event(
                                MessageStartEvent, {"type": "message_start", "message": message}
                            )
                        )
                elif kind == "done":
                    final = event.message  # type: ignore[union-attr]
                    break
                elif kind == "error":
                    final = event.error  # type: ignore[union-attr]
                    break
        if final is None:
            final = await stream.result()
        if not isinstance(final, AssistantMessage):
            raise TypeError(f"the stream function produced {type(final).__name__}, not a reply")
        level = self.reasoning or "off"  # the level asked for (pi 1.6)
        if type(final) is AssistantMessage and type(final.__pydantic_fields_set__) is set:
            # what pydantic's __setattr__ does, without it (a shared fields set: with it)
            final.__dict__["thinking_level"] = level
            final.__pydantic_fields_set__.add("thinking_level")
        else:
            final.thinking_level = level
        if not started:
            await send(new_event(MessageStartEvent, {"type": "message_start", "message": final}))
        context.messages.append(final)
        await send(new_event(MessageEndEvent, {"type": "message_end", "message": final}))
        return final


def _queued(
    stream: AssistantMessageEventStream,
) -> Callable[[], Awaitable[Iterable[AssistantMessageEvent | DeltaRun]]]:
    """``next_batch`` giving what is queued, each run of deltas whole (``EventBatch.queued``)."""
    take = stream.next_batch

    async def next_batch() -> Iterable[AssistantMessageEvent | DeltaRun]:
        batch = await take()
        return batch.queued() if batch else ()

    return next_batch


def _one_at_a_time(
    stream: AsyncIterable[AssistantMessageEvent],
) -> Callable[[], Awaitable[Sequence[AssistantMessageEvent]]]:
    """``next_batch`` for a stream that is only an async iterable: one event at a time."""
    iterator = aiter(stream)

    async def next_batch() -> Sequence[AssistantMessageEvent]:
        try:
            return (await anext(iterator),)
        except StopAsyncIteration:
            return ()

    return next_batch


# --- awaited-emit entry points -------------------------------------------------------------------


async def run_agent_loop(
    prompts: Iterable[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Run the loop on ``prompts`` after ``context``; every event goes through ``emit`` (its
    awaitable, if it returns one, is awaited before the next event).

    ``context`` is not modified. Returns the messages the run added (prompts first).
    """
    prompts = list(prompts)
    if config.declare_tools:
        prompts = declare_tool_changes(context, prompts)
    working = AgentContext(
        context.system_prompt, [*context.messages, *prompts], list(context.tools)
    )
    run = _Run(working, list(prompts), config, signal, EventSink(emit), stream_fn)
    await run.sink.send(new_event(AgentStartEvent, {"type": "agent_start"}))
    await run.sink.send(new_event(TurnStartEvent, {"type": "turn_start"}))
    for prompt in prompts:
        await run.emit_message(prompt)
    await run.run()
    return run.new_messages


def _check_continuable(context: AgentContext) -> None:
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    role = context.messages[-1].role
    if role == "assistant":
        raise ValueError(f"Cannot continue from message role: {role}")


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Resume from ``context`` (whose last message must not be an assistant reply)."""
    _check_continuable(context)
    working = AgentContext(context.system_prompt, list(context.messages), list(context.tools))
    run = _Run(working, [], config, signal, EventSink(emit), stream_fn)
    await run.sink.send(new_event(AgentStartEvent, {"type": "agent_start"}))
    await run.sink.send(new_event(TurnStartEvent, {"type": "turn_start"}))
    await run.run()
    return run.new_messages


# --- async-iterator entry points -----------------------------------------------------------------

_running_loops: set[asyncio.Task[Any]] = set()
"""Strong references: a loop task must not be garbage-collected while it runs."""


class AgentEventStream:
    """The events of a loop run as an async iterator; ``await result()`` gives the new messages.

    The run goes on in a task of its own and does not wait for the consumer (events queue up in
    a deque). If the run fails, iteration raises the failure after the events before it.
    """

    __slots__ = ("_backlog", "_error", "_messages", "_raised", "_runner", "_task", "_waiter")

    def __init__(self, runner: Callable[[Emit], Awaitable[list[AgentMessage]]]) -> None:
        self._runner = runner
        self._backlog: deque[AgentEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._messages: list[AgentMessage] = []
        self._error: Exception | None = None
        self._raised = False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # started by the first consumer
        self._start()

    def _start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
            _running_loops.add(self._task)
            self._task.add_done_callback(_running_loops.discard)
        return self._task

    def _emit(self, event: AgentEvent) -> None:
        self._backlog.append(event)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _run(self) -> None:
        try:
            self._messages = await self._runner(self._emit)
        except Exception as exc:
            self._error = exc
        finally:
            self._wake()

    def __aiter__(self) -> AgentEventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        task = self._start()
        while True:
            if self._backlog:
                return self._backlog.popleft()
            if task.done():
                if self._error is not None and not self._raised:
                    self._raised = True
                    raise self._error
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    async def result(self) -> list[AgentMessage]:
        """The messages the run added (raises the run's failure, if it failed)."""
        await asyncio.shield(self._start())
        if self._error is not None:
            raise self._error
        return self._messages

    async def aclose(self) -> None:
        """Cancel the run (if still going) and wait for it to stop."""
        task = self._start()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def agent_loop(
    prompts: Iterable[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> AgentEventStream:
    """``run_agent_loop`` as an async iterator of events (the run does not wait for you)."""
    prompts = list(prompts)
    return AgentEventStream(
        lambda emit: run_agent_loop(prompts, context, config, emit, signal, stream_fn)
    )


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> AgentEventStream:
    """``run_agent_loop_continue`` as an async iterator. Raises at once if ``context`` cannot
    be continued (empty, or ending with an assistant reply)."""
    _check_continuable(context)
    return AgentEventStream(
        lambda emit: run_agent_loop_continue(context, config, emit, signal, stream_fn)
    )
