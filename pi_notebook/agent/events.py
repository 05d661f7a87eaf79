"""Agent events — what a run reports, in pi's order — and the sink that delivers them in order.

``model_dump(mode="json", by_alias=True, exclude_none=True)`` of an event gives pi's camelCase
JSON. A ``message_update`` carries the provider event that caused it; its ``message`` is that
event's partial reply, materialised only when somebody reads it, so streaming stays linear.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import Field, GetPydanticSchema, TypeAdapter, computed_field
from pydantic_core import core_schema

from ..ai.construct import blank, construct, set_fields_set
from ..ai.event_stream import DeltaRun
from ..ai.events import AssistantMessageEvent
from ..ai.types import AssistantMessage, Message, PiModel, ToolResultMessage
from .tools import AgentToolResult
from .types import AgentMessage

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentEventType",
    "AgentStartEvent",
    "EventSink",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "fast_construct",
    "message_update",
    "new_event",
]

AgentEventType: TypeAlias = Literal[
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
]

_LLM_ROLES = frozenset({"system", "user", "assistant", "toolResult"})


@cache
def _message_adapter() -> TypeAdapter[Message]:
    return TypeAdapter(Message)


def _as_agent_message(value: Any) -> Any:
    """Validation of an ``AgentMessage`` field: LLM messages given as dicts become models;
    app-defined messages (anything with a ``role``) pass through untouched."""
    if isinstance(value, dict):
        if value.get("role") in _LLM_ROLES:
            return _message_adapter().validate_python(value)
        if "role" in value:
            return value
    elif hasattr(value, "role"):
        return value
    raise ValueError(f"an agent message needs a role, got {type(value).__name__}")


AgentMessageField = Annotated[
    AgentMessage,
    GetPydanticSchema(
        lambda _source, _handler: core_schema.no_info_plain_validator_function(_as_agent_message)
    ),
]
"""An ``AgentMessage`` inside an event: serialised as whatever model it is."""


_M = TypeVar("_M", bound=PiModel)
_E = TypeVar("_E", bound=PiModel)


_REQUIRED = object()


@cache
def _defaults(cls: type[PiModel]) -> tuple[tuple[str, Any, Callable[[], Any] | None], ...]:
    return tuple(
        (name, _REQUIRED if f.is_required() else f.default, f.default_factory)  # type: ignore[misc]
        for name, f in cls.model_fields.items()
    )


def fast_construct(cls: type[_M], **values: Any) -> _M:
    """``cls.model_construct(**values)`` at a fraction of the cost, for the loop's per-turn
    objects (contexts, tool results): no validation; fields not given get their defaults.

    Like pydantic's own ``model_construct`` it sets the instance dict and bookkeeping directly.
    """
    fields_set = set(values)
    for name, default, factory in _defaults(cls):
        if name not in values:
            if default is _REQUIRED:
                raise TypeError(f"{cls.__name__}.{name} is required")
            values[name] = factory() if factory is not None else default
    return construct(cls, values, fields_set)


_SHARED_FIELDS_SETS: dict[type[Any], set[str]] = {}
"""Per event class, the ``__pydantic_fields_set__`` its ``new_event`` events share: every field
is given, so the set is the same for all of them (one GC-tracked object fewer per event); an
assignment copies it first (``_AgentEventBase.__setattr__``)."""


def new_event(cls: type[_E], values: dict[str, Any]) -> _E:
    """An event of ``cls`` from all its field values (``type`` included), without validation:
    the loop's events, built from parts that are valid already. Positional and without a class
    attribute lookup (a pydantic class's attributes are slow to read): it runs for every event."""
    shared = _SHARED_FIELDS_SETS.get(cls)
    if shared is None:
        shared = _SHARED_FIELDS_SETS[cls] = set(cls.model_fields)
    event = blank()
    event.__dict__ = values
    # (values name every field: equal sizes mean equal sets; anything else gets a set of its own)
    event.__pydantic_fields_set__ = shared if len(values) == len(shared) else set(values)
    event.__pydantic_extra__ = {}
    event.__pydantic_private__ = None
    event.__class__ = cls
    return event  # type: ignore[no-any-return]


class _AgentEventBase(PiModel):
    def __setattr__(self, name: str, value: Any) -> None:
        # ``new_event`` and ``message_update`` share one fields set per class: copy it before
        # pydantic adds to it.
        if self.__pydantic_fields_set__ is _SHARED_FIELDS_SETS.get(type(self)):
            set_fields_set(self, set(self.__pydantic_fields_set__))
        super().__setattr__(name, value)

    @classmethod
    def _quick(cls, **values: Any) -> Self:
        """Build without validation (``new_event`` with keywords). Every field must be given."""
        return new_event(cls, values)


class AgentStartEvent(_AgentEventBase):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(_AgentEventBase):
    """The run is over; ``messages`` are the messages it added (prompts included)."""

    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessageField]


class TurnStartEvent(_AgentEventBase):
    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(_AgentEventBase):
    """One assistant reply and the results of its tool calls (in call order)."""

    type: Literal["turn_end"] = "turn_end"
    message: AgentMessageField
    tool_results: list[ToolResultMessage]


class MessageStartEvent(_AgentEventBase):
    type: Literal["message_start"] = "message_start"
    message: AgentMessageField


class MessageUpdateEvent(_AgentEventBase):
    """A streaming delta of the assistant reply; ``message`` is the reply up to this delta."""

    type: Literal["message_update"] = "message_update"
    assistant_message_event: AssistantMessageEvent

    @computed_field  # type: ignore[prop-decorator]
    @property
    def message(self) -> AssistantMessage:
        event = self.assistant_message_event
        partial: AssistantMessage = getattr(event, "partial")  # noqa: B009 (every delta event has one)
        return partial


_UPDATE_FIELDS_SET = _SHARED_FIELDS_SETS[MessageUpdateEvent] = {"type", "assistant_message_event"}
"""Every ``message_update``'s ``__pydantic_fields_set__`` until one is assigned to (then copied)."""


def message_update(event: AssistantMessageEvent) -> MessageUpdateEvent:
    """The ``message_update`` for a provider delta event (built once per streamed delta)."""
    update = blank()
    update.__dict__ = {"type": "message_update", "assistant_message_event": event}
    # Shared: one GC-tracked object fewer per delta (bench.agent_loop_bench text_100k, gen-2 GC).
    update.__pydantic_fields_set__ = _UPDATE_FIELDS_SET
    update.__pydantic_extra__ = {}
    update.__pydantic_private__ = None
    update.__class__ = MessageUpdateEvent
    return update  # type: ignore[no-any-return]


class MessageEndEvent(_AgentEventBase):
    type: Literal["message_end"] = "message_end"
    message: AgentMessageField


class ToolExecutionStartEvent(_AgentEventBase):
    """A tool call is about to be prepared; ``args`` are the model's raw arguments."""

    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


class ToolExecutionUpdateEvent(_AgentEventBase):
    """Progress reported by a running tool."""

    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    partial_result: AgentToolResult


class ToolExecutionEndEvent(_AgentEventBase):
    """A tool call is finished (parallel batches report these in completion order)."""

    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    duration_ms: int | None = None
    """How long the tool ran (pi 1.6 ``durationMs``; ``None`` for a call that never ran)."""


AgentEvent: TypeAlias = Annotated[
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent,
    Field(discriminator="type"),
]

Emit: TypeAlias = Callable[[AgentEvent], Awaitable[None] | None]
"""Receives each event. An async ``emit`` (or one returning an awaitable) is awaited before the
next event is delivered; a plain function returning ``None`` costs no await at all."""


class EventSink:
    """Delivers events to ``emit``, one at a time and in the order they were produced.

    The loop awaits ``send`` for its own events (no extra task switch when nothing is queued), or
    on its per-delta path calls ``offer``, which awaits nothing when ``emit`` finished at once.
    Running tools report progress through ``post``, a plain callback that may fire while another
    event is being delivered, or from a worker thread; such events wait in a deque and a drainer
    task delivers them. A failure while delivering a posted event is raised by the next
    ``send``, ``offer`` or ``flush``.
    """

    __slots__ = ("_busy", "_drainer", "_emit", "_error", "_handled", "_loop", "_queue", "_thread")

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._queue: deque[tuple[AgentEvent, asyncio.Future[None] | None]] = deque()
        self._busy = False
        self._drainer: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._handled: asyncio.Future[None] = self._loop.create_future()
        self._handled.set_result(None)

    def send(self, event: AgentEvent) -> Awaitable[None]:
        """Deliver ``event`` after everything queued before it; the awaitable returned finishes
        once it was handled. When ``emit`` handled it at once that is a finished future, which
        ``await`` passes straight through (no coroutine made per event)."""
        if self._error is not None or self._busy or self._queue:
            pending = self.offer(event)
        else:
            pending = self._emit_now(event)
        return self._handled if pending is None else pending

    def offer(self, event: AgentEvent) -> Awaitable[None] | None:
        """Start delivering ``event`` (after everything queued before it). Returns ``None`` if it
        was handled already, else an awaitable the caller must await before its next event."""
        if self._error is not None:
            self._raise_pending_error()
        if self._busy or self._queue:
            waiter = self._loop.create_future()
            self._queue.append((event, waiter))
            self._start_drainer()
            return waiter
        return self._emit_now(event)

    def _emit_now(self, event: AgentEvent) -> Awaitable[None] | None:
        """Hand ``event`` to ``emit`` at once (nothing is queued or being delivered): ``None``
        when it was handled already, else what to await before the next event."""
        self._busy = True
        try:
            pending = self._emit(event)
        except BaseException:
            self._release()
            raise
        if pending is None:  # handled already (inlined _release: this runs for most events)
            self._busy = False
            if self._queue:
                self._start_drainer()
            return None
        return self._finish(pending)

    def offer_update(self, event: AssistantMessageEvent) -> Awaitable[None] | None:
        """``offer(message_update(event))`` in one call, for the loop's per-delta path: the
        update is built here and, when nothing is queued, handed to ``emit`` at once."""
        update = message_update(event)
        if self._error is not None or self._busy or self._queue:
            return self.offer(update)
        return self._emit_now(update)

    def offer_run(self, run: DeltaRun) -> Awaitable[None] | None:
        """``offer_update`` for every event of ``run``, in order, each event built just before
        it is delivered (the loop's per-delta path, without a call per delta). Returns ``None``
        when all were handled at once, else an awaitable that delivers the rest."""
        cls, kind, index, source, chunks = run.cls, run.kind, run.index, run.source, run.chunks
        given, new, emit = run.fields_set, blank, self._emit
        # Nothing queued, not busy, no failure to raise: checked once, then kept true by each
        # delivery that ends at once with nothing posted meanwhile (a failure is only recorded
        # by the drainer, a task, which cannot run in between).
        clear = self._error is None and not self._busy and not self._queue
        for count in range(run.first, run.last + 1):
            # partial_event's and message_update's objects, spelled out (see their docstrings)
            event = new()
            event.__dict__ = {"type": kind, "content_index": index, "delta": chunks[count - 1]}
            event.__pydantic_fields_set__ = given
            event.__pydantic_extra__ = {}
            event.__pydantic_private__ = {"_partial": source, "_chunks": count}
            event.__class__ = cls
            update = new()
            update.__dict__ = {"type": "message_update", "assistant_message_event": event}
            update.__pydantic_fields_set__ = _UPDATE_FIELDS_SET
            update.__pydantic_extra__ = {}
            update.__pydantic_private__ = None
            update.__class__ = MessageUpdateEvent
            if not clear:
                pending = self.offer(update)
                if pending is None:
                    continue
                return self._offer_rest(pending, run, count + 1)
            self._busy = True
            try:
                pending = emit(update)
            except BaseException:
                self._release()
                raise
            if pending is not None:
                return self._offer_rest(self._finish(pending), run, count + 1)
            self._busy = False
            if self._queue:
                self._start_drainer()
                clear = False
        return None

    async def _offer_rest(self, pending: Awaitable[None], run: DeltaRun, first: int) -> None:
        await pending
        for event in run.events(first):
            pending_next = self.offer_update(event)
            if pending_next is not None:
                await pending_next

    async def _finish(self, pending: Awaitable[None]) -> None:
        try:
            await pending
        finally:
            self._release()

    def _release(self) -> None:
        self._busy = False
        if self._queue:
            self._start_drainer()

    def post(self, event: AgentEvent) -> None:
        """Queue ``event`` for delivery without waiting (safe from other threads)."""
        if threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self.post, event)
            return
        self._queue.append((event, None))
        self._start_drainer()

    def flush(self) -> Awaitable[None]:
        """Wait until every posted event was delivered; raise a delivery failure, if any (at
        once when nothing is being delivered: the awaitable is then a finished future)."""
        if self._drainer is not None:
            return self._flush_drainer()
        if self._error is not None:
            self._raise_pending_error()
        return self._handled

    async def _flush_drainer(self) -> None:
        drainer = self._drainer
        if drainer is not None:
            await asyncio.shield(drainer)
        self._raise_pending_error()

    def _raise_pending_error(self) -> None:
        error = self._error
        if error is not None:
            self._error = None
            raise error

    def _start_drainer(self) -> None:
        if self._busy:
            return
        self._busy = True
        self._drainer = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        queue = self._queue
        try:
            while queue:
                event, waiter = queue.popleft()
                try:
                    pending = self._emit(event)
                    if pending is not None:
                        await pending
                except Exception as exc:
                    if waiter is None:
                        self._error = self._error or exc
                    elif not waiter.done():
                        waiter.set_exception(exc)
                else:
                    if waiter is not None and not waiter.done():
                        waiter.set_result(None)
        except asyncio.CancelledError:
            while queue:  # nobody will deliver these now: release whoever waits for them
                _event, waiter = queue.popleft()
                if waiter is not None:
                    waiter.cancel()
            raise
        finally:
            self._busy = False
            self._drainer = None
