"""``AgentHarness``: the agent loop bound to a persistent session (pi's harness, 0.79).

One operation runs at a time — a prompt (``phase`` ``turn``), a compaction (``compaction``) or a
tree navigation (``branch_summary``); otherwise the harness is ``idle``. A prompt works like
this:

- **Turn snapshots.** Each turn's context is rebuilt from the *session*
  (``Session.build_context()``) together with the harness's current model, thinking level,
  tools, system prompt and stream options. Changing those while a run is going affects the next
  turn, never the request in flight.
- **Persistence.** Every message that reaches ``message_end`` is appended to the session before
  any listener hears of it. Changes made while busy (model, thinking level, active tools) are
  *pending writes*, flushed at the next save point: after each ``turn_end`` (then a
  ``save_point`` event follows) and at the end of the run.
- **Events.** ``subscribe`` listeners get the agent events and the harness's own
  (:mod:`~pi_notebook.harness.harness_events`), awaited in order. The event order of a run is
  pi's: ``agent_start`` … ``turn_end``, ``save_point`` … ``agent_end``, then ``settled``.
- **Hooks.** ``on(hook_type, handler)`` registers handlers that may change what happens
  (:mod:`~pi_notebook.harness.hooks`).
- **Automatic compaction** and **thinking levels** follow pi-coding-agent 1.6
  (:mod:`~pi_notebook.harness.compaction_runs`, :mod:`~pi_notebook.harness.configuration`).

Failures of the run itself (a provider error, a stream function that breaks) end it with an
error reply, which ``prompt`` returns; failures of the harness raise :class:`AgentHarnessError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, overload

from ..agent.call_stops import ToolCallStops
from ..agent.tools import AgentTool
from ..agent.types import AgentMessage, QueueMode, StreamFn, ToolExecutionMode
from ..ai.abort import AbortController, AbortSignal
from ..ai.types import AssistantMessage, ImageContent, Model, ThinkingLevel, UserMessage
from .budget import BudgetCaps, BudgetMeter, BudgetSettings
from .compaction import CompactionResult, CompactionSettings
from .compaction_runs import CompactionRunner
from .configuration import (
    ApiKeySource,
    HarnessConfiguration,
    HarnessParts,
    SystemPromptContext,
    SystemPromptSource,
)
from .event_bus import EventBus, HarnessListener
from .harness_events import HarnessEvent
from .hook_registry import HookRegistry
from .hooks import (
    AgentHarnessError,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult,
    BeforeProviderRequestEvent,
    BeforeProviderRequestResult,
    ContextEvent,
    ContextResult,
    FinishTurnEvent,
    FinishTurnResult,
    HarnessStreamOptions,
    HookHandler,
    HookType,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
)
from .messages import HarnessMessage
from .navigation import NavigateTreeResult, TreeMove, navigate
from .operations import HarnessPhase, Operations
from .prompt_run import PromptRun, last_assistant
from .queues import AbortResult, MessageQueues, check_queue_mode, user_message
from .resources import Resources, format_prompt_template_invocation, format_skill_invocation
from .session import Session
from .session_writes import SessionWriter

__all__ = [
    "AbortResult",
    "AgentHarness",
    "HarnessListener",
    "HarnessPhase",
    "NavigateTreeResult",
    "SystemPromptContext",
    "SystemPromptSource",
]


class AgentHarness:
    """An agent whose conversation lives in a :class:`~pi_notebook.harness.Session`.

    ``tools`` are all tools the harness knows; ``active_tool_names`` (default: all) those the
    model is offered. ``system_prompt`` is a string or a callback given a
    :class:`SystemPromptContext` (called for every turn snapshot); default "You are a helpful
    assistant.". ``get_api_key(provider)`` supplies API keys per request (they are never
    stored); without it providers read their environment variables. ``stream_fn`` replaces the
    provider call (``pi_notebook.ai.stream_simple`` by default) for runs and summaries alike.
    ``stream_options`` are the options of every provider request. ``compaction`` configures
    automatic compaction (``enabled=False`` turns it off).

    The harness does not read the model or thinking level back from the session: pass
    ``session.build_context()``'s values when reopening one.

    Its parts: :class:`~.configuration.HarnessConfiguration` (the settings and turn
    snapshots), :class:`~.prompt_run.PromptRun` (a prompt's run through the loop, with
    :class:`~.provider_requests.ProviderRequests` as its stream function),
    :class:`~.compaction_runs.CompactionRunner`, :func:`~.navigation.navigate`,
    :class:`~.queues.MessageQueues`, :class:`~.session_writes.SessionWriter` and
    :class:`~.hook_registry.HookRegistry`.
    """

    def __init__(
        self,
        session: Session,
        model: Model,
        tools: Iterable[AgentTool] = (),
        system_prompt: SystemPromptSource | None = None,
        thinking_level: ThinkingLevel = "off",
        active_tool_names: Iterable[str] | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        compaction: CompactionSettings = CompactionSettings(),  # noqa: B008 (immutable)
        get_api_key: ApiKeySource | None = None,
        stream_fn: StreamFn | None = None,
        resources: Resources | None = None,
        *,
        stream_options: HarnessStreamOptions | None = None,
        tool_execution: ToolExecutionMode = "parallel",
    ) -> None:
        if not isinstance(session, Session):
            raise AgentHarnessError("invalid_argument", "session must be a Session")
        self._session = session
        self._events = EventBus(lambda: self._operations.signal)
        self._writer = SessionWriter(session, self._events, lambda: self.phase == "idle")
        self._operations = Operations(self._writer, self._events)
        self._config = HarnessConfiguration(
            self._writer,
            self._events,
            model,
            tools,
            active_tool_names,
            system_prompt,
            thinking_level,
            compaction,
            get_api_key,
            stream_fn,
            resources,
            stream_options,
            tool_execution,
        )
        self._queues = MessageQueues(steering_mode, follow_up_mode, self._emit)
        self._hooks = HookRegistry()
        self._parts = HarnessParts(self._config, self._writer, self._hooks, self._emit)
        self._compactions = CompactionRunner(
            self._parts,
            self._operations.enter_compaction,
            lambda: bool(self._queues.steer or self._queues.follow_up),
        )
        self._tool_stops = ToolCallStops()
        self._run: PromptRun | None = None
        self._last_run_messages: list[AgentMessage] = []

    # --- state -----------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @property
    def phase(self) -> HarnessPhase:
        """``idle``, or what is running: ``turn``, ``compaction`` or ``branch_summary``."""
        return self._operations.phase

    @property
    def model(self) -> Model:
        return self._config.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        """The level in effect: the one asked for, clamped to what the model supports."""
        return self._config.thinking_level

    @property
    def tools(self) -> list[AgentTool]:
        """Every tool the harness knows (see ``active_tools``)."""
        return list(self._config.tools.values())

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._config.active_tool_names)

    @property
    def active_tools(self) -> list[AgentTool]:
        """The tools the model is offered."""
        return self._config.active_tools

    @property
    def resources(self) -> Resources:
        return self._config.resources

    @property
    def system_prompt(self) -> SystemPromptSource | None:
        """The configured system prompt (``None``: the default); takes effect at the next turn."""
        return self._config.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: SystemPromptSource | None) -> None:
        self._config.system_prompt = value

    @property
    def budget(self) -> BudgetSettings:
        """The session's caps and the default caps of every run (stored in the session)."""
        return self._config.budget

    def set_budget(self, settings: BudgetSettings) -> None:
        """Replace the caps; recorded in the session (at the next save point when busy) and in
        effect from the next request on. ``BudgetSettings()`` clears them all."""
        self._config.set_budget(settings)
        meter = self.budget_meter
        if meter is not None:
            meter.session_caps = settings.session

    @property
    def budget_meter(self) -> BudgetMeter | None:
        """The running prompt's caps and what it spent (``None`` while idle)."""
        return None if self._run is None else self._run.meter

    @property
    def stream_options(self) -> HarnessStreamOptions:
        return self._config.stream_options

    @stream_options.setter
    def stream_options(self, options: HarnessStreamOptions) -> None:
        self._config.stream_options = options

    @property
    def stream_fn(self) -> StreamFn | None:
        """What makes the provider requests of runs and summaries (``None``: the provider
        registered for the model's API); a change applies from the next request on."""
        return self._config.stream_fn

    @stream_fn.setter
    def stream_fn(self, stream_fn: StreamFn | None) -> None:
        if stream_fn is not None and not callable(stream_fn):
            raise AgentHarnessError("invalid_argument", "stream_fn must be callable")
        self._config.stream_fn = stream_fn

    @property
    def compaction_settings(self) -> CompactionSettings:
        return self._config.compaction

    @compaction_settings.setter
    def compaction_settings(self, settings: CompactionSettings) -> None:
        self._config.compaction = settings

    @property
    def steering_mode(self) -> QueueMode:
        return self._queues.steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._queues.steering_mode = check_queue_mode(mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._queues.follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._queues.follow_up_mode = check_queue_mode(mode)

    @property
    def last_run_messages(self) -> list[AgentMessage]:
        """Every message the latest prompt added (the prompt, replies, tool results, injected
        messages; a retried run's messages included)."""
        return list(self._last_run_messages)

    @property
    def signal(self) -> AbortSignal | None:
        """The running operation's abort signal (``None`` while idle)."""
        return self._operations.signal

    # --- listeners and hooks ---------------------------------------------------------------------

    def subscribe(self, listener: HarnessListener) -> Callable[[], None]:
        """Call ``listener(event)`` — or ``listener(event, signal)`` if it takes two arguments —
        for every agent and harness event, in order (async listeners are awaited). A listener
        that raises is logged (its traceback once) and the operation goes on. Returns a
        function that unsubscribes."""
        if not callable(listener):
            raise AgentHarnessError("invalid_argument", "listener must be callable")
        return self._events.subscribe(listener)

    @overload
    def on(
        self,
        hook_type: Literal["before_agent_start"],
        handler: HookHandler[BeforeAgentStartEvent, BeforeAgentStartResult],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self, hook_type: Literal["context"], handler: HookHandler[ContextEvent, ContextResult]
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self, hook_type: Literal["tool_call"], handler: HookHandler[ToolCallEvent, ToolCallResult]
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["tool_result"],
        handler: HookHandler[ToolResultEvent, ToolResultPatch],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["before_provider_request"],
        handler: HookHandler[BeforeProviderRequestEvent, BeforeProviderRequestResult],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["before_provider_payload"],
        handler: HookHandler[BeforeProviderPayloadEvent, BeforeProviderPayloadResult],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["session_before_compact"],
        handler: HookHandler[SessionBeforeCompactEvent, SessionBeforeCompactResult],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["finish_turn"],
        handler: HookHandler[FinishTurnEvent, FinishTurnResult],
    ) -> Callable[[], None]: ...
    @overload
    def on(
        self,
        hook_type: Literal["session_before_tree"],
        handler: HookHandler[SessionBeforeTreeEvent, SessionBeforeTreeResult],
    ) -> Callable[[], None]: ...
    def on(self, hook_type: HookType, handler: Callable[[Any], Any]) -> Callable[[], None]:
        """Register a hook handler (see :mod:`~pi_notebook.harness.hooks`); returns a function
        that removes it."""
        return self._hooks.add(hook_type, handler)

    async def _emit(self, event: HarnessEvent) -> None:
        await self._events.send(event, self._operations.signal)

    # --- operations ------------------------------------------------------------------------------

    async def wait_for_idle(self) -> None:
        """Return once no operation runs and every event was delivered."""
        await self._operations.wait_for_idle()

    def _operation_scope(self, phase: HarnessPhase) -> AbstractAsyncContextManager[AbortController]:
        return self._operations.scope(phase, self._end_run)

    def _end_run(self) -> None:
        self._run = None

    async def prompt(
        self,
        text: str,
        images: Sequence[ImageContent] | None = None,
        *,
        budget: BudgetCaps | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> AssistantMessage:
        """Send ``text`` (with optional images) and run until the agent is done; returns the
        last assistant reply (an ``error``/``aborted`` reply if the run failed or was aborted,
        or stopped by a cap).

        ``budget`` caps this run, over the run defaults of ``self.budget`` cap by cap. Messages
        queued with ``next_turn`` go first. ``on_start()`` is called once the harness has
        taken the prompt (it is busy with it, nothing is sent yet): messages it steers or
        queues as follow-ups go with this run. Raises ``AgentHarnessError("busy")`` if an
        operation is running.
        """
        message = user_message(text, images)
        if budget is not None and not isinstance(budget, BudgetCaps):
            raise AgentHarnessError("invalid_argument", "budget must be BudgetCaps")
        async with self._operation_scope("turn") as controller:
            if on_start is not None:
                on_start()
            return await self._user_run(message, list(images or ()), controller, budget)

    async def skill(
        self, name: str, additional_instructions: str | None = None
    ) -> AssistantMessage:
        """Run a skill explicitly: its content wrapped in ``<skill …>`` (plus instructions)."""

        def text(resources: Resources) -> str:
            skill = resources.get_skill(name)
            if skill is None:
                raise AgentHarnessError("invalid_argument", f"Unknown skill: {name}")
            return format_skill_invocation(skill, additional_instructions)

        return await self._run_resource(text)

    async def prompt_from_template(
        self, name: str, args: Sequence[str] | str = ()
    ) -> AssistantMessage:
        """Run a prompt template with ``args`` (a list, or a string split as pi splits it)."""

        def text(resources: Resources) -> str:
            template = resources.get_prompt_template(name)
            if template is None:
                raise AgentHarnessError("invalid_argument", f"Unknown prompt template: {name}")
            return format_prompt_template_invocation(template, args)

        return await self._run_resource(text)

    async def _run_resource(self, text: Callable[[Resources], str]) -> AssistantMessage:
        async with self._operation_scope("turn") as controller:
            message = user_message(text(self._config.resources), None)
            return await self._user_run(message, [], controller)

    async def _user_run(
        self,
        message: UserMessage,
        images: list[ImageContent],
        controller: AbortController,
        budget: BudgetCaps | None = None,
    ) -> AssistantMessage:
        run = self._run = PromptRun(
            self._parts,
            self._queues,
            self._compactions,
            controller,
            self._tool_stops,
            self._config.meter_for_run(budget),
        )
        self._last_run_messages = run.messages
        return await run.start(message, images)

    def steer(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message for right after the current turn (only while busy)."""
        if self.phase == "idle":
            raise AgentHarnessError("invalid_state", "Cannot steer while idle")
        self._queues.steer.append(user_message(text, images))
        self._events.post(self._queues.update())

    def follow_up(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message for when the run would otherwise end (only while busy)."""
        if self.phase == "idle":
            raise AgentHarnessError("invalid_state", "Cannot follow up while idle")
        self._queues.follow_up.append(user_message(text, images))
        self._events.post(self._queues.update())

    def next_turn(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message sent before the prompt of the next ``prompt``/``skill``/template
        run (any time; kept across ``abort``)."""
        self._queues.next_turn.append(user_message(text, images))
        self._events.post(self._queues.update())

    def append_message(self, message: HarnessMessage) -> None:
        """Add a message to the session (e.g. a ``CustomMessage`` or ``BashExecutionMessage``):
        now when idle, at the next save point when busy; later turns see it in their context."""
        session = self._session
        self._writer.write_or_defer(lambda: session.append_message(message))

    def abort(self) -> AbortResult:
        """Abort what runs (a run, a compaction or a branch summary) and drop the queued
        steering and follow-up messages. Returns at once: ``await wait_for_idle()`` to wait
        for the operation to end; an ``abort`` event follows it."""
        queues = self._queues
        cleared = AbortResult(list(queues.steer), list(queues.follow_up))
        queues.steer.clear()
        queues.follow_up.clear()
        self._events.post(queues.update())
        self._operations.abort(cleared)
        return cleared

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one running tool call (a tool card's stop); the run goes on and the model sees
        an error result for that call. ``False`` when the call is not running."""
        return self._operations.controller is not None and self._tool_stops.stop(tool_call_id)

    @property
    def defer_threshold_compaction(self) -> bool:
        """Leave the compaction a finished run's size calls for to :meth:`settle` (or to the
        check before the next prompt), so the prompt returns its reply without waiting for a
        summary. An overflow is still compacted and retried within the run. Default False
        (pi's order)."""
        return self._compactions.defer_threshold

    @defer_threshold_compaction.setter
    def defer_threshold_compaction(self, value: bool) -> None:
        self._compactions.defer_threshold = value

    async def settle(self) -> None:
        """Compact now if the branch's last reply calls for it: the check the next prompt
        makes first, for a caller that deferred a run's compaction
        (:attr:`defer_threshold_compaction`). Raises ``AgentHarnessError`` ``busy``."""
        async with self._operation_scope("compaction") as controller:
            last = last_assistant(self._session.build_context().messages)
            if last is not None:
                await self._compactions.check_and_compact(
                    last, controller.signal, skip_aborted=False
                )

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Compact the current branch now (with ``custom_instructions`` as extra focus).

        Raises ``AgentHarnessError``: ``busy``; ``auth``; ``compaction`` ("Nothing to compact",
        "Compaction cancelled" by a hook, or the summary failed or was aborted).
        """
        async with self._operation_scope("compaction") as controller:
            return await self._compactions.compact_now(
                "manual", custom_instructions, controller.signal
            )

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        label: str | None = None,
        *,
        replace_instructions: bool = False,
    ) -> NavigateTreeResult:
        """Move the session leaf to ``target_id``; the next prompt continues from there.

        A user message (or custom message) as target moves the leaf to its parent and returns
        its text as ``editor_text``, to be edited and sent again. With ``summarize`` the branch
        left behind is summarised into a ``branch_summary`` entry at the new position
        (``custom_instructions`` add a focus, or replace pi's instructions with
        ``replace_instructions``). ``label`` labels the summary entry (or, without one, the
        target). Navigating to the current leaf does nothing.
        """
        move = TreeMove(target_id, summarize, custom_instructions, replace_instructions, label)
        async with self._operation_scope("branch_summary") as controller:
            return await navigate(move, self._parts, controller.signal)

    # --- configuration ---------------------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        """Use ``model`` from the next turn on (recorded as a ``model_change`` entry). The level
        asked for with ``set_thinking_level`` is clamped to the new model, as pi 1.6 does: a
        change of the level in effect is recorded after the model's."""
        self._config.set_model(model)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Use ``level`` from the next turn on, clamped to what the model supports (pi 1.6):
        the level in effect (``thinking_level``) is recorded as a ``thinking_level_change``
        only when it changes. The level asked for is kept for later models (``set_model``)."""
        self._config.set_thinking_level(level)

    def set_tools(
        self, tools: Iterable[AgentTool], active_tool_names: Iterable[str] | None = None
    ) -> None:
        """Replace the tool set. Without ``active_tool_names`` the tools active before stay
        active (if still there) and new tools become active. Recorded as an
        ``active_tools_change``."""
        self._config.set_tools(tools, active_tool_names)

    def set_active_tools(self, names: Iterable[str]) -> None:
        """Offer the model only the tools ``names`` (from the next turn on)."""
        self._config.set_active_tools(names)

    def set_resources(self, resources: Resources) -> None:
        """Replace the skills and prompt templates (from the next run on)."""
        self._config.set_resources(resources)

    def __repr__(self) -> str:
        config = self._config
        return (
            f"<AgentHarness {config.model.ref} phase={self.phase} "
            f"tools={len(config.active_tool_names)}/{len(config.tools)} "
            f"session={self._session.id}>"
        )
