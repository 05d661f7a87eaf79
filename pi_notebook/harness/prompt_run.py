"""One prompt's run through the agent loop, as the harness drives it: turn snapshots, the
loop's hooks bound to the harness's, every finished message written to the session before
listeners hear of it, failures turned into a failure reply, and the automatic compactions and
retries that follow a reply."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..agent.call_stops import ToolCallStops
from ..agent.events import (
    AgentEndEvent,
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    TurnEndEvent,
)
from ..agent.loop import run_agent_loop, run_agent_loop_continue
from ..agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    TurnEndContext,
    TurnUpdate,
)
from ..ai.abort import AbortController, AbortSignal
from ..ai.producer import describe_error
from ..ai.types import AssistantMessage, ImageContent, TextContent, Usage, UserMessage
from .budget import BudgetMeter
from .compaction_runs import CompactionRunner
from .configuration import HarnessParts, TurnSnapshot
from .harness_events import SavePointEvent, SettledEvent
from .hooks import (
    AgentHarnessError,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    ContextEvent,
    ContextResult,
    FinishTurnEvent,
    FinishTurnResult,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
    as_harness_error,
)
from .messages import convert_to_llm
from .navigation import text_of
from .provider_requests import ProviderRequests
from .queues import MessageQueues

__all__ = ["PromptRun", "last_assistant"]

_log = logging.getLogger(__name__)


def last_assistant(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


class PromptRun:
    """The run of one ``prompt`` (or skill, or prompt template), until it settles.

    ``messages`` collects every message it adds (retries included); ``meter`` is its budget
    meter, if any cap applies."""

    def __init__(
        self,
        parts: HarnessParts,
        queues: MessageQueues,
        compactions: CompactionRunner,
        controller: AbortController,
        tool_stops: ToolCallStops,
        meter: BudgetMeter | None,
    ) -> None:
        self._config = parts.config
        self._writer = parts.writer
        self._session = parts.writer.session
        self._hooks = parts.hooks
        self._emit = parts.emit
        self._queues = queues
        self._compactions = compactions
        self._controller = controller
        self._tool_stops = tool_stops
        self.meter = meter
        self.messages: list[AgentMessage] = []
        self.turn: TurnSnapshot | None = None
        self._requests = ProviderRequests(parts, self)

    async def start(self, message: UserMessage, images: list[ImageContent]) -> AssistantMessage:
        """Run ``message`` (after the messages queued for the next turn) until it settles;
        returns the last reply."""
        signal = self._controller.signal
        last = last_assistant(self._session.build_context().messages)
        if last is not None:  # pi 1.6 checks before a prompt too (an aborted reply included)
            await self._compactions.check_and_compact(last, signal, skip_aborted=False)
        self._config.record_thinking_level()
        snapshot = await self._config.snapshot()
        prompts: list[AgentMessage] = [*await self._queues.take_next_turn(), message]
        event = BeforeAgentStartEvent(
            prompt=text_of(message.content),
            images=images,
            system_prompt=snapshot.system_prompt,
            resources=snapshot.resources,
        )
        before = await self._hooks.run("before_agent_start", event, BeforeAgentStartResult)
        system_prompt = snapshot.system_prompt
        if before is not None:
            prompts.extend(before.messages or ())
            system_prompt = before.system_prompt or system_prompt
        messages = await self._run(snapshot, prompts, system_prompt)
        await self._settle(messages)
        await self._emit(SettledEvent(next_turn_count=len(self._queues.next_turn)))
        reply = last_assistant(self.messages)
        if reply is None:
            raise AgentHarnessError("invalid_state", "The run ended without an assistant message")
        return reply

    def _loop_config(self, snapshot: TurnSnapshot) -> AgentLoopConfig:
        level = snapshot.thinking_level
        config = self._config
        return AgentLoopConfig(
            model=snapshot.model,
            convert_to_llm=convert_to_llm,
            transform_context=self._transform_context,
            get_api_key=config.api_key if config.get_api_key is not None else None,
            before_tool_call=self._before_tool_call,
            after_tool_call=self._after_tool_call,
            prepare_next_turn=self._prepare_next_turn,
            finish_turn=self._finish_turn,
            get_steering_messages=self._queues.drain_steer,
            get_follow_up_messages=self._queues.drain_follow_up,
            tool_execution=config.tool_execution,
            tool_call_stops=self._tool_stops,
            reasoning=None if level == "off" else level,
            session_id=snapshot.session_id,
        )

    async def _run(
        self, snapshot: TurnSnapshot, prompts: list[AgentMessage] | None, system_prompt: str
    ) -> list[AgentMessage]:
        """One loop run (``prompts`` ``None``: continue the context); failures are reported as
        a failure reply, as pi's harness does."""
        self.turn = snapshot
        context = AgentContext(system_prompt, list(snapshot.messages), list(snapshot.active_tools))
        config = self._loop_config(snapshot)
        signal = self._controller.signal
        stream = self._requests.stream
        try:
            if prompts is None:
                added = await run_agent_loop_continue(
                    context, config, self._handle_agent_event, signal, stream
                )
            else:
                added = await run_agent_loop(
                    prompts, context, config, self._handle_agent_event, signal, stream
                )
        except Exception as exc:
            added = await self._report_failure(exc, signal.aborted)
        finally:
            await self._writer.flush()
        self.messages.extend(added)
        return added

    async def _report_failure(self, exc: Exception, aborted: bool) -> list[AgentMessage]:
        _log.warning("harness run failed: %s", describe_error(exc), exc_info=exc)
        model = self.turn.model if self.turn is not None else self._config.model
        failure = AssistantMessage(
            content=[TextContent(text="")],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="aborted" if aborted else "error",
            error_message=describe_error(exc),
        )
        try:
            for event in (
                MessageStartEvent._quick(type="message_start", message=failure),
                MessageEndEvent._quick(type="message_end", message=failure),
                TurnEndEvent._quick(type="turn_end", message=failure, tool_results=[]),
                AgentEndEvent._quick(type="agent_end", messages=[failure]),
            ):
                await self._handle_agent_event(event)
        except Exception as second:
            error = as_harness_error(exc, "unknown")
            error.add_note(f"Reporting the failure failed too: {describe_error(second)}")
            raise error from (second if error is exc else exc)
        return [failure]

    async def _handle_agent_event(self, event: AgentEvent) -> None:
        kind = event.type
        if kind == "message_end":
            assert isinstance(event, MessageEndEvent)
            message = event.message
            session = self._session
            self._writer.persist(lambda: session.append_message(message))  # type: ignore[arg-type]
            meter = self.meter
            if meter is not None and isinstance(message, AssistantMessage):
                if meter.stopped is None or message.error_message != meter.stopped:
                    meter.record(message.usage)  # the stopped request was never sent
                await self._emit(meter.event())
            if isinstance(message, AssistantMessage) and message.stop_reason not in (
                "error",
                "length",
            ):
                self._compactions.recovery_attempted = False  # a good reply: may run again
            await self._emit(event)
        elif kind == "message_start" and isinstance(event.message, UserMessage):  # type: ignore[union-attr]
            self._compactions.recovery_attempted = False  # a new input (pi 1.6)
            await self._emit(event)
        elif kind == "turn_end":
            failure: AgentHarnessError | None = None
            try:
                await self._emit(event)
            except AgentHarnessError as exc:
                failure = exc  # write what the turn left pending before failing
            had_pending = self._writer.has_pending
            await self._writer.flush()
            if failure is not None:
                raise failure
            await self._emit(SavePointEvent(had_pending_mutations=had_pending))
        elif kind == "agent_end":
            await self._writer.flush()
            await self._emit(event)
        else:
            await self._emit(event)

    # --- the loop's hooks ------------------------------------------------------------------------

    async def _prepare_next_turn(self, _turn: TurnEndContext) -> TurnUpdate:
        await self._writer.flush()
        snapshot = await self._config.snapshot()
        signal = self._controller.signal
        if self._compactions.over_threshold(snapshot.messages):
            # pi 1.6: compact before the next request of a running turn; the turn goes on
            # over the compacted context whatever the compaction did
            await self._compactions.auto_compact("threshold", signal, will_retry=False)
            snapshot = await self._config.snapshot()
        self.turn = snapshot
        context = AgentContext(
            snapshot.system_prompt, list(snapshot.messages), list(snapshot.active_tools)
        )
        return TurnUpdate(
            context=context, model=snapshot.model, thinking_level=snapshot.thinking_level
        )

    async def _finish_turn(
        self, turn: TurnEndContext, _signal: AbortSignal | None
    ) -> FinishTurnResult | None:
        event = FinishTurnEvent(turn.message, list(turn.tool_results))
        return await self._hooks.run("finish_turn", event, FinishTurnResult)

    async def _transform_context(
        self, messages: list[AgentMessage], _signal: AbortSignal | None
    ) -> Sequence[AgentMessage]:
        if not self._hooks.handlers("context"):
            return messages
        result = await self._hooks.run("context", ContextEvent(list(messages)), ContextResult)
        return messages if result is None else list(result.messages)

    async def _before_tool_call(
        self, context: BeforeToolCallContext, _signal: AbortSignal | None
    ) -> BeforeToolCallResult | None:
        call = context.tool_call
        event = ToolCallEvent(call.id, call.name, dict(context.args))
        result = await self._hooks.run("tool_call", event, ToolCallResult)
        return None if result is None else BeforeToolCallResult(result.block, result.reason)

    async def _after_tool_call(
        self, context: AfterToolCallContext, _signal: AbortSignal | None
    ) -> AfterToolCallResult | None:
        call = context.tool_call
        result = context.result
        event = ToolResultEvent(
            call.id,
            call.name,
            dict(context.args),
            list(result.content),
            result.details,
            context.is_error,
        )
        patch = await self._hooks.run("tool_result", event, ToolResultPatch)
        if patch is None:
            return None
        return AfterToolCallResult(patch.content, patch.details, patch.is_error, patch.terminate)

    # --- after a run -----------------------------------------------------------------------------

    async def _settle(self, messages: list[AgentMessage]) -> None:
        """After a run, as pi 1.6 does after each agent run: check its last reply; an overflow
        compacted for a retry sends the request again (a continue run), a compaction with
        messages queued meanwhile delivers them in another run."""
        signal = self._controller.signal
        while not signal.aborted:
            reply = last_assistant(messages)
            if reply is None or not await self._compactions.check_and_compact(
                reply, signal, defer_threshold=self._compactions.defer_threshold
            ):
                break
            snapshot = await self._config.snapshot()
            if snapshot.messages and snapshot.messages[-1].role != "assistant":
                messages = await self._run(snapshot, None, snapshot.system_prompt)
            else:
                queued = await self._queues.drain_steer() or await self._queues.drain_follow_up()
                if not queued:
                    break
                messages = await self._run(snapshot, queued, snapshot.system_prompt)
