"""What the harness runs with — model, thinking level, tools, system prompt, resources, stream
options, compaction settings, budget caps — how changes to it are checked and recorded in the
session, and the snapshot of it that each turn takes.

A change made while an operation runs takes effect at the next turn snapshot (never the request
in flight) and is written to the session at the next save point.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias, get_args

from ..agent.tools import AgentTool
from ..agent.types import AgentMessage, StreamFn, ToolExecutionMode
from ..ai.models import clamp_thinking_level
from ..ai.options import StreamOptions, maybe_await
from ..ai.producer import describe_error
from ..ai.registry import stream_simple_options
from ..ai.types import Context, Model, ThinkingLevel
from .budget import (
    BUDGET_CUSTOM_TYPE,
    BudgetCaps,
    BudgetMeter,
    BudgetSettings,
    latest_budget_settings,
    session_spend,
)
from .compaction import CompactionSettings
from .entries import ThinkingLevelChangeEntry
from .event_bus import EventBus
from .harness_events import (
    HarnessEvent,
    ModelUpdateEvent,
    ResourcesUpdateEvent,
    ThinkingLevelUpdateEvent,
    ToolsUpdateEvent,
)
from .hook_registry import HookRegistry
from .hooks import AgentHarnessError, HarnessStreamOptions
from .prompts import DEFAULT_SYSTEM_PROMPT
from .resources import Resources
from .session_writes import SessionWriter

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "ApiKeySource",
    "HarnessConfiguration",
    "HarnessParts",
    "SystemPromptContext",
    "SystemPromptSource",
    "TurnSnapshot",
    "check_thinking_level",
]

_THINKING_LEVELS: frozenset[str] = frozenset(get_args(ThinkingLevel))

ApiKeySource: TypeAlias = Callable[[str], str | Awaitable[str | None] | None]


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
class TurnSnapshot:
    """What one turn runs with: the session's context and the configuration of that moment."""

    messages: list[AgentMessage]
    resources: Resources
    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel
    active_tools: list[AgentTool]
    stream_options: HarnessStreamOptions
    session_id: str


def check_thinking_level(level: str) -> ThinkingLevel:
    if level not in _THINKING_LEVELS:
        raise AgentHarnessError(
            "invalid_argument",
            f"thinking level must be one of {', '.join(sorted(_THINKING_LEVELS))}, not {level!r}",
        )
    return level  # type: ignore[return-value]


def _duplicates(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    duplicates: list[str] = []
    for name in names:
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    return duplicates


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


def _check_active(names: Sequence[str], tools: Mapping[str, AgentTool]) -> None:
    duplicates = _duplicates(names)
    if duplicates:
        raise AgentHarnessError(
            "invalid_argument", f"Duplicate active tool name(s): {', '.join(duplicates)}"
        )
    missing = [name for name in names if name not in tools]
    if missing:
        raise AgentHarnessError("invalid_argument", f"Unknown tool(s): {', '.join(missing)}")


class HarnessConfiguration:
    """The harness's settings. Setters check their argument (``AgentHarnessError``
    ``invalid_argument``), record the change through ``writer`` and post an update event."""

    def __init__(
        self,
        writer: SessionWriter,
        events: EventBus,
        model: Model,
        tools: Iterable[AgentTool],
        active_tool_names: Iterable[str] | None,
        system_prompt: SystemPromptSource | None,
        thinking_level: ThinkingLevel,
        compaction: CompactionSettings,
        get_api_key: ApiKeySource | None,
        stream_fn: StreamFn | None,
        resources: Resources | None,
        stream_options: HarnessStreamOptions | None,
        tool_execution: ToolExecutionMode,
    ) -> None:
        if not isinstance(model, Model):
            raise AgentHarnessError("invalid_argument", "model must be a pi_notebook.ai.Model")
        if not isinstance(compaction, CompactionSettings):
            raise AgentHarnessError("invalid_argument", "compaction must be CompactionSettings")
        if tool_execution not in ("parallel", "sequential"):
            raise AgentHarnessError(
                "invalid_argument",
                f"tool_execution must be parallel or sequential, not {tool_execution!r}",
            )
        self._writer = writer
        self._events = events
        self.tools = _tool_map(list(tools))
        names = list(self.tools) if active_tool_names is None else list(active_tool_names)
        _check_active(names, self.tools)
        self.active_tool_names = names
        self.model = model
        self._requested_thinking_level = check_thinking_level(thinking_level)
        self.thinking_level = clamp_thinking_level(model, self._requested_thinking_level)
        self._system_prompt = system_prompt
        self._compaction = compaction
        self.get_api_key = get_api_key
        self.stream_fn = stream_fn
        self.resources = resources if resources is not None else Resources()
        self._stream_options = stream_options or HarnessStreamOptions()
        self.tool_execution: ToolExecutionMode = tool_execution
        self._budget: BudgetSettings | None = None
        """The caps the session stores, read on first use."""

    # --- plain settings --------------------------------------------------------------------------

    @property
    def active_tools(self) -> list[AgentTool]:
        return [self.tools[name] for name in self.active_tool_names]

    @property
    def system_prompt(self) -> SystemPromptSource | None:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: SystemPromptSource | None) -> None:
        if value is not None and not (isinstance(value, str) or callable(value)):
            raise AgentHarnessError("invalid_argument", "system_prompt must be a str or callable")
        self._system_prompt = value

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
    def compaction(self) -> CompactionSettings:
        return self._compaction

    @compaction.setter
    def compaction(self, settings: CompactionSettings) -> None:
        if not isinstance(settings, CompactionSettings):
            raise AgentHarnessError("invalid_argument", "expected CompactionSettings")
        self._compaction = settings

    # --- recorded changes ------------------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        if not isinstance(model, Model):
            raise AgentHarnessError("invalid_argument", "model must be a pi_notebook.ai.Model")
        previous = self.model
        session = self._writer.session
        self._writer.write_or_defer(lambda: session.append_model_change(model.provider, model.id))
        self.model = model
        self._events.post(ModelUpdateEvent(model=model, previous_model=previous))
        self._apply_thinking_level()

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self._requested_thinking_level = check_thinking_level(level)
        self._apply_thinking_level()

    def _apply_thinking_level(self) -> None:
        level = clamp_thinking_level(self.model, self._requested_thinking_level)
        previous = self.thinking_level
        if level == previous:
            return
        session = self._writer.session
        self._writer.write_or_defer(lambda: session.append_thinking_level_change(level))
        self.thinking_level = level
        self._events.post(ThinkingLevelUpdateEvent(level=level, previous_level=previous))

    def record_thinking_level(self) -> None:
        """Record the live thinking level on the branch when the branch's last
        ``thinking_level_change`` says another one, as pi 1.6 does when a run starts: after
        navigating the tree that entry may be another branch's, and a reopened session would
        resume at the wrong level. A branch that never recorded one gets none. The recorded
        level is compared clamped to the model (pi 1.6): ``xhigh`` written where the model
        runs it as ``high`` is not recorded over."""
        session = self._writer.session
        recorded = next(
            (
                entry.thinking_level
                for entry in reversed(session.get_branch())
                if isinstance(entry, ThinkingLevelChangeEntry)
            ),
            None,
        )
        if recorded is None or recorded not in _THINKING_LEVELS:
            return
        clamped = clamp_thinking_level(self.model, recorded)  # type: ignore[arg-type]
        if clamped != self.thinking_level:
            level = self.thinking_level
            self._writer.persist(lambda: session.append_thinking_level_change(level))

    def set_tools(
        self, tools: Iterable[AgentTool], active_tool_names: Iterable[str] | None = None
    ) -> None:
        tool_map = _tool_map(list(tools))
        if active_tool_names is None:
            known = set(self.tools)
            names = [n for n in self.active_tool_names if n in tool_map]
            names += [n for n in tool_map if n not in known]
        else:
            names = list(active_tool_names)
        _check_active(names, tool_map)
        previous_tools, previous_active = list(self.tools), list(self.active_tool_names)
        session = self._writer.session
        self._writer.write_or_defer(lambda: session.append_active_tools_change(names))
        self.tools, self.active_tool_names = tool_map, names
        self._post_tools_update(previous_tools, previous_active)

    def set_active_tools(self, names: Iterable[str]) -> None:
        active = list(names)
        _check_active(active, self.tools)
        previous_active = list(self.active_tool_names)
        session = self._writer.session
        self._writer.write_or_defer(lambda: session.append_active_tools_change(active))
        self.active_tool_names = active
        self._post_tools_update(list(self.tools), previous_active)

    def _post_tools_update(self, previous_tools: list[str], previous_active: list[str]) -> None:
        self._events.post(
            ToolsUpdateEvent(
                tool_names=list(self.tools),
                previous_tool_names=previous_tools,
                active_tool_names=list(self.active_tool_names),
                previous_active_tool_names=previous_active,
            )
        )

    def set_resources(self, resources: Resources) -> None:
        if not isinstance(resources, Resources):
            raise AgentHarnessError("invalid_argument", "resources must be Resources")
        self.resources = resources
        self._events.post(
            ResourcesUpdateEvent(
                skill_names=[s.name for s in resources.skills],
                prompt_template_names=[t.name for t in resources.prompt_templates],
            )
        )

    @property
    def budget(self) -> BudgetSettings:
        if self._budget is None:
            self._budget = latest_budget_settings(self._writer.session.entries_of("custom"))
        return self._budget

    def set_budget(self, settings: BudgetSettings) -> None:
        if not isinstance(settings, BudgetSettings):
            raise AgentHarnessError("invalid_argument", "budget must be BudgetSettings")
        data = settings.to_data()
        session = self._writer.session
        self._writer.write_or_defer(lambda: session.append_custom(BUDGET_CUSTOM_TYPE, data))
        self._budget = settings

    def meter_for_run(self, budget: BudgetCaps | None) -> BudgetMeter | None:
        """The meter of a run capped by ``budget`` over the run defaults (``None``: no cap)."""
        settings = self.budget
        run_caps = settings.run.overridden_by(budget)
        if run_caps.empty and settings.session.empty:
            return None
        session = self._writer.session
        totals = session.usage_totals()
        spent = session_spend(session.entries_of("message"), totals.cost, totals.total_tokens)
        return BudgetMeter(run_caps, settings.session, spent)

    # --- per turn and per request ----------------------------------------------------------------

    async def snapshot(self) -> TurnSnapshot:
        """The session's context at its leaf and the settings now, the system prompt resolved
        (a callback's failure is an ``AgentHarnessError("hook")``)."""
        session = self._writer.session
        context = session.build_context()
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
                session, self.model, self.thinking_level, active, self.resources
            )
            try:
                system_prompt = await maybe_await(source(prompt_context))
            except Exception as exc:
                raise AgentHarnessError(
                    "hook", f"system prompt callback failed: {describe_error(exc)}"
                ) from exc
            if not isinstance(system_prompt, str):
                raise AgentHarnessError("hook", "the system prompt callback must return a str")
        return TurnSnapshot(
            messages=list(context.messages),
            resources=self.resources,
            system_prompt=system_prompt,
            model=self.model,
            thinking_level=self.thinking_level,
            active_tools=active,
            stream_options=self._stream_options,
            session_id=session.id,
        )

    def summary_stream_fn(self) -> StreamFn | None:
        """The stream function of a compaction's or branch summary's requests: ``stream_fn``,
        whose requests are told of stalls as the run's are (``stream_options.on_stall``)."""
        options = self._stream_options
        on_stall = options.on_stall
        if on_stall is None:
            return self.stream_fn
        inner = self.stream_fn or stream_simple_options
        stall_ms = options.stall_ms

        def stream(model: Model, context: Context, request: StreamOptions) -> Any:
            watched = replace(request, on_stall=on_stall)
            if stall_ms is not None:
                watched = replace(watched, stall_ms=stall_ms)
            return inner(model, context, watched)

        return stream

    async def api_key(self, provider: str) -> str | None:
        """The key ``get_api_key`` gives for ``provider`` (``None``: none given)."""
        assert self.get_api_key is not None
        key = await maybe_await(self.get_api_key(provider))
        return key if isinstance(key, str) and key else None

    async def summary_api_key(self) -> str | None:
        """The current model's key for a compaction or branch summary: its failure is an
        ``AgentHarnessError("auth")``."""
        if self.get_api_key is None:
            return None
        provider = self.model.provider
        try:
            return await self.api_key(provider)
        except Exception as exc:
            raise AgentHarnessError(
                "auth", f"Could not get an API key for {provider}: {describe_error(exc)}"
            ) from exc


@dataclass(frozen=True, slots=True)
class HarnessParts:
    """What the harness's operations work with: its configuration, the writer of its session,
    its hooks, and ``emit``, which delivers an event to its listeners."""

    config: HarnessConfiguration
    writer: SessionWriter
    hooks: HookRegistry
    emit: Callable[[HarnessEvent], Awaitable[None]]
