"""Assistant message events: what a stream yields while one reply is produced.

Each event's ``partial`` is the reply *as it was when the event was emitted*. Later deltas never
change an earlier event's view (pi shares one mutable object, so listeners see the future). The
view is built lazily from an O(1) snapshot (a ``PartialSource`` shared by consecutive events, and
the event's own chunk count), so the cost of a stream stays linear in its length: nothing is copied
unless somebody reads ``partial``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Final, Literal, Protocol, TypeAlias, TypeVar, get_args

from pydantic import Field, PrivateAttr, computed_field

from .construct import blank, set_fields_set
from .types import AssistantMessage, PiModel, ToolCall

__all__ = [
    "ASSISTANT_EVENT_TYPES",
    "BLOCK_EVENT_CLASSES",
    "BLOCK_EVENT_TYPES",
    "DELTA_EVENT_TYPES",
    "AssistantEventType",
    "AssistantMessageEvent",
    "ChunkedPartialSource",
    "DoneEvent",
    "ErrorEvent",
    "PartialSource",
    "StartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "delta_events",
    "delta_fields_set",
    "partial_event",
]


class PartialSource(Protocol):
    """Something that can produce the partial message it stands for."""

    def materialize(self) -> AssistantMessage: ...


class ChunkedPartialSource(Protocol):
    """The reply at some moment except the chunk count of the block being streamed into, which
    each event carries (``MessageBuilder``: consecutive deltas share one source)."""

    def materialize_at(self, chunks: int) -> AssistantMessage: ...


class _PartialEvent(PiModel):
    """An event carrying ``partial``: pass a message, or (hot path) a lazy source."""

    _partial: AssistantMessage | PartialSource | ChunkedPartialSource | None = PrivateAttr(
        default=None
    )
    _chunks: int | None = PrivateAttr(default=None)
    """With a ``ChunkedPartialSource``: the chunk count to materialise it with."""

    def __init__(self, /, partial: AssistantMessage | PartialSource | None = None, **data: Any):
        super().__init__(**data)
        self._partial = partial

    def __setattr__(self, name: str, value: Any) -> None:
        # ``partial_event`` shares one fields set per class: copy it before pydantic adds to it.
        fields_set = self.__pydantic_fields_set__
        if fields_set is _SHARED_FIELDS_SETS.get(type(self)):
            set_fields_set(self, set(fields_set))
        super().__setattr__(name, value)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def partial(self) -> AssistantMessage:
        # The private attributes are read and cached in their dict directly: pydantic's own
        # attribute hooks for them cost more than building the message.
        private = self.__pydantic_private__
        source = private.get("_partial") if private else None
        if private is None or source is None:
            raise ValueError(f"{type(self).__name__} has no partial message")
        if type(source) is AssistantMessage:  # given, or built already (exact: no ABC check)
            return source
        chunks = private.get("_chunks")
        message: AssistantMessage
        # no typing.cast below: it is a call, and this runs once per reply at least
        if chunks is not None:  # only ``partial_event`` sets it, with a chunked source
            message = source.materialize_at(chunks)
            if type(message) is not AssistantMessage:
                private["_chunks"] = None  # the next read takes it as it is
        elif isinstance(source, AssistantMessage):
            return source
        else:
            message = source.materialize()
        private["_partial"] = message
        return message


_E = TypeVar("_E", bound=_PartialEvent)

_SHARED_FIELDS_SETS: dict[type[Any], set[str]] = {}
"""One ``__pydantic_fields_set__`` per event class for ``partial_event`` (copied on write)."""


def partial_event(
    cls: type[_E], fields: dict[str, Any], source: ChunkedPartialSource, chunks: int
) -> _E:
    """An event of ``cls`` from its complete ``fields`` (``type`` included), without validation:
    the providers' per-delta path. ``partial`` is ``source.materialize_at(chunks)``, built when
    first read."""
    # A shared fields set: one GC-tracked object fewer per delta. The survivors of a batch of
    # deltas drive full GC passes (bench.agent_loop_bench text_100k); ``test_fast_paths`` checks
    # it against ``set(fields)``.
    shared = _SHARED_FIELDS_SETS.get(cls)
    if shared is None or len(shared) != len(fields):
        shared = set(fields)
        if cls not in _SHARED_FIELDS_SETS:
            _SHARED_FIELDS_SETS[cls] = shared
    event = blank()
    event.__dict__ = fields
    event.__pydantic_fields_set__ = shared
    event.__pydantic_extra__ = {}
    event.__pydantic_private__ = {"_partial": source, "_chunks": chunks}
    event.__class__ = cls
    return event  # type: ignore[no-any-return]


def delta_fields_set(cls: type[_PartialEvent]) -> set[str]:
    """The ``__pydantic_fields_set__`` every delta event of ``cls`` shares (copied on write)."""
    shared = _SHARED_FIELDS_SETS.get(cls)
    if shared is None or len(shared) != 3:
        shared = {"type", "content_index", "delta"}
        _SHARED_FIELDS_SETS.setdefault(cls, shared)
    return shared


def delta_events(
    cls: type[_E],
    kind: str,
    index: int,
    source: ChunkedPartialSource,
    chunks: list[str],
    first: int,
    last: int,
) -> Iterator[_E]:
    """The events of the deltas that brought block ``index`` from ``first - 1`` to ``last``
    chunks: ``partial_event(cls, {"type": kind, "content_index": index, "delta": chunk}, source,
    count)`` for each, built one at a time (the stream's queued ``DeltaRun``)."""
    shared = delta_fields_set(cls)
    new = blank
    for count in range(first, last + 1):
        event = new()
        event.__dict__ = {"type": kind, "content_index": index, "delta": chunks[count - 1]}
        event.__pydantic_fields_set__ = shared
        event.__pydantic_extra__ = {}
        event.__pydantic_private__ = {"_partial": source, "_chunks": count}
        event.__class__ = cls
        yield event


class StartEvent(_PartialEvent):
    type: Literal["start"] = "start"


class TextStartEvent(_PartialEvent):
    type: Literal["text_start"] = "text_start"
    content_index: int


class TextDeltaEvent(_PartialEvent):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_PartialEvent):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str


class ThinkingStartEvent(_PartialEvent):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_PartialEvent):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_PartialEvent):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str


class ToolCallStartEvent(_PartialEvent):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int


class ToolCallDeltaEvent(_PartialEvent):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str


class ToolCallEndEvent(_PartialEvent):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall


class DoneEvent(PiModel):
    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(PiModel):
    type: Literal["error"] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantMessageEvent: TypeAlias = Annotated[
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]

AssistantEventType: TypeAlias = Literal[
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]
"""The ``type`` of each event above: the one list of the names (cassettes, the loop and the run
view read it; tests/ai/test_event_types.py keeps it equal to the classes)."""
ASSISTANT_EVENT_TYPES: Final[tuple[AssistantEventType, ...]] = get_args(AssistantEventType)
BLOCK_EVENT_TYPES: Final = frozenset(ASSISTANT_EVENT_TYPES) - {"start", "done", "error"}
"""The events about one content block (they carry ``content_index``)."""
DELTA_EVENT_TYPES: Final = frozenset(t for t in ASSISTANT_EVENT_TYPES if t.endswith("_delta"))
"""The events that carry a ``delta`` of a block's text, thinking or tool-call arguments."""
BLOCK_EVENT_CLASSES: Final[frozenset[type[PiModel]]] = frozenset(
    {
        TextStartEvent,
        TextDeltaEvent,
        TextEndEvent,
        ThinkingStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
    }
)
"""The classes of the events in ``BLOCK_EVENT_TYPES``: ``type(event) in BLOCK_EVENT_CLASSES`` is
the cheap test of the per-delta paths (an attribute of a pydantic model costs several times as
much to read); an event of another class still goes by its ``type``."""
