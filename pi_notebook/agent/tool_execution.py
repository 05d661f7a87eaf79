"""Running the tool calls of one assistant reply (pi's ``executeToolCalls``, 0.79 semantics).

Every call is first *prepared*, in call order: ``tool_execution_start``, find the tool, reject
unparseable arguments, ``prepare_arguments``, validation, ``before_tool_call``. A call that fails
preparation gets an immediate error result (its ``tool_execution_end`` follows at once, and
``after_tool_call`` is not consulted). Prepared calls then execute:

- **parallel** (default): all prepared calls run concurrently once the preparation pass is over;
  each reports ``tool_execution_end`` when it finishes (completion order), and the tool-result
  messages follow in call order;
- **sequential** (``tool_execution="sequential"``, or any called tool with
  ``execution_mode="sequential"``): each call is prepared, run, ended and its result message
  emitted before the next one starts.

A tool that raises produces an error result carrying the exception text; ``after_tool_call`` may
then override the result field by field. Every result is then bounded and made encodable
(``tool_output.bound_result``): what the model and the session file get is limited, whatever
kind of tool made it, and a result that cannot be encoded never leaves a call without a result.

Abort ends the calls promptly whatever the tools do: running tools get the signal and
``ABORT_GRACE_S`` to finish on their own (a cooperative tool's own result is kept); a tool still
running then is cancelled and abandoned, and its call gets an "Operation aborted" error result.
With ``AgentLoopConfig.tool_call_stops`` set, each call has its own signal too: stopping one call
(``ToolCallStops.stop``) ends it the same way with a ``CANCELLED_TOOL_MESSAGE`` error result, and
the other calls and the run go on.
A sync tool's worker thread cannot be stopped: it finishes on its own and its late result is
ignored. Once the signal fired, no further call runs: those already prepared and those not
prepared yet each end with an "Operation aborted" result, as in pi 1.6, so every call of the
reply has its result. ``before_tool_call`` (a
confirmation prompt, say) is abandoned the same way. A tool and the hook run in the task that
runs the call, not in a task of their own (``abortable`` says how, and why).

A call that ran records how long it took (``duration_ms``, on its ``tool_execution_end`` and its
result message, as pi 1.6). The calls of a reply cut off by the token limit (stop reason
``length``) are not run at all: ``fail_truncated_tool_calls`` gives each an error result.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, TypeAlias

from ..ai.abort import AbortSignal
from ..ai.construct import construct
from ..ai.options import maybe_await
from ..ai.producer import describe_error
from ..ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, now_ms
from .abortable import ABORT_GRACE_S, unless_aborted
from .call_stops import CANCELLED_TOOL_MESSAGE
from .events import (
    EventSink,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    new_event,
)
from .sync_tools import loop_awake
from .tool_output import MAX_TOOL_TEXT_CHARS, bound_result, bound_text
from .tools import AgentTool, AgentToolResult
from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
)

__all__ = [
    "ABORTED_TOOL_MESSAGE",
    "ABORT_GRACE_S",
    "BLOCKED_TOOL_MESSAGE",
    "ToolBatch",
    "execute_tool_calls",
    "fail_truncated_tool_calls",
    "truncated_tool_call_message",
]

BLOCKED_TOOL_MESSAGE = "Tool execution was blocked"
ABORTED_TOOL_MESSAGE = "Operation aborted"
_VALIDATION: Final = "pi_notebook.ai.validation"


async def _load_validation() -> ModuleType:
    """The validation module. jsonschema loads with the first tool call, not with the package,
    and in a thread: its import can take seconds (rfc3987-syntax builds a
    grammar), which must not stall the event loop (a kernel's, with its widgets and aborts).
    Callers look in ``sys.modules`` first (no coroutine per call once it is loaded)."""
    return await asyncio.to_thread(importlib.import_module, _VALIDATION)


@dataclass(frozen=True, slots=True)
class ToolBatch:
    """The outcome of one reply's tool calls: result messages in call order, and whether every
    result asked to end the run (``terminate``)."""

    messages: list[ToolResultMessage]
    terminate: bool


@dataclass(slots=True)  # not frozen: a frozen dataclass sets fields through object.__setattr__
class _Outcome:
    result: AgentToolResult
    is_error: bool
    duration_ms: int | None = None


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: AgentTool
    args: dict[str, Any]
    signal: AbortSignal | None


_Finished: TypeAlias = tuple[_Outcome, ToolResultMessage]

_RESULT_GIVEN: Final = frozenset(
    {
        "role",
        "tool_call_id",
        "tool_name",
        "content",
        "details",
        "is_error",
        "timestamp",
        "duration_ms",
    }
)
"""The fields a tool-result message counts as given (``model_fields_set``)."""


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _error(message: str) -> _Outcome:
    text = bound_text(message, MAX_TOOL_TEXT_CHARS)
    return _Outcome(AgentToolResult(content=[TextContent(text=text)], details={}), True)


def _bounded(outcome: _Outcome) -> _Outcome:
    """``outcome`` within the bounds of ``tool_output`` (an error result if even that fails)."""
    try:
        result = bound_result(outcome.result)
    except Exception as exc:
        return _error(f"The tool result could not be stored: {describe_error(exc)}")
    return outcome if result is outcome.result else _Outcome(result, outcome.is_error)


class _Batch:
    """Shared state of one batch: the reply, the working context, config, signal and sink."""

    __slots__ = ("assistant", "config", "context", "signal", "sink", "stops", "tools")

    def __init__(
        self,
        assistant: AssistantMessage,
        context: AgentContext,
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        sink: EventSink,
    ) -> None:
        self.assistant = assistant
        self.context = context
        self.config = config
        self.signal = signal
        self.sink = sink
        self.stops = config.tool_call_stops
        self.tools: dict[str, AgentTool] = {}
        for tool in context.tools:
            self.tools.setdefault(tool.name, tool)

    @property
    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    def is_sequential(self, calls: Sequence[ToolCall]) -> bool:
        if self.config.tool_execution == "sequential":
            return True
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.execution_mode == "sequential":
                return True
        return False

    # --- the three steps of a call ---------------------------------------------------------------

    def stopped_error(self, call: ToolCall) -> _Outcome:
        """The result of a call ended by an abort: of the run, or of this call alone."""
        if self.stops is not None and not self.aborted and self.stops.stopped(call.id):
            return _error(CANCELLED_TOOL_MESSAGE)
        return _error(ABORTED_TOOL_MESSAGE)

    async def prepare(self, call: ToolCall) -> _Prepared | _Outcome:
        """Everything before execution; an ``_Outcome`` means the call will not run."""
        if self.aborted:  # no call is left without a result, nor runs (as pi 1.6)
            return _error(ABORTED_TOOL_MESSAGE)
        if self.stops is None:
            return await self._prepare(call, self.signal)
        try:
            prepared = await self._prepare(call, self.stops.open(call.id, self.signal))
        except BaseException:
            self.stops.close(call.id, abort=True)
            raise
        if isinstance(prepared, _Outcome):
            self.stops.close(call.id)
        return prepared

    async def _prepare(self, call: ToolCall, signal: AbortSignal | None) -> _Prepared | _Outcome:
        validation = sys.modules.get(_VALIDATION) or await _load_validation()
        arguments_error_for = validation.arguments_error_for
        validate_tool_arguments = validation.validate_tool_arguments
        tool = self.tools.get(call.name)
        if tool is None:
            return _error(f"Tool {call.name} not found")
        try:
            unparseable = arguments_error_for(call)
            if unparseable is not None:
                return _error(unparseable)
            raw = call.arguments
            if tool.prepare_arguments is not None:
                raw = tool.prepare_arguments(raw)
            args = validate_tool_arguments(tool, raw)
            hook = self.config.before_tool_call
            if hook is not None:
                context = BeforeToolCallContext(self.assistant, call, args, self.context)
                gave_up, decision = await unless_aborted(maybe_await(hook(context, signal)), signal)
                if gave_up or (signal is not None and signal.aborted):
                    return self.stopped_error(call)
                if decision is not None and not isinstance(decision, BeforeToolCallResult):
                    raise TypeError(
                        "before_tool_call must return a BeforeToolCallResult or None, "
                        f"not {type(decision).__name__}"
                    )
                if decision is not None and decision.block:
                    blocked = _error(decision.reason or BLOCKED_TOOL_MESSAGE)
                    blocked.result.terminate = decision.terminate
                    return blocked
            if signal is not None and signal.aborted:
                return self.stopped_error(call)
        except Exception as exc:
            return _error(describe_error(exc))
        return _Prepared(call, tool, args, signal)

    async def execute(self, prepared: _Prepared) -> _Outcome:
        """Run the tool (its progress updates are delivered before this returns), then apply
        ``after_tool_call``'s field-wise override, if any, and bound the result."""
        stops = self.stops
        try:
            outcome = await self._execute(prepared)
        except BaseException:  # cancelled: the call's signal fires for what the tool started
            if stops is not None:
                stops.close(prepared.call.id, abort=True)
            raise
        if stops is not None:
            stops.close(prepared.call.id)
        if self.config.after_tool_call is not None:
            outcome = await self._after(prepared, outcome)
        return _bounded(outcome)

    async def _execute(self, prepared: _Prepared) -> _Outcome:
        call, signal = prepared.call, prepared.signal
        if signal is not None and signal.aborted:
            return self.stopped_error(call)
        sink = self.sink
        accepting = True

        def on_update(partial: AgentToolResult) -> None:
            if not isinstance(partial, AgentToolResult):
                raise TypeError(f"on_update takes an AgentToolResult, not {type(partial).__name__}")
            if accepting:
                sink.post(
                    new_event(
                        ToolExecutionUpdateEvent,
                        {
                            "type": "tool_execution_update",
                            "tool_call_id": call.id,
                            "tool_name": call.name,
                            "args": call.arguments,
                            "partial_result": partial,
                        },
                    )
                )

        started = time.perf_counter()
        try:
            running = prepared.tool.execute(call.id, prepared.args, signal, on_update)
            with loop_awake():  # any tool, raw ones too: an interrupt is handled while it runs
                gave_up, result = await unless_aborted(running, signal)
            if gave_up:
                return self.stopped_error(call)
            duration_ms = _elapsed_ms(started)
            if not isinstance(result, AgentToolResult):
                raise TypeError(
                    f"Tool {call.name} returned {type(result).__name__}, "
                    "expected an AgentToolResult"
                )
            outcome = _Outcome(result, result.is_error, duration_ms)
        except Exception as exc:
            stopped = self.stops is not None and self.stops.stopped(call.id) and not self.aborted
            failed = _error(CANCELLED_TOOL_MESSAGE if stopped else describe_error(exc))
            outcome = _Outcome(failed.result, True, _elapsed_ms(started))
        finally:
            accepting = False  # updates after the tool settled are ignored
        await sink.flush()
        return outcome

    async def _after(self, prepared: _Prepared, outcome: _Outcome) -> _Outcome:
        hook = self.config.after_tool_call
        assert hook is not None
        context = AfterToolCallContext(
            self.assistant,
            prepared.call,
            prepared.args,
            outcome.result,
            outcome.is_error,
            self.context,
        )
        try:
            override = await maybe_await(hook(context, self.signal))
            if override is None:
                return outcome
            if not isinstance(override, AfterToolCallResult):
                raise TypeError(
                    "after_tool_call must return an AfterToolCallResult or None, "
                    f"not {type(override).__name__}"
                )
            result = outcome.result
            merged = AgentToolResult(
                content=result.content if override.content is None else override.content,
                details=result.details if override.details is None else override.details,
                terminate=result.terminate if override.terminate is None else override.terminate,
                is_error=result.is_error,
            )
        except Exception as exc:
            failed = _error(describe_error(exc))
            return _Outcome(failed.result, True, outcome.duration_ms)
        return _Outcome(
            merged,
            outcome.is_error if override.is_error is None else override.is_error,
            outcome.duration_ms,
        )

    # --- events (``started`` and ``ended`` hand back ``send``'s awaitable: no coroutine) ------

    def started(self, call: ToolCall) -> Awaitable[None]:
        return self.sink.send(
            new_event(
                ToolExecutionStartEvent,
                {
                    "type": "tool_execution_start",
                    "tool_call_id": call.id,
                    "tool_name": call.name,
                    "args": call.arguments,
                },
            )
        )

    def ended(self, call: ToolCall, outcome: _Outcome) -> Awaitable[None]:
        return self.sink.send(
            new_event(
                ToolExecutionEndEvent,
                {
                    "type": "tool_execution_end",
                    "tool_call_id": call.id,
                    "tool_name": call.name,
                    "result": outcome.result,
                    "is_error": outcome.is_error,
                    "duration_ms": outcome.duration_ms,
                },
            )
        )

    async def result_message(self, call: ToolCall, outcome: _Outcome) -> ToolResultMessage:
        result = outcome.result
        values = {  # every field, in field order (what ToolResultMessage.model_construct builds)
            "role": "toolResult",
            "tool_call_id": call.id,
            "tool_name": call.name,
            "content": result.content,  # already validated by AgentToolResult
            "details": result.details,
            "usage": None,
            "nested_calls": None,
            "is_error": outcome.is_error,
            "timestamp": now_ms(),
            "duration_ms": outcome.duration_ms,
        }
        message: ToolResultMessage = construct(ToolResultMessage, values, set(_RESULT_GIVEN))
        await self.sink.send(
            new_event(MessageStartEvent, {"type": "message_start", "message": message})
        )
        await self.sink.send(
            new_event(MessageEndEvent, {"type": "message_end", "message": message})
        )
        return message

    # --- the two modes ---------------------------------------------------------------------------

    async def run_sequential(self, calls: Sequence[ToolCall]) -> list[_Finished]:
        finished: list[_Finished] = []
        for call in calls:
            await self.started(call)
            prepared = await self.prepare(call)
            if isinstance(prepared, _Outcome):
                outcome = prepared
            else:
                outcome = await self.execute(prepared)
            await self.ended(call, outcome)
            finished.append((outcome, await self.result_message(call, outcome)))
        return finished

    async def run_parallel(self, calls: Sequence[ToolCall]) -> list[_Finished]:
        outcomes: dict[int, _Outcome] = {}
        runnable: list[tuple[int, _Prepared]] = []
        prepared_count = 0
        for index, call in enumerate(calls):
            await self.started(call)
            prepared = await self.prepare(call)
            prepared_count += 1
            if isinstance(prepared, _Outcome):
                outcomes[index] = prepared
                await self.ended(call, prepared)
            else:
                runnable.append((index, prepared))

        async def run(index: int, prepared: _Prepared) -> None:
            outcome = await self.execute(prepared)
            await self.ended(prepared.call, outcome)
            outcomes[index] = outcome

        if len(runnable) == 1:
            await run(*runnable[0])
        elif runnable:
            await _run_concurrently([run(index, prepared) for index, prepared in runnable])

        finished: list[_Finished] = []
        for index in range(prepared_count):
            outcome = outcomes[index]
            finished.append((outcome, await self.result_message(calls[index], outcome)))
        return finished


async def _run_concurrently(coroutines: list[Coroutine[Any, Any, None]]) -> None:
    """Run all; on the first failure cancel the others and re-raise it."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def execute_tool_calls(
    assistant_message: AssistantMessage,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    sink: EventSink,
) -> ToolBatch:
    """Run the tool calls of ``assistant_message`` and report them through ``sink``."""
    calls = assistant_message.tool_calls
    batch = _Batch(assistant_message, context, config, signal, sink)
    if batch.is_sequential(calls):
        finished = await batch.run_sequential(calls)
    else:
        finished = await batch.run_parallel(calls)
    messages: list[ToolResultMessage] = []
    terminate = bool(finished)  # every result asks to end the run (one loop: no generators)
    for outcome, message in finished:
        messages.append(message)
        terminate = terminate and outcome.result.terminate
    return ToolBatch(messages, terminate)


def truncated_tool_call_message(name: str) -> str:
    """The error result of a call in a reply cut off by the token limit (pi 1.6's wording)."""
    return (
        f'Tool call "{name}" was not executed: the response hit the output token limit, so its '
        "arguments may be truncated. Re-issue the tool call with complete arguments."
    )


async def fail_truncated_tool_calls(
    assistant_message: AssistantMessage,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    sink: EventSink,
) -> ToolBatch:
    """Report every tool call of a ``length``-stopped reply as not executed: its arguments may
    have been salvaged from a cut-off stream, so none is safe to run. The run goes on."""
    batch = _Batch(assistant_message, context, config, signal, sink)
    messages: list[ToolResultMessage] = []
    for call in assistant_message.tool_calls:
        await batch.started(call)
        outcome = _error(truncated_tool_call_message(call.name))
        await batch.ended(call, outcome)
        messages.append(await batch.result_message(call, outcome))
    return ToolBatch(messages, terminate=False)
