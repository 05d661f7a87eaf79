"""Harness hooks (``AgentHarness.on(hook_type, handler)``), their events and results, the
harness's error type, and the per-request stream options hooks may patch.

A handler gets the hook's event and may return its result type, a plain ``dict`` with the same
fields (snake_case or pi's camelCase), or ``None``. Handlers of one hook run in registration
order; the last non-``None`` result wins, except ``before_provider_request`` and
``before_provider_payload``, whose handlers chain (each sees the previous one's output).

``finish_turn`` is the agent loop's pi 1.6 hook (``AgentLoopConfig.finish_turn``) offered to
harness users: after a turn's tool results, before its ``turn_end``, a handler may end the run
(``{"action": "end"}``) or ask for one more request (``{"action": "continue"}``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, TypeAlias, TypeVar

from ..agent.types import AgentMessage, FinishTurnAction
from ..ai.abort import AbortSignal
from ..ai.options import StallNotice, StreamOptions
from ..ai.producer import describe_error
from ..ai.types import AssistantMessage, ImageContent, Model, TextContent, ToolResultMessage
from .compaction import CompactionPreparation, CompactionResult
from .entries import SessionEntry
from .resources import Resources

__all__ = [
    "HOOK_TYPES",
    "AgentHarnessError",
    "AgentHarnessErrorCode",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeProviderPayloadEvent",
    "BeforeProviderPayloadResult",
    "BeforeProviderRequestEvent",
    "BeforeProviderRequestResult",
    "BranchSummaryOverride",
    "ContextEvent",
    "ContextResult",
    "FinishTurnEvent",
    "FinishTurnResult",
    "HarnessStreamOptions",
    "HookHandler",
    "HookType",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolResultEvent",
    "ToolResultPatch",
    "TreePreparation",
    "as_harness_error",
    "coerce_result",
]

AgentHarnessErrorCode: TypeAlias = Literal[
    "busy",
    "invalid_state",
    "invalid_argument",
    "session",
    "hook",
    "auth",
    "compaction",
    "branch_summary",
    "unknown",
]


class AgentHarnessError(Exception):
    """An operation of the harness failed; ``code`` says why (``busy``: another operation is
    running; ``invalid_state``: not possible now; ``invalid_argument``; ``session``: the session
    could not be written; ``hook``: a hook handler or listener raised; ``auth``: no API key;
    ``compaction``, ``branch_summary``; ``unknown``). The cause, if any, is ``__cause__``."""

    def __init__(self, code: AgentHarnessErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: AgentHarnessErrorCode = code

    def __repr__(self) -> str:
        return f"AgentHarnessError({self.code!r}, {str(self)!r})"


def as_harness_error(exc: BaseException, fallback: AgentHarnessErrorCode) -> AgentHarnessError:
    """``exc`` as an AgentHarnessError (a compaction's or branch summary's error keeps its
    meaning; anything else gets ``fallback``), caused by ``exc``."""
    from .branch_summary import BranchSummaryError
    from .compaction import CompactionError

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


HookType: TypeAlias = Literal[
    "before_agent_start",
    "context",
    "tool_call",
    "tool_result",
    "before_provider_request",
    "before_provider_payload",
    "session_before_compact",
    "session_before_tree",
    "finish_turn",
]
HOOK_TYPES: frozenset[str] = frozenset(HookType.__args__)  # type: ignore[attr-defined]

_E = TypeVar("_E")
_R = TypeVar("_R")

HookHandler: TypeAlias = Callable[
    [_E], _R | Mapping[str, Any] | Awaitable[_R | Mapping[str, Any] | None] | None
]
"""``handler(event)`` → result, a dict of its fields, or ``None`` (sync or async)."""


# --- stream options ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HarnessStreamOptions:
    """Options of every provider request a run makes (``None``: the provider's default).

    ``transport`` is passed through to providers that know it; ``on_stall`` is told when a
    request stalls (no response or event for ``stall_ms``) and when it resumes.
    """

    transport: str | None = None
    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    headers: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    cache_retention: Literal["none", "short", "long"] | None = None
    stall_ms: int | None = None
    on_stall: Callable[[StallNotice], Any] | None = None

    def patched(self, patch: Mapping[str, Any]) -> HarnessStreamOptions:
        """A copy with ``patch`` applied: a key set to ``None`` resets that option; inside
        ``headers``/``metadata`` a ``None`` value removes that key (an empty map becomes
        ``None``), while ``headers=None``/``metadata=None`` clear the whole map."""
        names = {f.name for f in fields(self)}
        changes: dict[str, Any] = {}
        for raw_key, value in patch.items():
            key = _snake(raw_key)
            if key not in names:
                raise ValueError(f"unknown stream option {raw_key!r}")
            if key in ("headers", "metadata") and value is not None:
                if not isinstance(value, Mapping):
                    raise ValueError(f"stream option {key} must be a mapping")
                merged = dict(getattr(self, key) or {})
                for name, item in value.items():
                    if item is None:
                        merged.pop(name, None)
                    else:
                        merged[name] = item
                value = merged or None
            changes[key] = value
        return replace(self, **changes)

    def apply_to(self, options: StreamOptions) -> StreamOptions:
        """``options`` (one request's) with the options set here; those left unset keep
        ``options``' values."""
        changes: dict[str, Any] = {
            "timeout_ms": self.timeout_ms,
            "max_retries": self.max_retries,
            "max_retry_delay_ms": self.max_retry_delay_ms,
            "headers": dict(self.headers) if self.headers else None,
            "metadata": dict(self.metadata) if self.metadata else None,
            "cache_retention": self.cache_retention,
            "stall_ms": self.stall_ms,
            "on_stall": self.on_stall,
        }
        changes = {name: value for name, value in changes.items() if value is not None}
        if self.transport is not None:
            changes["extra"] = {**options.extra, "transport": self.transport}
        return replace(options, **changes)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# --- hook events and results ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeforeAgentStartEvent:
    """Before a prompt/skill/template run: the prompt text, its images, the system prompt and
    resources of the run."""

    prompt: str
    images: list[ImageContent]
    system_prompt: str
    resources: Resources
    type: Literal["before_agent_start"] = "before_agent_start"


@dataclass(frozen=True, slots=True)
class BeforeAgentStartResult:
    """``messages`` are sent after the user message; ``system_prompt`` replaces the system
    prompt of the run's first turn (later turns use the harness's own, as in pi)."""

    messages: Sequence[AgentMessage] | None = None
    system_prompt: str | None = None


@dataclass(frozen=True, slots=True)
class ContextEvent:
    """Before every model call: the messages about to be sent (a copy)."""

    messages: list[AgentMessage]
    type: Literal["context"] = "context"


@dataclass(frozen=True, slots=True)
class ContextResult:
    """Replaces the messages of that one call."""

    messages: Sequence[AgentMessage]


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """Before a tool runs (arguments already validated)."""

    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """``block=True`` turns the call into an error result with ``reason``."""

    block: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """After a tool ran: its result (possibly an error)."""

    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    content: list[TextContent | ImageContent]
    details: Any
    is_error: bool
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ToolResultPatch:
    """Field-wise override of a tool result (``None`` keeps the tool's value)."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None


@dataclass(frozen=True, slots=True)
class FinishTurnEvent:
    """A turn is complete (its tool results included) and about to be reported as ``turn_end``.

    Also sent for a reply that failed or was aborted; the run ends then whatever is returned.
    """

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    type: Literal["finish_turn"] = "finish_turn"


@dataclass(frozen=True, slots=True)
class FinishTurnResult:
    """``action="end"`` ends the run after this turn; ``"continue"`` asks for one more request
    even when no tool call or queued message would make one; ``None`` lets the loop decide."""

    action: FinishTurnAction | None = None

    def __post_init__(self) -> None:
        if self.action not in (None, "end", "continue"):
            raise ValueError(f"action must be 'end', 'continue' or None, not {self.action!r}")


@dataclass(frozen=True, slots=True)
class BeforeProviderRequestEvent:
    """Before each provider request: the model, the session id and the request's options."""

    model: Model
    session_id: str
    stream_options: HarnessStreamOptions
    type: Literal["before_provider_request"] = "before_provider_request"


@dataclass(frozen=True, slots=True)
class BeforeProviderRequestResult:
    """A patch of the request's options (see :meth:`HarnessStreamOptions.patched`)."""

    stream_options: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class BeforeProviderPayloadEvent:
    """The provider's request body, just before it is sent."""

    model: Model
    payload: dict[str, Any]
    type: Literal["before_provider_payload"] = "before_provider_payload"


@dataclass(frozen=True, slots=True)
class BeforeProviderPayloadResult:
    """The body to send instead."""

    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionBeforeCompactEvent:
    """Before a compaction (manual or automatic): the plan, the branch and the instructions."""

    preparation: CompactionPreparation
    branch_entries: list[SessionEntry]
    custom_instructions: str | None
    signal: AbortSignal
    type: Literal["session_before_compact"] = "session_before_compact"


@dataclass(frozen=True, slots=True)
class SessionBeforeCompactResult:
    """``cancel`` stops the compaction; ``compaction`` is used instead of asking the model (the
    entry is marked ``fromHook``)."""

    cancel: bool = False
    compaction: CompactionResult | None = None


@dataclass(frozen=True, slots=True)
class TreePreparation:
    """What ``navigate_tree`` is about to do."""

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[SessionEntry]
    user_wants_summary: bool
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None


@dataclass(frozen=True, slots=True)
class SessionBeforeTreeEvent:
    preparation: TreePreparation
    signal: AbortSignal
    type: Literal["session_before_tree"] = "session_before_tree"


@dataclass(frozen=True, slots=True)
class BranchSummaryOverride:
    """A branch summary provided by a hook (written as is, marked ``fromHook``)."""

    summary: str
    details: Any = None


@dataclass(frozen=True, slots=True)
class SessionBeforeTreeResult:
    """``cancel`` leaves the leaf where it is; ``summary`` is written instead of generating
    one; the other fields replace the call's instructions and label."""

    cancel: bool = False
    summary: BranchSummaryOverride | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


_T = TypeVar("_T")


def coerce_result(value: object, result_type: type[_T]) -> _T:
    """A handler's return value as ``result_type`` (a dict's keys may be camelCase).

    Raises ``TypeError``/``ValueError`` for anything else.
    """
    if isinstance(value, result_type):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            f"expected {result_type.__name__}, a dict or None, not {type(value).__name__}"
        )
    names = {f.name for f in fields(result_type)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for raw_key, item in value.items():
        key = _snake(str(raw_key))
        if key not in names:
            raise ValueError(f"{result_type.__name__} has no field {raw_key!r}")
        kwargs[key] = item
    if result_type is SessionBeforeCompactResult and kwargs.get("compaction") is not None:
        kwargs["compaction"] = CompactionResult.model_validate(kwargs["compaction"])
    if result_type is SessionBeforeTreeResult and isinstance(kwargs.get("summary"), Mapping):
        kwargs["summary"] = coerce_result(kwargs["summary"], BranchSummaryOverride)
    return result_type(**kwargs)
