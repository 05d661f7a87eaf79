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
- **Automatic compaction** (pi-coding-agent 1.6's rules,
  :mod:`~pi_notebook.harness.auto_compaction`): before the next request of a running turn when
  the projected context is over ``context_window - reserve_tokens``, after a run, and before a
  prompt; a request that overflowed the context (or was cut short by it) is hidden by a context
  edit, compacted and sent again once.
- **Thinking levels** are clamped to what the model supports (pi 1.6): the level asked for is
  kept, and the one in effect (``thinking_level``, on every reply and in the session) is its
  nearest supported level, recorded only when it changes.

Failures of the run itself (a provider error, a stream function that breaks) end it with an
error reply, which ``prompt`` returns; failures of the harness raise :class:`AgentHarnessError`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeAlias, TypeVar, cast, get_args, overload

from ..agent.call_stops import ToolCallStops
from ..agent.events import (
    AgentEndEvent,
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    TurnEndEvent,
)
from ..agent.loop import default_stream_fn, run_agent_loop, run_agent_loop_continue
from ..agent.tools import AgentTool
from ..agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    QueueMode,
    StreamFn,
    ToolExecutionMode,
    TurnEndContext,
    TurnUpdate,
)
from ..ai.abort import AbortController, AbortSignal
from ..ai.event_stream import AssistantMessageEventStream
from ..ai.events import ErrorEvent
from ..ai.models import clamp_thinking_level
from ..ai.options import ResponseInfo, StreamOptions, maybe_await
from ..ai.producer import describe_error
from ..ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .auto_compaction import CompactionCheck, check_compaction, entry_index_of, exceeds_threshold
from .branch_summary import BranchSummaryError, collect_entries_for_branch_summary
from .branch_summary import generate_branch_summary as _generate_branch_summary
from .budget import (
    BUDGET_CUSTOM_TYPE,
    BUDGET_STOP_TYPE,
    BudgetCaps,
    BudgetMeter,
    BudgetSettings,
    latest_budget_settings,
    session_spend,
)
from .compaction import (
    CompactionError,
    CompactionPreparation,
    CompactionResult,
    CompactionSettings,
    prepare_compaction,
)
from .compaction import compact as _compact
from .entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    LeafEntry,
    MessageEntry,
    ThinkingLevelChangeEntry,
)
from .event_bus import EventBus, HarnessListener
from .harness_events import (
    AbortEvent,
    AfterProviderResponseEvent,
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    HarnessEvent,
    ModelUpdateEvent,
    QueueUpdateEvent,
    ResourcesUpdateEvent,
    SavePointEvent,
    SessionCompactEvent,
    SessionTreeEvent,
    SessionWriteErrorEvent,
    SettledEvent,
    ThinkingLevelUpdateEvent,
    ToolsUpdateEvent,
)
from .hooks import (
    HOOK_TYPES,
    AgentHarnessError,
    AgentHarnessErrorCode,
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
    TreePreparation,
    coerce_result,
)
from .messages import HarnessMessage, convert_to_llm
from .prompts import DEFAULT_SYSTEM_PROMPT
from .resources import Resources, format_prompt_template_invocation, format_skill_invocation
from .session import Session, SessionWriteError
from .tokens import estimate_tokens

__all__ = [
    "AbortResult",
    "AgentHarness",
    "HarnessListener",
    "HarnessPhase",
    "NavigateTreeResult",
    "SystemPromptContext",
    "SystemPromptSource",
]

_log = logging.getLogger(__name__)

HarnessPhase: TypeAlias = Literal["idle", "turn", "compaction", "branch_summary"]

_THINKING_LEVELS: frozenset[str] = frozenset(get_args(ThinkingLevel))
_CANCELLED = "Compaction cancelled"
_AUTO_FAILED = {
    "threshold": "Auto-compaction failed",
    "overflow": "Context overflow recovery failed",
}
"""How pi 1.6 words a failed automatic compaction on ``compaction_end``."""
_QUEUE_MODES = ("all", "one-at-a-time")
_E = TypeVar("_E")
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class SystemPromptContext:
    """What a system-prompt callback is given, once per turn snapshot."""

    session: Session
    model: Model
    thinking_level: ThinkingLevel
    active_tools: list[AgentTool]
    resources: Resources


SystemPromptSource: TypeAlias = str | Callable[[SystemPromptContext], str | Awaitable[str]]


@dataclass(frozen=True, slots=True)
class AbortResult:
    """The queued messages ``abort()`` dropped."""

    cleared_steer: list[UserMessage]
    cleared_follow_up: list[UserMessage]


@dataclass(frozen=True, slots=True)
class NavigateTreeResult:
    """The outcome of ``navigate_tree``: ``cancelled`` (by a hook, or the summary was aborted),
    ``editor_text`` (the text of the user or custom message navigated to, for re-editing) and
    the ``branch_summary`` entry written, if any."""

    cancelled: bool = False
    editor_text: str | None = None
    summary_entry: BranchSummaryEntry | None = None


@dataclass(frozen=True, slots=True)
class _TurnSnapshot:
    messages: list[AgentMessage]
    resources: Resources
    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel
    active_tools: list[AgentTool]
    stream_options: HarnessStreamOptions
    session_id: str


def _normalize(exc: BaseException, fallback: AgentHarnessErrorCode) -> AgentHarnessError:
    """``exc`` as an AgentHarnessError (subsystem errors keep their meaning)."""
    if isinstance(exc, AgentHarnessError):
        return exc
    if isinstance(exc, CompactionError):
        error = AgentHarnessError("compaction", str(exc))
    elif isinstance(exc, BranchSummaryError):
        error = AgentHarnessError("branch_summary", str(exc))
    else:
        error = AgentHarnessError(fallback, describe_error(exc))
    error.__cause__ = exc
    return error


def _user_message(text: str, images: Sequence[ImageContent] | None) -> UserMessage:
    if not isinstance(text, str):
        raise AgentHarnessError(
            "invalid_argument", f"text must be a str, not {type(text).__name__}"
        )
    content: list[TextContent | ImageContent] = [TextContent(text=text)]
    for image in images or ():
        if not isinstance(image, ImageContent):
            raise AgentHarnessError("invalid_argument", "images must be ImageContent blocks")
        content.append(image)
    return UserMessage(content=content)


def _text_of(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _duplicates(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    duplicates: list[str] = []
    for name in names:
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    return duplicates


def _check_queue_mode(mode: str) -> QueueMode:
    if mode not in _QUEUE_MODES:
        raise AgentHarnessError(
            "invalid_argument", f"queue mode must be 'all' or 'one-at-a-time', not {mode!r}"
        )
    return mode  # type: ignore[return-value]


def _check_thinking_level(level: str) -> ThinkingLevel:
    if level not in _THINKING_LEVELS:
        raise AgentHarnessError(
            "invalid_argument",
            f"thinking level must be one of {', '.join(sorted(_THINKING_LEVELS))}, not {level!r}",
        )
    return level  # type: ignore[return-value]


def _last_assistant(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


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
        get_api_key: Callable[[str], str | Awaitable[str | None] | None] | None = None,
        stream_fn: StreamFn | None = None,
        resources: Resources | None = None,
        *,
        stream_options: HarnessStreamOptions | None = None,
        tool_execution: ToolExecutionMode = "parallel",
    ) -> None:
        if not isinstance(session, Session):
            raise AgentHarnessError("invalid_argument", "session must be a Session")
        if not isinstance(model, Model):
            raise AgentHarnessError("invalid_argument", "model must be a pi_notebook.ai.Model")
        if not isinstance(compaction, CompactionSettings):
            raise AgentHarnessError("invalid_argument", "compaction must be CompactionSettings")
        if tool_execution not in ("parallel", "sequential"):
            raise AgentHarnessError(
                "invalid_argument",
                f"tool_execution must be parallel or sequential, not {tool_execution!r}",
            )
        tool_list = list(tools)
        self._tools = self._tool_map(tool_list)
        names = list(self._tools) if active_tool_names is None else list(active_tool_names)
        self._check_active(names, self._tools)
        self._session = session
        self._model = model
        self._requested_thinking_level = _check_thinking_level(thinking_level)
        self._thinking_level = clamp_thinking_level(model, self._requested_thinking_level)
        self._active_tool_names = names
        self._system_prompt = system_prompt
        self._steering_mode = _check_queue_mode(steering_mode)
        self._follow_up_mode = _check_queue_mode(follow_up_mode)
        self._compaction = compaction
        self._get_api_key = get_api_key
        self._stream_fn = stream_fn
        self._resources = resources if resources is not None else Resources()
        self._stream_options = stream_options or HarnessStreamOptions()
        self._tool_execution: ToolExecutionMode = tool_execution

        self._phase: HarnessPhase = "idle"
        self._controller: AbortController | None = None
        self._tool_stops = ToolCallStops()
        self._operation: asyncio.Future[None] | None = None
        self._turn: _TurnSnapshot | None = None
        self._steer: list[UserMessage] = []
        self._follow_up: list[UserMessage] = []
        self._next_turn: list[AgentMessage] = []
        self._pending_writes: deque[Callable[[], object]] = deque()
        self._pending_abort: AbortResult | None = None
        self._hooks: dict[str, tuple[Callable[[Any], Any], ...]] = {}
        self._events = EventBus(self._current_signal)
        self._last_run_messages: list[AgentMessage] = []
        self._overflow_recovery_attempted = False
        """An overflowed request was compacted and sent again since the last good reply."""
        self.defer_threshold_compaction = False
        """Leave the compaction a finished run's size calls for to :meth:`settle` (or to the
        check before the next prompt), so the prompt returns its reply without waiting for a
        summary. An overflow is still compacted and retried within the run."""
        self._budget: BudgetSettings | None = None
        """The caps the session stores, read on first use."""
        self._meter: BudgetMeter | None = None
        """The running prompt's caps and spending (``None`` while idle)."""

    # --- state -----------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @property
    def phase(self) -> HarnessPhase:
        """``idle``, or what is running: ``turn``, ``compaction`` or ``branch_summary``."""
        return self._phase

    @property
    def model(self) -> Model:
        return self._model

    @property
    def thinking_level(self) -> ThinkingLevel:
        """The level in effect: the one asked for, clamped to what the model supports."""
        return self._thinking_level

    @property
    def tools(self) -> list[AgentTool]:
        """Every tool the harness knows (see ``active_tools``)."""
        return list(self._tools.values())

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._active_tool_names)

    @property
    def active_tools(self) -> list[AgentTool]:
        """The tools the model is offered."""
        return [self._tools[name] for name in self._active_tool_names]

    @property
    def resources(self) -> Resources:
        return self._resources

    @property
    def system_prompt(self) -> SystemPromptSource | None:
        """The configured system prompt (``None``: the default); takes effect at the next turn."""
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: SystemPromptSource | None) -> None:
        if value is not None and not (isinstance(value, str) or callable(value)):
            raise AgentHarnessError("invalid_argument", "system_prompt must be a str or callable")
        self._system_prompt = value

    @property
    def budget(self) -> BudgetSettings:
        """The session's caps and the default caps of every run (stored in the session)."""
        if self._budget is None:
            self._budget = latest_budget_settings(self._session.entries_of("custom"))
        return self._budget

    def set_budget(self, settings: BudgetSettings) -> None:
        """Replace the caps; recorded in the session (at the next save point when busy) and in
        effect from the next request on. ``BudgetSettings()`` clears them all."""
        if not isinstance(settings, BudgetSettings):
            raise AgentHarnessError("invalid_argument", "budget must be BudgetSettings")
        data = settings.to_data()
        self._write_or_defer(lambda: self._session.append_custom(BUDGET_CUSTOM_TYPE, data))
        self._budget = settings
        if self._meter is not None:
            self._meter.session_caps = settings.session

    @property
    def budget_meter(self) -> BudgetMeter | None:
        """The running prompt's caps and what it spent (``None`` while idle)."""
        return self._meter

    @property
    def stream_options(self) -> HarnessStreamOptions:
        return self._stream_options

    @stream_options.setter
    def stream_options(self, options: HarnessStreamOptions) -> None:
        if not isinstance(options, HarnessStreamOptions):
            raise AgentHarnessError(
                "invalid_argument", "stream_options must be HarnessStreamOptions"
            )
        self._stream_options = options

    @property
    def compaction_settings(self) -> CompactionSettings:
        return self._compaction

    @compaction_settings.setter
    def compaction_settings(self, settings: CompactionSettings) -> None:
        if not isinstance(settings, CompactionSettings):
            raise AgentHarnessError("invalid_argument", "expected CompactionSettings")
        self._compaction = settings

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering_mode = _check_queue_mode(mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up_mode = _check_queue_mode(mode)

    @property
    def last_run_messages(self) -> list[AgentMessage]:
        """Every message the latest prompt added (the prompt, replies, tool results, injected
        messages; a retried run's messages included)."""
        return list(self._last_run_messages)

    @property
    def signal(self) -> AbortSignal | None:
        """The running operation's abort signal (``None`` while idle)."""
        return self._current_signal()

    def _current_signal(self) -> AbortSignal | None:
        return None if self._controller is None else self._controller.signal

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
        if hook_type not in HOOK_TYPES:
            raise AgentHarnessError(
                "invalid_argument",
                f"unknown hook {hook_type!r} (one of: {', '.join(sorted(HOOK_TYPES))})",
            )
        if not callable(handler):
            raise AgentHarnessError("invalid_argument", "handler must be callable")
        self._hooks[hook_type] = (*self._hooks.get(hook_type, ()), handler)

        def remove() -> None:
            self._hooks[hook_type] = tuple(
                h for h in self._hooks.get(hook_type, ()) if h is not handler
            )

        return remove

    async def _call_handler(
        self, hook_type: str, handler: Callable[[Any], Any], event: object
    ) -> Any:
        try:
            return await maybe_await(handler(event))
        except AgentHarnessError:
            raise
        except Exception as exc:
            raise AgentHarnessError(
                "hook", f"{hook_type} hook failed: {describe_error(exc)}"
            ) from exc

    async def _run_hook(self, hook_type: str, event: object, result_type: type[_R]) -> _R | None:
        """Every handler of ``hook_type`` in order; the last non-``None`` result wins."""
        result: object = None
        for handler in self._hooks.get(hook_type, ()):
            value = await self._call_handler(hook_type, handler, event)
            if value is not None:
                result = value
        if result is None:
            return None
        try:
            return coerce_result(result, result_type)
        except (TypeError, ValueError) as exc:
            raise AgentHarnessError("hook", f"{hook_type} hook returned {exc}") from exc

    async def _emit(self, event: HarnessEvent) -> None:
        await self._events.send(event, self._current_signal())

    def _queue_update(self) -> QueueUpdateEvent:
        return QueueUpdateEvent(
            steer=list(self._steer),
            follow_up=list(self._follow_up),
            next_turn=list(self._next_turn),
        )

    # --- operations ------------------------------------------------------------------------------

    @asynccontextmanager
    async def _operation_scope(self, phase: HarnessPhase) -> AsyncIterator[AbortController]:
        if self._phase != "idle":
            raise AgentHarnessError("busy", f"AgentHarness is busy ({self._phase})")
        self._phase = phase
        controller = self._controller = AbortController()
        done = self._operation = asyncio.get_running_loop().create_future()
        try:
            yield controller
        except asyncio.CancelledError:
            controller.abort()  # the caller gave up: stop the provider and the tools too
            raise
        finally:
            try:
                await self._flush_pending()
            except AgentHarnessError:
                _log.exception("pending session writes could not be flushed")
            self._phase = "idle"
            self._controller = None
            self._operation = None
            self._turn = None
            aborted, self._pending_abort = self._pending_abort, None
            if aborted is not None:
                self._events.post(
                    AbortEvent(
                        cleared_steer=aborted.cleared_steer,
                        cleared_follow_up=aborted.cleared_follow_up,
                    )
                )
            done.set_result(None)

    async def wait_for_idle(self) -> None:
        """Return once no operation runs and every event was delivered."""
        while self._operation is not None:
            await asyncio.shield(self._operation)
        await self._events.flush()

    async def prompt(
        self,
        text: str,
        images: Sequence[ImageContent] | None = None,
        *,
        budget: BudgetCaps | None = None,
    ) -> AssistantMessage:
        """Send ``text`` (with optional images) and run until the agent is done; returns the
        last assistant reply (an ``error``/``aborted`` reply if the run failed or was aborted,
        or stopped by a cap).

        ``budget`` caps this run, over the run defaults of ``self.budget`` cap by cap. Messages
        queued with ``next_turn`` go first. Raises ``AgentHarnessError("busy")`` if an
        operation is running.
        """
        message = _user_message(text, images)
        if budget is not None and not isinstance(budget, BudgetCaps):
            raise AgentHarnessError("invalid_argument", "budget must be BudgetCaps")
        async with self._operation_scope("turn") as controller:
            return await self._user_run(message, list(images or ()), controller, budget)

    async def skill(
        self, name: str, additional_instructions: str | None = None
    ) -> AssistantMessage:
        """Run a skill explicitly: its content wrapped in ``<skill …>`` (plus instructions)."""
        async with self._operation_scope("turn") as controller:
            skill = self._resources.get_skill(name)
            if skill is None:
                raise AgentHarnessError("invalid_argument", f"Unknown skill: {name}")
            text = format_skill_invocation(skill, additional_instructions)
            return await self._user_run(_user_message(text, None), [], controller)

    async def prompt_from_template(
        self, name: str, args: Sequence[str] | str = ()
    ) -> AssistantMessage:
        """Run a prompt template with ``args`` (a list, or a string split as pi splits it)."""
        async with self._operation_scope("turn") as controller:
            template = self._resources.get_prompt_template(name)
            if template is None:
                raise AgentHarnessError("invalid_argument", f"Unknown prompt template: {name}")
            text = format_prompt_template_invocation(template, args)
            return await self._user_run(_user_message(text, None), [], controller)

    def steer(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message for right after the current turn (only while busy)."""
        if self._phase == "idle":
            raise AgentHarnessError("invalid_state", "Cannot steer while idle")
        self._steer.append(_user_message(text, images))
        self._events.post(self._queue_update())

    def follow_up(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message for when the run would otherwise end (only while busy)."""
        if self._phase == "idle":
            raise AgentHarnessError("invalid_state", "Cannot follow up while idle")
        self._follow_up.append(_user_message(text, images))
        self._events.post(self._queue_update())

    def next_turn(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a user message sent before the prompt of the next ``prompt``/``skill``/template
        run (any time; kept across ``abort``)."""
        self._next_turn.append(_user_message(text, images))
        self._events.post(self._queue_update())

    def append_message(self, message: HarnessMessage) -> None:
        """Add a message to the session (e.g. a ``CustomMessage`` or ``BashExecutionMessage``):
        now when idle, at the next save point when busy; later turns see it in their context."""
        self._write_or_defer(lambda: self._session.append_message(message))

    def abort(self) -> AbortResult:
        """Abort what runs (a run, a compaction or a branch summary) and drop the queued
        steering and follow-up messages. Returns at once: ``await wait_for_idle()`` to wait
        for the operation to end; an ``abort`` event follows it."""
        cleared = AbortResult(list(self._steer), list(self._follow_up))
        self._steer.clear()
        self._follow_up.clear()
        self._events.post(self._queue_update())
        if self._controller is not None:
            self._pending_abort = cleared
            self._controller.abort()
        else:
            self._events.post(
                AbortEvent(
                    cleared_steer=cleared.cleared_steer, cleared_follow_up=cleared.cleared_follow_up
                )
            )
        return cleared

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one running tool call (a tool card's stop); the run goes on and the model sees
        an error result for that call. ``False`` when the call is not running."""
        return self._controller is not None and self._tool_stops.stop(tool_call_id)

    # --- a run -----------------------------------------------------------------------------------

    async def _user_run(
        self,
        message: UserMessage,
        images: list[ImageContent],
        controller: AbortController,
        budget: BudgetCaps | None = None,
    ) -> AssistantMessage:
        self._meter = self._new_meter(budget)
        try:
            return await self._user_run_metered(message, images, controller)
        finally:
            self._meter = None

    def _new_meter(self, budget: BudgetCaps | None) -> BudgetMeter | None:
        settings = self.budget
        run_caps = settings.run.overridden_by(budget)
        if run_caps.empty and settings.session.empty:
            return None
        totals = self._session.usage_totals()
        spent = session_spend(self._session.entries_of("message"), totals.cost, totals.total_tokens)
        return BudgetMeter(run_caps, settings.session, spent)

    async def _user_run_metered(
        self, message: UserMessage, images: list[ImageContent], controller: AbortController
    ) -> AssistantMessage:
        self._last_run_messages = []
        last = _last_assistant(self._session.build_context().messages)
        if last is not None:  # pi 1.6 checks before a prompt too (an aborted reply included)
            await self._check_and_compact(last, controller.signal, skip_aborted=False)
        self._record_thinking_level()
        snapshot = await self._snapshot()
        prompts: list[AgentMessage] = [message]
        if self._next_turn:
            queued, self._next_turn = self._next_turn, []
            try:
                await self._emit(self._queue_update())
            except AgentHarnessError:
                self._next_turn = queued + self._next_turn
                raise
            prompts = [*queued, message]
        event = BeforeAgentStartEvent(
            prompt=_text_of(message.content),
            images=images,
            system_prompt=snapshot.system_prompt,
            resources=snapshot.resources,
        )
        before = await self._run_hook("before_agent_start", event, BeforeAgentStartResult)
        system_prompt = snapshot.system_prompt
        if before is not None:
            prompts.extend(before.messages or ())
            system_prompt = before.system_prompt or system_prompt
        messages = await self._run(snapshot, prompts, system_prompt, controller)
        messages = await self._settle_context(messages, controller)
        await self._emit(SettledEvent(next_turn_count=len(self._next_turn)))
        reply = _last_assistant(messages)
        if reply is None:
            raise AgentHarnessError("invalid_state", "The run ended without an assistant message")
        return reply

    def _record_thinking_level(self) -> None:
        """Record the live thinking level on the branch when the branch's last
        ``thinking_level_change`` says another one, as pi 1.6 does when a run starts: after
        navigating the tree that entry may be another branch's, and a reopened session would
        resume at the wrong level. A branch that never recorded one gets none. The recorded
        level is compared clamped to the model (pi 1.6): ``xhigh`` written where the model
        runs it as ``high`` is not recorded over."""
        recorded = next(
            (
                entry.thinking_level
                for entry in reversed(self._session.get_branch())
                if isinstance(entry, ThinkingLevelChangeEntry)
            ),
            None,
        )
        if recorded is None or recorded not in _THINKING_LEVELS:
            return
        clamped = clamp_thinking_level(self._model, recorded)  # type: ignore[arg-type]
        if clamped != self._thinking_level:
            level = self._thinking_level
            self._persist(lambda: self._session.append_thinking_level_change(level))

    async def _snapshot(self) -> _TurnSnapshot:
        context = self._session.build_context()
        active = self.active_tools
        source = self._system_prompt
        # A pi 1.6 transcript carries its own system prompt (system messages, replayed by the
        # provider layer): the default would only be folded in ahead of it, twice a prompt.
        default = "" if context.system_prompt is not None else DEFAULT_SYSTEM_PROMPT
        system_prompt = default
        if isinstance(source, str):
            system_prompt = source
        elif source is not None:
            prompt_context = SystemPromptContext(
                self._session, self._model, self._thinking_level, active, self._resources
            )
            try:
                system_prompt = await maybe_await(source(prompt_context))
            except Exception as exc:
                raise AgentHarnessError(
                    "hook", f"system prompt callback failed: {describe_error(exc)}"
                ) from exc
            if not isinstance(system_prompt, str):
                raise AgentHarnessError("hook", "the system prompt callback must return a str")
        return _TurnSnapshot(
            messages=list(context.messages),
            resources=self._resources,
            system_prompt=system_prompt,
            model=self._model,
            thinking_level=self._thinking_level,
            active_tools=active,
            stream_options=self._stream_options,
            session_id=self._session.id,
        )

    def _loop_config(self, snapshot: _TurnSnapshot) -> AgentLoopConfig:
        level = snapshot.thinking_level
        return AgentLoopConfig(
            model=snapshot.model,
            convert_to_llm=convert_to_llm,
            transform_context=self._transform_context,
            get_api_key=self._loop_api_key if self._get_api_key is not None else None,
            before_tool_call=self._before_tool_call,
            after_tool_call=self._after_tool_call,
            prepare_next_turn=self._prepare_next_turn,
            finish_turn=self._finish_turn,
            get_steering_messages=self._drain_steer,
            get_follow_up_messages=self._drain_follow_up,
            tool_execution=self._tool_execution,
            tool_call_stops=self._tool_stops,
            reasoning=None if level == "off" else level,
            session_id=snapshot.session_id,
        )

    async def _run(
        self,
        snapshot: _TurnSnapshot,
        prompts: list[AgentMessage] | None,
        system_prompt: str,
        controller: AbortController,
    ) -> list[AgentMessage]:
        """One loop run (``prompts`` ``None``: continue the context); failures are reported as
        a failure reply, as pi's harness does."""
        self._turn = snapshot
        context = AgentContext(system_prompt, list(snapshot.messages), list(snapshot.active_tools))
        config = self._loop_config(snapshot)
        signal = controller.signal
        try:
            if prompts is None:
                added = await run_agent_loop_continue(
                    context, config, self._handle_agent_event, signal, self._provider_stream
                )
            else:
                added = await run_agent_loop(
                    prompts,
                    context,
                    config,
                    self._handle_agent_event,
                    signal,
                    self._provider_stream,
                )
        except Exception as exc:
            added = await self._report_failure(exc, signal.aborted)
        finally:
            await self._flush_pending()
        self._last_run_messages.extend(added)
        return added

    async def _report_failure(self, exc: Exception, aborted: bool) -> list[AgentMessage]:
        _log.warning("harness run failed: %s", describe_error(exc), exc_info=exc)
        model = self._turn.model if self._turn is not None else self._model
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
            error = _normalize(exc, "unknown")
            error.add_note(f"Reporting the failure failed too: {describe_error(second)}")
            raise error from (second if error is exc else exc)
        return [failure]

    async def _handle_agent_event(self, event: AgentEvent) -> None:
        kind = event.type
        if kind == "message_end":
            assert isinstance(event, MessageEndEvent)
            message = event.message
            self._persist(lambda: self._session.append_message(message))  # type: ignore[arg-type]
            meter = self._meter
            if meter is not None and isinstance(message, AssistantMessage):
                if meter.stopped is None or message.error_message != meter.stopped:
                    meter.record(message.usage)  # the stopped request was never sent
                await self._emit(meter.event())
            if isinstance(message, AssistantMessage) and message.stop_reason not in (
                "error",
                "length",
            ):
                self._overflow_recovery_attempted = False  # a good reply: recovery may run again
            await self._emit(event)
        elif kind == "message_start" and isinstance(event.message, UserMessage):  # type: ignore[union-attr]
            self._overflow_recovery_attempted = False  # a new input (pi 1.6)
            await self._emit(event)
        elif kind == "turn_end":
            failure: AgentHarnessError | None = None
            try:
                await self._emit(event)
            except AgentHarnessError as exc:
                failure = exc  # write what the turn left pending before failing
            had_pending = bool(self._pending_writes)
            await self._flush_pending()
            if failure is not None:
                raise failure
            await self._emit(SavePointEvent(had_pending_mutations=had_pending))
        elif kind == "agent_end":
            await self._flush_pending()
            await self._emit(event)
        else:
            await self._emit(event)

    # --- loop hooks ------------------------------------------------------------------------------

    async def _prepare_next_turn(self, _turn: TurnEndContext) -> TurnUpdate:
        await self._flush_pending()
        snapshot = await self._snapshot()
        if self._controller is not None and exceeds_threshold(
            self._session, self._model, self._compaction, snapshot.messages
        ):
            # pi 1.6: compact before the next request of a running turn; the turn goes on
            # over the compacted context whatever the compaction did
            await self._auto_compact("threshold", self._controller.signal, will_retry=False)
            snapshot = await self._snapshot()
        self._turn = snapshot
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
        return await self._run_hook("finish_turn", event, FinishTurnResult)

    async def _drain(self, queue: list[UserMessage], mode: QueueMode) -> list[AgentMessage]:
        if not queue:
            return []
        taken = list(queue) if mode == "all" else queue[:1]
        del queue[: len(taken)]
        try:
            await self._emit(self._queue_update())
        except AgentHarnessError:
            queue[:0] = taken
            raise
        return list(taken)

    async def _drain_steer(self) -> list[AgentMessage]:
        return await self._drain(self._steer, self._steering_mode)

    async def _drain_follow_up(self) -> list[AgentMessage]:
        return await self._drain(self._follow_up, self._follow_up_mode)

    async def _transform_context(
        self, messages: list[AgentMessage], _signal: AbortSignal | None
    ) -> Sequence[AgentMessage]:
        if not self._hooks.get("context"):
            return messages
        result = await self._run_hook("context", ContextEvent(list(messages)), ContextResult)
        return messages if result is None else list(result.messages)

    async def _loop_api_key(self, provider: str) -> str | None:
        assert self._get_api_key is not None
        key = await maybe_await(self._get_api_key(provider))
        return key if isinstance(key, str) and key else None

    async def _before_tool_call(
        self, context: BeforeToolCallContext, _signal: AbortSignal | None
    ) -> BeforeToolCallResult | None:
        call = context.tool_call
        event = ToolCallEvent(call.id, call.name, dict(context.args))
        result = await self._run_hook("tool_call", event, ToolCallResult)
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
        patch = await self._run_hook("tool_result", event, ToolResultPatch)
        if patch is None:
            return None
        return AfterToolCallResult(patch.content, patch.details, patch.is_error, patch.terminate)

    async def _provider_stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Every provider request of a run: the snapshot's options, patched by the
        ``before_provider_request`` hooks, with payload and response hooks attached."""
        snapshot = self._turn
        session_id = snapshot.session_id if snapshot is not None else self._session.id
        request = snapshot.stream_options if snapshot is not None else self._stream_options
        for handler in self._hooks.get("before_provider_request", ()):
            event = BeforeProviderRequestEvent(model, session_id, request)
            value = await self._call_handler("before_provider_request", handler, event)
            if value is None:
                continue
            try:
                patch = coerce_result(value, BeforeProviderRequestResult)
                request = request.patched(patch.stream_options)
            except (TypeError, ValueError) as exc:
                raise AgentHarnessError(
                    "hook", f"before_provider_request hook returned {exc}"
                ) from exc
        reasoning = options.reasoning
        max_tokens = options.max_tokens
        meter = self._meter
        if meter is not None:
            verdict = meter.check(model, context, max_tokens, reasoning)
            await self._emit(meter.event())
            if not verdict.allowed:
                return self._budget_stop(model, verdict.reason or "Budget: stopped.")
            if verdict.max_tokens is not None:
                max_tokens = verdict.max_tokens
        per_call = request.stream_options(
            api_key=options.api_key,
            signal=options.signal,
            reasoning=None if reasoning == "off" else reasoning,
            max_tokens=max_tokens,
            session_id=session_id,
            on_payload=self._on_payload,
            on_response=self._on_response,
        )
        produced = (self._stream_fn or default_stream_fn)(model, context, per_call)
        stream = await produced if inspect.isawaitable(produced) else produced
        return stream

    def _budget_stop(self, model: Model, reason: str) -> AssistantMessageEventStream:
        """End the run before a request a cap forbids, as an abort does: the reply is an empty
        ``aborted`` one saying why (providers never see it again), and the session records
        the reason as a message after it."""
        self._pending_writes.append(
            lambda: self._session.append_custom_message(BUDGET_STOP_TYPE, reason, display=True)
        )
        stopped = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="aborted",
            error_message=reason,
        )
        return AssistantMessageEventStream.of([ErrorEvent(reason="aborted", error=stopped)])

    async def _on_payload(self, payload: dict[str, Any], model: Model) -> dict[str, Any]:
        for handler in self._hooks.get("before_provider_payload", ()):
            event = BeforeProviderPayloadEvent(model, payload)
            value = await self._call_handler("before_provider_payload", handler, event)
            if value is not None:
                try:
                    payload = coerce_result(value, BeforeProviderPayloadResult).payload
                except (TypeError, ValueError) as exc:
                    raise AgentHarnessError(
                        "hook", f"before_provider_payload hook returned {exc}"
                    ) from exc
        return payload

    async def _on_response(self, response: ResponseInfo, _model: Model) -> None:
        headers = {str(k): str(v) for k, v in response.headers.items()}
        await self._emit(AfterProviderResponseEvent(status=response.status, headers=headers))

    # --- automatic compaction --------------------------------------------------------------------

    async def _settle_context(
        self, messages: list[AgentMessage], controller: AbortController
    ) -> list[AgentMessage]:
        """After a run, as pi 1.6 does after each agent run: check its last reply; an overflow
        compacted for a retry sends the request again (a continue run), a compaction with
        messages queued meanwhile delivers them in another run.

        Returns every message of the runs (the retries' included)."""
        all_messages = list(messages)
        while not controller.signal.aborted:
            reply = _last_assistant(messages)
            if reply is None or not await self._check_and_compact(
                reply, controller.signal, defer_threshold=self.defer_threshold_compaction
            ):
                break
            snapshot = await self._snapshot()
            if snapshot.messages and snapshot.messages[-1].role != "assistant":
                messages = await self._run(snapshot, None, snapshot.system_prompt, controller)
            else:
                queued = await self._drain_steer() or await self._drain_follow_up()
                if not queued:
                    break
                messages = await self._run(snapshot, queued, snapshot.system_prompt, controller)
            all_messages.extend(messages)
        return all_messages

    async def _check_and_compact(
        self,
        reply: AssistantMessage,
        signal: AbortSignal,
        *,
        skip_aborted: bool = True,
        defer_threshold: bool = False,
    ) -> bool:
        """pi 1.6's ``_checkCompaction`` for ``reply`` (:func:`check_compaction`), acted on:
        returns whether another run should follow (an overflow to retry, or queued messages
        after a compaction). ``defer_threshold``: a compaction for size alone is left for
        later (:attr:`defer_threshold_compaction`)."""
        check: CompactionCheck | None = check_compaction(
            reply,
            self._session,
            self._model,
            self._compaction,
            recovery_attempted=self._overflow_recovery_attempted,
            skip_aborted=skip_aborted,
        )
        if check is None or (defer_threshold and check.reason == "threshold"):
            return False
        if check.recovery_failed is not None:
            _log.warning("automatic compaction: %s", check.recovery_failed)
            await self._emit(
                CompactionEndEvent(reason="overflow", error_message=check.recovery_failed)
            )
            return False
        if check.will_retry:
            self._overflow_recovery_attempted = True
            self._omit_recovery_attempt(reply)
        return await self._auto_compact(check.reason, signal, will_retry=check.will_retry)

    def _omit_recovery_attempt(self, reply: AssistantMessage) -> None:
        """Hide a failed attempt (the reply and the results of its tool calls) from future
        contexts with context edits, as pi 1.6 does before it retries; the raw history keeps
        them."""
        branch = self._session.get_branch()
        index = entry_index_of(branch, reply)
        if index < 0:
            return
        call_ids = {block.id for block in reply.content if block.type == "toolCall"}
        targets = [branch[index].id]
        for entry in branch[index + 1 :]:
            if not isinstance(entry, MessageEntry):
                continue
            message = entry.message
            if isinstance(message, AssistantMessage):
                break
            if isinstance(message, ToolResultMessage) and message.tool_call_id in call_ids:
                targets.append(entry.id)
        for target in targets:
            self._persist(partial(self._session.append_context_edit, target, None))

    async def _auto_compact(
        self, reason: CompactionReason, signal: AbortSignal, *, will_retry: bool
    ) -> bool:
        """Compact on the harness's own account (pi 1.6's ``_runAutoCompaction``): nothing at
        all when there is nothing to compact; a failure is reported on ``compaction_end`` and
        logged, never raised. Returns whether another run should follow: ``will_retry`` after
        a compaction that succeeded, or messages queued meanwhile."""
        branch = self._session.get_branch()
        preparation = prepare_compaction(
            branch, self._compaction, self._session.build_context().messages
        )
        if preparation is None:
            return False
        phase, self._phase = self._phase, "compaction"
        try:
            await self._compact_now(
                reason, None, signal, will_retry=will_retry, preparation=preparation
            )
        except AgentHarnessError as exc:
            _log.warning("automatic compaction (%s) failed: %s", reason, exc)
            return False
        finally:
            self._phase = phase
        return will_retry or bool(self._steer or self._follow_up)

    # --- compaction ------------------------------------------------------------------------------

    async def settle(self) -> None:
        """Compact now if the branch's last reply calls for it: the check the next prompt
        makes first, for a caller that deferred a run's compaction
        (:attr:`defer_threshold_compaction`). Raises ``AgentHarnessError`` ``busy``."""
        async with self._operation_scope("compaction") as controller:
            last = _last_assistant(self._session.build_context().messages)
            if last is not None:
                await self._check_and_compact(last, controller.signal, skip_aborted=False)

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Compact the current branch now (with ``custom_instructions`` as extra focus).

        Raises ``AgentHarnessError``: ``busy``; ``auth``; ``compaction`` ("Nothing to compact",
        "Compaction cancelled" by a hook, or the summary failed or was aborted).
        """
        async with self._operation_scope("compaction") as controller:
            return await self._compact_now("manual", custom_instructions, controller.signal)

    async def _resolve_api_key(self) -> str | None:
        if self._get_api_key is None:
            return None
        provider = self._model.provider
        try:
            key = await maybe_await(self._get_api_key(provider))
        except Exception as exc:
            raise AgentHarnessError(
                "auth", f"Could not get an API key for {provider}: {describe_error(exc)}"
            ) from exc
        return key if isinstance(key, str) and key else None

    async def _compact_now(
        self,
        reason: CompactionReason,
        custom_instructions: str | None,
        signal: AbortSignal,
        *,
        will_retry: bool = False,
        preparation: CompactionPreparation | None = None,
    ) -> CompactionResult:
        before = preparation.tokens_before if preparation is not None else None
        await self._emit(CompactionStartEvent(reason=reason, tokens_before=before))
        try:
            result = await self._produce_compaction(custom_instructions, signal, preparation)
        except Exception as exc:
            error = _normalize(exc, "compaction")
            aborted = signal.aborted or (isinstance(exc, CompactionError) and exc.code == "aborted")
            message: str | None = str(error)
            if reason != "manual":  # pi 1.6's wording; a cancelled one (a hook) has none
                aborted = aborted or message == _CANCELLED
                message = None if aborted else f"{_AUTO_FAILED[reason]}: {message}"
            end = CompactionEndEvent(reason=reason, aborted=aborted, error_message=message)
            try:
                await self._emit(end)
            except AgentHarnessError:
                _log.exception("a listener failed on compaction_end")
            raise error from exc
        after = sum(estimate_tokens(m) for m in self._session.build_context().messages)
        await self._emit(
            CompactionEndEvent(
                reason=reason, result=result, will_retry=will_retry, tokens_after=after
            )
        )
        return result

    async def _produce_compaction(
        self,
        custom_instructions: str | None,
        signal: AbortSignal,
        preparation: CompactionPreparation | None = None,
    ) -> CompactionResult:
        api_key = await self._resolve_api_key()
        branch = self._session.get_branch()
        if preparation is None:  # an explicit compact(): pi 0.79's harness compacts even a
            # branch with nothing to summarise (its golden); automatic ones come prepared
            context = self._session.build_context().messages
            preparation = prepare_compaction(branch, self._compaction, context, allow_empty=True)
        if preparation is None:
            raise AgentHarnessError("compaction", "Nothing to compact")
        event = SessionBeforeCompactEvent(preparation, branch, custom_instructions, signal)
        hook = await self._run_hook("session_before_compact", event, SessionBeforeCompactResult)
        if hook is not None and hook.cancel:
            raise AgentHarnessError("compaction", _CANCELLED)
        provided = None if hook is None else hook.compaction
        if provided is not None:
            result = provided
        else:
            result = await _compact(
                preparation,
                self._model,
                api_key=api_key,
                headers=self._stream_options.headers,
                custom_instructions=custom_instructions,
                signal=signal,
                thinking_level=self._thinking_level,
                stream_fn=self._stream_fn,
            )
        from_hook = provided is not None
        entry = self._persist(
            lambda: self._session.append_compaction(
                result.summary,
                result.first_kept_entry_id,
                result.tokens_before,
                result.details,
                from_hook=from_hook,
            )
        )
        assert isinstance(entry, CompactionEntry)
        await self._emit(SessionCompactEvent(compaction_entry=entry, from_hook=from_hook))
        return result

    # --- tree navigation -------------------------------------------------------------------------

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
        async with self._operation_scope("branch_summary") as controller:
            return await self._navigate(
                target_id, summarize, custom_instructions, replace_instructions, label, controller
            )

    async def _navigate(
        self,
        target_id: str,
        summarize: bool,
        custom_instructions: str | None,
        replace_instructions: bool,
        label: str | None,
        controller: AbortController,
    ) -> NavigateTreeResult:
        session = self._session
        old_leaf = session.leaf_id
        if old_leaf == target_id:
            return NavigateTreeResult()
        target = session.get_entry(target_id)
        if target is None or isinstance(target, LeafEntry):
            raise AgentHarnessError("invalid_argument", f"Entry {target_id} not found")
        collected = collect_entries_for_branch_summary(session, old_leaf, target_id)
        preparation = TreePreparation(
            target_id=target_id,
            old_leaf_id=old_leaf,
            common_ancestor_id=collected.common_ancestor_id,
            entries_to_summarize=collected.entries,
            user_wants_summary=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        event = SessionBeforeTreeEvent(preparation, controller.signal)
        hook = await self._run_hook("session_before_tree", event, SessionBeforeTreeResult)
        if hook is not None and hook.cancel:
            return NavigateTreeResult(cancelled=True)
        summary_text: str | None = None
        details: Any = None
        from_hook = hook is not None and hook.summary is not None
        if hook is not None:
            if hook.summary is not None:
                summary_text, details = hook.summary.summary, hook.summary.details
            if hook.custom_instructions is not None:
                custom_instructions = hook.custom_instructions
            if hook.replace_instructions is not None:
                replace_instructions = hook.replace_instructions
            if hook.label is not None:
                label = hook.label
        if not summary_text and summarize and collected.entries:
            api_key = await self._resolve_api_key()
            try:
                generated = await _generate_branch_summary(
                    collected.entries,
                    self._model,
                    api_key=api_key,
                    headers=self._stream_options.headers,
                    signal=controller.signal,
                    custom_instructions=custom_instructions,
                    replace_instructions=replace_instructions,
                    reserve_tokens=self._compaction.reserve_tokens,
                    stream_fn=self._stream_fn,
                )
            except BranchSummaryError as exc:
                if exc.code == "aborted":
                    return NavigateTreeResult(cancelled=True)
                raise _normalize(exc, "branch_summary") from exc
            summary_text, details = generated.summary, generated.details()

        editor_text: str | None = None
        new_leaf: str | None = target_id
        if isinstance(target, MessageEntry) and isinstance(target.message, UserMessage):
            new_leaf, editor_text = target.parent_id, _text_of(target.message.content)
        elif isinstance(target, CustomMessageEntry):
            new_leaf, editor_text = target.parent_id, _text_of(target.content)
        session.set_leaf(new_leaf)  # written by what follows: the summary, or the next prompt
        summary_entry: BranchSummaryEntry | None = None
        if summary_text:
            text = summary_text
            written = self._persist(
                lambda: session.append_branch_summary(
                    text,
                    # pi 1.6: the leaf the summarised branch was left at ("root": none)
                    from_id=old_leaf if old_leaf is not None else "root",
                    details=details,
                    from_hook=from_hook,
                )
            )
            assert isinstance(written, BranchSummaryEntry)
            summary_entry = written
        if label:
            labelled = summary_entry.id if summary_entry is not None else target_id
            self._persist(lambda: session.append_label(labelled, label))
        await self._emit(
            SessionTreeEvent(
                old_leaf_id=old_leaf,
                new_leaf_id=session.leaf_id,
                summary_entry=summary_entry,
                from_hook=from_hook,
            )
        )
        return NavigateTreeResult(False, editor_text, summary_entry)

    # --- configuration ---------------------------------------------------------------------------

    @staticmethod
    def _tool_map(tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
        for tool in tools:
            if not isinstance(tool, AgentTool):
                raise AgentHarnessError(
                    "invalid_argument", f"tools must be AgentTools, not {type(tool).__name__}"
                )
        duplicates = _duplicates(tool.name for tool in tools)
        if duplicates:
            raise AgentHarnessError(
                "invalid_argument", f"Duplicate tool name(s): {', '.join(duplicates)}"
            )
        return {tool.name: tool for tool in tools}

    @staticmethod
    def _check_active(names: Sequence[str], tools: Mapping[str, AgentTool]) -> None:
        duplicates = _duplicates(names)
        if duplicates:
            raise AgentHarnessError(
                "invalid_argument", f"Duplicate active tool name(s): {', '.join(duplicates)}"
            )
        missing = [name for name in names if name not in tools]
        if missing:
            raise AgentHarnessError("invalid_argument", f"Unknown tool(s): {', '.join(missing)}")

    def _persist(self, write: Callable[[], _E]) -> _E:
        kept_before = len(self._session.unsaved_entries)
        try:
            return write()
        except AgentHarnessError:
            raise
        except SessionWriteError as exc:
            kept = self._session.unsaved_entries
            if len(kept) > kept_before:  # kept in memory (``Session.write_error``): go on
                self._report_unsaved(exc, len(kept), first=kept_before == 0)
                return cast(_E, kept[-1])
            raise AgentHarnessError(
                "session", f"Could not write the session: {describe_error(exc)}"
            ) from exc
        except Exception as exc:
            raise AgentHarnessError(
                "session", f"Could not write the session: {describe_error(exc)}"
            ) from exc

    def _report_unsaved(self, exc: SessionWriteError, unsaved: int, *, first: bool) -> None:
        """Say that entries are in memory only: a warning when that starts (not again for each
        entry while the file stays unwritable), and an event for every one, which a listener
        can show (the notebook's run view says "Not saved")."""
        reason = describe_error(exc)
        if first:
            _log.warning("the session could not be written; kept in memory: %s", reason)
        else:
            _log.debug("kept in memory (%d entries): %s", unsaved, reason)
        self._events.post(SessionWriteErrorEvent(error_message=reason, unsaved=unsaved))

    def _write_or_defer(self, write: Callable[[], object]) -> None:
        """Persist a setting change now when idle, at the next save point when busy."""
        if self._phase == "idle":
            self._persist(write)
        else:
            self._pending_writes.append(write)

    async def _flush_pending(self) -> None:
        while self._pending_writes:
            self._persist(self._pending_writes[0])
            self._pending_writes.popleft()

    def set_model(self, model: Model) -> None:
        """Use ``model`` from the next turn on (recorded as a ``model_change`` entry). The level
        asked for with ``set_thinking_level`` is clamped to the new model, as pi 1.6 does: a
        change of the level in effect is recorded after the model's."""
        if not isinstance(model, Model):
            raise AgentHarnessError("invalid_argument", "model must be a pi_notebook.ai.Model")
        previous = self._model
        self._write_or_defer(lambda: self._session.append_model_change(model.provider, model.id))
        self._model = model
        self._events.post(ModelUpdateEvent(model=model, previous_model=previous))
        self._apply_thinking_level()

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Use ``level`` from the next turn on, clamped to what the model supports (pi 1.6):
        the level in effect (``thinking_level``) is recorded as a ``thinking_level_change``
        only when it changes. The level asked for is kept for later models (``set_model``)."""
        self._requested_thinking_level = _check_thinking_level(level)
        self._apply_thinking_level()

    def _apply_thinking_level(self) -> None:
        level = clamp_thinking_level(self._model, self._requested_thinking_level)
        previous = self._thinking_level
        if level == previous:
            return
        self._write_or_defer(lambda: self._session.append_thinking_level_change(level))
        self._thinking_level = level
        self._events.post(ThinkingLevelUpdateEvent(level=level, previous_level=previous))

    def set_tools(
        self, tools: Iterable[AgentTool], active_tool_names: Iterable[str] | None = None
    ) -> None:
        """Replace the tool set. Without ``active_tool_names`` the tools active before stay
        active (if still there) and new tools become active. Recorded as an
        ``active_tools_change``."""
        tool_map = self._tool_map(list(tools))
        if active_tool_names is None:
            known = set(self._tools)
            names = [n for n in self._active_tool_names if n in tool_map]
            names += [n for n in tool_map if n not in known]
        else:
            names = list(active_tool_names)
        self._check_active(names, tool_map)
        previous_tools, previous_active = list(self._tools), list(self._active_tool_names)
        self._write_or_defer(lambda: self._session.append_active_tools_change(names))
        self._tools, self._active_tool_names = tool_map, names
        self._post_tools_update(previous_tools, previous_active)

    def set_active_tools(self, names: Iterable[str]) -> None:
        """Offer the model only the tools ``names`` (from the next turn on)."""
        active = list(names)
        self._check_active(active, self._tools)
        previous_active = list(self._active_tool_names)
        self._write_or_defer(lambda: self._session.append_active_tools_change(active))
        self._active_tool_names = active
        self._post_tools_update(list(self._tools), previous_active)

    def _post_tools_update(self, previous_tools: list[str], previous_active: list[str]) -> None:
        self._events.post(
            ToolsUpdateEvent(
                tool_names=list(self._tools),
                previous_tool_names=previous_tools,
                active_tool_names=list(self._active_tool_names),
                previous_active_tool_names=previous_active,
            )
        )

    def set_resources(self, resources: Resources) -> None:
        """Replace the skills and prompt templates (from the next run on)."""
        if not isinstance(resources, Resources):
            raise AgentHarnessError("invalid_argument", "resources must be Resources")
        self._resources = resources
        self._events.post(
            ResourcesUpdateEvent(
                skill_names=[s.name for s in resources.skills],
                prompt_template_names=[t.name for t in resources.prompt_templates],
            )
        )

    def __repr__(self) -> str:
        return (
            f"<AgentHarness {self._model.ref} phase={self._phase} "
            f"tools={len(self._active_tool_names)}/{len(self._tools)} session={self._session.id}>"
        )
