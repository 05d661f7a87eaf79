"""``MessageBuilder``: how providers assemble a reply and emit its events.

A provider calls ``start()``, then ``text_start/text_delta/text_end`` (and the thinking and
tool-call twins), ``set_usage`` whenever usage arrives, and finally ``done(...)`` or ``fail(...)``.
The builder keeps the open blocks as lists of chunks, so appending is O(1). Every event records
the reply as it is at that moment in O(1): a shared ``_Layout`` (blocks, open blocks' metadata and
chunk counts, usage, response ids) plus the chunk count of the block being streamed into. The
layout is rebuilt only when something other than that count changes, so a run of deltas into one
block shares a single layout, and the stream queues such a run as one record (its events are
built when the consumer takes them). The ``AssistantMessage`` is built only if somebody reads
``event.partial``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic_core import from_json

from .construct import construct
from .event_stream import AssistantMessageEventStream, DeltaRun
from .events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    partial_event,
)
from .redaction import Redactor
from .types import (
    AssistantContent,
    AssistantMessage,
    Cost,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)

__all__ = [
    "MessageBuilder",
    "calculate_cost",
    "loads_json",
    "parse_partial_json",
    "parse_tool_arguments",
]


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Dollars for ``usage`` at ``model``'s per-million-token prices."""
    rates = model.cost
    inp = rates.input * usage.input / 1e6
    out = rates.output * usage.output / 1e6
    cr = rates.cache_read * usage.cache_read / 1e6
    cw = rates.cache_write * usage.cache_write / 1e6
    return Cost(input=inp, output=out, cache_read=cr, cache_write=cw, total=inp + out + cr + cw)


def loads_json(text: str) -> Any:
    """``json.loads(text)``, parsed by pydantic-core's jiter (faster, and providers
    parse one payload per streamed chunk). Text jiter refuses is left to ``json.loads``, which
    decides: the results and errors are ``json.loads``'s (lone surrogate escapes parse too)."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def parse_partial_json(text: str) -> dict[str, Any]:
    """Best-effort object from an incomplete JSON text (for live display); ``{}`` if hopeless."""
    if not text.strip():
        return {}
    try:
        value = from_json(text, allow_partial=True)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def parse_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Parse complete tool-call arguments: ``(arguments, None)`` or ``(best_effort, error)``."""
    if not text.strip():
        return {}, None
    try:
        value = from_json(text)
    except ValueError as exc:
        return parse_partial_json(text), f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None


# --- trusted construction ------------------------------------------------------------------------
# The objects ``model_construct`` would build (the same ``__dict__`` in field order, the same
# fields set) without its generic per-field loop (``construct``): these run for every block,
# snapshot and reply.


def _text_content(text: str, signature: str | None) -> TextContent:
    values = {"type": "text", "text": text, "text_signature": signature}
    content: TextContent = construct(TextContent, values, {"text", "text_signature"})
    return content


def _thinking_content(
    text: str, signature: str | None, redacted: bool | None = None
) -> ThinkingContent:
    values: dict[str, Any] = {
        "type": "thinking",
        "thinking": text,
        "thinking_signature": signature,
        "redacted": redacted,
    }
    given = {"thinking", "thinking_signature"}
    if redacted is not None:
        given.add("redacted")
    content: ThinkingContent = construct(ThinkingContent, values, given)
    return content


def _tool_call(
    id: str,
    name: str,
    arguments: dict[str, Any],
    signature: str | None,
    error: str | None = None,
    raw: str | None = None,
    *,
    final: bool = False,
) -> ToolCall:
    values = {
        "type": "toolCall",
        "id": id,
        "name": name,
        "arguments": arguments,
        "thought_signature": signature,
        "namespace": None,
        "arguments_error": None,
        "parse_error": error,
        "raw_arguments": raw,
    }
    given = {"id", "name", "arguments", "thought_signature"}
    if final:
        given.update(("parse_error", "raw_arguments"))
    call: ToolCall = construct(ToolCall, values, given)
    return call


def _empty_usage() -> Usage:
    """``Usage()``: all zero, nothing set explicitly (one per reply; validation costs more)."""
    cost = {
        "input": 0.0,
        "output": 0.0,
        "cache_read": 0.0,
        "cache_write": 0.0,
        "total": 0.0,
        "total_from_provider": None,
    }
    values = {
        "input": 0,
        "output": 0,
        "cache_read": 0,
        "cache_write": 0,
        "cache_write_1h": None,
        "reasoning": None,
        "total_tokens": 0,
        "cost": construct(Cost, cost, set()),
    }
    usage: Usage = construct(Usage, values, set())
    return usage


_MESSAGE_FIELDS = frozenset(AssistantMessage.model_fields)
_USAGE_GIVEN = frozenset(("input", "output", "cache_read", "cache_write", "total_tokens", "cost"))


# --- blocks and snapshots ------------------------------------------------------------------------


class _OpenBlock:
    """A content block still receiving chunks (appended only through the builder). Setting
    ``id``, ``name`` or ``signature`` shows in the events that follow, not in earlier ones."""

    __slots__ = ("_id", "_name", "_owner", "_signature", "chunks", "kind")

    def __init__(
        self,
        owner: MessageBuilder,
        kind: Literal["text", "thinking", "toolCall"],
        id: str = "",
        name: str = "",
        signature: str | None = None,
    ):
        self._owner = owner
        self.kind = kind
        self.chunks: list[str] = []
        self._id = id
        self._name = name
        self._signature = signature

    @property
    def id(self) -> str:
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        if value != self._id:
            self._id = value
            self._owner._layout = None

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        if value != self._name:
            self._name = value
            self._owner._layout = None

    @property
    def signature(self) -> str | None:
        return self._signature

    @signature.setter
    def signature(self, value: str | None) -> None:
        if value != self._signature:
            self._signature = value
            self._owner._layout = None

    def build(self, count: int | None = None, final: bool = False) -> AssistantContent:
        return self.build_from(count, self._id, self._name, self._signature, final)

    def build_from(
        self, count: int | None, id: str, name: str, signature: str | None, final: bool = False
    ) -> AssistantContent:
        text = "".join(self.chunks if count is None else self.chunks[:count])
        if self.kind == "text":
            return _text_content(text, signature)
        if self.kind == "thinking":
            return _thinking_content(text, signature)
        if final:
            arguments, error = parse_tool_arguments(text)
            return _tool_call(
                id, name, arguments, signature, error, text if error else None, final=True
            )
        return _tool_call(id, name, parse_partial_json(text), signature)


_NO_OPEN_BLOCKS: list[tuple[int, _OpenBlock, int, str, str, str | None]] = []
"""The ``_open`` of every layout taken while no block is open (never appended to)."""


class _Layout:
    """The reply at one moment except the chunk count of block ``active`` (-1: none), which each
    event carries itself: the blocks, the open ones' metadata and chunk counts, usage and response
    ids. Events share one layout until something other than that count changes."""

    __slots__ = ("_blocks", "_builder", "_count", "_ids", "_open", "_usage", "active")

    def __init__(self, builder: MessageBuilder, active: int) -> None:
        blocks = builder._blocks
        self._builder = builder
        self._blocks = blocks
        self._count = len(blocks)
        self._open = (
            [
                (i, block, len(block.chunks), block._id, block._name, block._signature)
                for i in builder._open
                if isinstance(block := blocks[i], _OpenBlock)
            ]
            if builder._open
            else _NO_OPEN_BLOCKS  # most layouts: between blocks (no comprehension to run)
        )
        self._usage = builder._usage
        self._ids = (builder._response_id, builder._response_model)
        self.active = active

    def materialize_at(self, chunks: int) -> AssistantMessage:
        """The partial reply, with ``chunks`` chunks in the active block."""
        active = self.active
        content: list[Any] = self._blocks[: self._count]
        for index, block, count, id, name, signature in self._open:
            content[index] = block.build_from(
                chunks if index == active else count, id, name, signature
            )
        response_id, response_model = self._ids
        return self._builder._message(
            content, self._usage, "stop", None, response_id, response_model
        )


class MessageBuilder:
    """Builds one assistant reply for ``model`` and pushes its events onto ``stream``."""

    def __init__(
        self,
        model: Model,
        stream: AssistantMessageEventStream,
        redactor: Callable[[], Redactor] | None = None,
    ) -> None:
        self.model = model
        self.stream = stream
        self.redactor = redactor
        """Makes the request's ``Redactor`` (called only when the reply fails)."""
        self._usage = _empty_usage()
        self._response_id: str | None = None
        self._response_model: str | None = None
        self.timestamp = now_ms()
        self._blocks: list[AssistantContent | _OpenBlock] = []
        self._open: list[int] = []
        self._layout: _Layout | None = None
        self._run: DeltaRun | None = None
        """The stream's run the last delta went into (the next may join it while it is live)."""
        self.started = False
        self.finished = False

    # --- state -----------------------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        return self._usage

    @usage.setter
    def usage(self, usage: Usage) -> None:
        if usage is not self._usage:
            self._usage = usage
            self._layout = None

    @property
    def response_id(self) -> str | None:
        return self._response_id

    @response_id.setter
    def response_id(self, value: str | None) -> None:
        if value != self._response_id:  # providers may repeat it on every chunk
            self._response_id = value
            self._layout = None

    @property
    def response_model(self) -> str | None:
        return self._response_model

    @response_model.setter
    def response_model(self, value: str | None) -> None:
        if value != self._response_model:
            self._response_model = value
            self._layout = None

    def open_blocks(self) -> list[tuple[int, _OpenBlock]]:
        return [(i, self.open_block(i)) for i in self._open]

    def open_block(self, index: int) -> _OpenBlock:
        block = self._blocks[index]
        if not isinstance(block, _OpenBlock):
            raise ValueError(f"content block {index} is not open")
        return block

    def set_usage(
        self, *, input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0
    ) -> None:
        """Replace the usage (and its cost). Called whenever the provider reports usage."""
        values: dict[str, Any] = {
            "input": input,
            "output": output,
            "cache_read": cache_read,
            "cache_write": cache_write,
            "cache_write_1h": None,
            "reasoning": None,
            "total_tokens": input + output + cache_read + cache_write,
            "cost": None,
        }
        usage: Usage = construct(Usage, values, set(_USAGE_GIVEN))
        values["cost"] = calculate_cost(self.model, usage)
        self.usage = usage

    def _message(
        self,
        content: list[Any],
        usage: Usage,
        stop_reason: StopReason,
        error_message: str | None = None,
        response_id: str | None = None,
        response_model: str | None = None,
    ) -> AssistantMessage:
        model = self.model
        values = {
            "role": "assistant",
            "content": content,
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "response_id": response_id,
            "response_model": response_model,
            "provider_thinking_level": None,
            "thinking_level": None,
            "diagnostics": None,
            "usage": usage,
            "stop_reason": stop_reason,
            "deferred": None,
            "error_message": error_message,
            "raw_stop_reason": None,
            "end_turn": None,
            "timestamp": self.timestamp,
            "duration_ms": None,
        }
        message: AssistantMessage = construct(AssistantMessage, values, set(_MESSAGE_FIELDS))
        return message

    def _final_message(
        self, stop_reason: StopReason, error_message: str | None = None
    ) -> AssistantMessage:
        return self._message(
            self.final_content(),
            self._usage,
            stop_reason,
            error_message,
            self._response_id,
            self._response_model,
        )

    def _layout_for(self, active: int) -> _Layout:
        """The current layout if it is still right for a delta into ``active``, else a new one."""
        layout = self._layout
        if layout is None or layout.active != active:
            layout = self._layout = _Layout(self, active)
        return layout

    # --- events ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.stream.push(partial_event(StartEvent, {"type": "start"}, self._layout_for(-1), 0))

    def _open_new(self, block: _OpenBlock) -> int:
        self.start()
        index = len(self._blocks)
        self._blocks.append(block)
        self._open.append(index)
        self._layout = None
        return index

    def _close(self, index: int) -> AssistantContent:
        block = self.open_block(index)
        final = block.build(final=True)
        self._blocks[index] = final
        self._open.remove(index)
        self._layout = None
        return final

    def _push_start(self, cls: type[Any], kind: str, index: int) -> None:
        fields = {"type": kind, "content_index": index}
        self.stream.push(partial_event(cls, fields, self._layout_for(index), 0))

    def text_start(self) -> int:
        index = self._open_new(_OpenBlock(self, "text"))
        self._push_start(TextStartEvent, "text_start", index)
        return index

    def text_delta(self, index: int, delta: str) -> None:
        # The three *_delta methods are spelled out: they run once per streamed chunk.
        chunks = self._blocks[index].chunks  # type: ignore[union-attr]
        chunks.append(delta)
        layout = self._layout
        run = self._run
        if (
            run is not None
            and run.live
            and run.source is layout
            and run.index == index
            and run.last == len(chunks) - 1
        ):
            run.last += 1  # the live run queued in the stream takes it (see DeltaRun.live)
            return
        if layout is None or layout.active != index:
            layout = self._layout = _Layout(self, index)
        self._run = self.stream.push_delta(TextDeltaEvent, "text_delta", index, layout, chunks)

    def text_end(self, index: int, signature: str | None = None) -> None:
        if signature is not None:
            self.open_block(index).signature = signature
        final = self._close(index)
        assert isinstance(final, TextContent)
        fields = {"type": "text_end", "content_index": index, "content": final.text}
        self.stream.push(partial_event(TextEndEvent, fields, self._layout_for(-1), 0))

    def thinking_start(self, signature: str | None = None) -> int:
        index = self._open_new(_OpenBlock(self, "thinking", signature=signature))
        self._push_start(ThinkingStartEvent, "thinking_start", index)
        return index

    def thinking_delta(self, index: int, delta: str) -> None:
        chunks = self._blocks[index].chunks  # type: ignore[union-attr]
        chunks.append(delta)
        layout = self._layout
        run = self._run
        if (
            run is not None
            and run.live
            and run.source is layout
            and run.index == index
            and run.last == len(chunks) - 1
        ):
            run.last += 1  # the live run queued in the stream takes it (see DeltaRun.live)
            return
        if layout is None or layout.active != index:
            layout = self._layout = _Layout(self, index)
        self._run = self.stream.push_delta(
            ThinkingDeltaEvent, "thinking_delta", index, layout, chunks
        )

    def thinking_end(self, index: int, signature: str | None = None) -> None:
        if signature is not None:
            self.open_block(index).signature = signature
        final = self._close(index)
        assert isinstance(final, ThinkingContent)
        fields = {"type": "thinking_end", "content_index": index, "content": final.thinking}
        self.stream.push(partial_event(ThinkingEndEvent, fields, self._layout_for(-1), 0))

    def redacted_thinking(self, signature: str, text: str = "[Reasoning redacted]") -> None:
        """A complete, opaque thinking block (Anthropic ``redacted_thinking``)."""
        index = self._open_new(_OpenBlock(self, "thinking"))
        self._push_start(ThinkingStartEvent, "thinking_start", index)
        self._blocks[index] = _thinking_content(text, signature, redacted=True)
        self._open.remove(index)
        self._layout = None
        fields = {"type": "thinking_end", "content_index": index, "content": text}
        self.stream.push(partial_event(ThinkingEndEvent, fields, self._layout_for(-1), 0))

    def toolcall_start(self, id: str, name: str) -> int:
        index = self._open_new(_OpenBlock(self, "toolCall", id=id, name=name))
        self._push_start(ToolCallStartEvent, "toolcall_start", index)
        return index

    def toolcall_delta(self, index: int, delta: str) -> None:
        chunks = self._blocks[index].chunks  # type: ignore[union-attr]
        chunks.append(delta)
        layout = self._layout
        run = self._run
        if (
            run is not None
            and run.live
            and run.source is layout
            and run.index == index
            and run.last == len(chunks) - 1
        ):
            run.last += 1  # the live run queued in the stream takes it (see DeltaRun.live)
            return
        if layout is None or layout.active != index:
            layout = self._layout = _Layout(self, index)
        self._run = self.stream.push_delta(
            ToolCallDeltaEvent, "toolcall_delta", index, layout, chunks
        )

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> None:
        """Close a tool call; ``arguments`` replaces the streamed text (APIs that send objects)."""
        if arguments is not None:
            block = self.open_block(index)
            final: AssistantContent = _tool_call(
                block._id, block._name, arguments, block._signature
            )
            self._blocks[index] = final
            self._open.remove(index)
            self._layout = None
        else:
            final = self._close(index)
        assert isinstance(final, ToolCall)
        fields = {"type": "toolcall_end", "content_index": index, "tool_call": final}
        self.stream.push(partial_event(ToolCallEndEvent, fields, self._layout_for(-1), 0))

    def end_open_blocks(self) -> None:
        """Close every block still open (in order), emitting its ``*_end`` event."""
        for index in list(self._open):
            kind = self.open_block(index).kind
            if kind == "text":
                self.text_end(index)
            elif kind == "thinking":
                self.thinking_end(index)
            else:
                self.toolcall_end(index)

    # --- terminal --------------------------------------------------------------------------------

    def final_content(self) -> list[AssistantContent]:
        return [b.build(final=True) if isinstance(b, _OpenBlock) else b for b in self._blocks]

    def done(self, stop_reason: Literal["stop", "length", "toolUse"]) -> AssistantMessage:
        """Finish successfully: close open blocks, push ``done``."""
        self.end_open_blocks()
        message = self._final_message(stop_reason)
        # The layout and the live run's snapshot refer back to the builder: no cycle outlives
        # the reply (it would wait for the cyclic GC: 20-odd objects a reply).
        self._layout = None
        self._run = None
        self.finished = True
        fields = {"type": "done", "reason": stop_reason, "message": message}
        self.stream.push(construct(DoneEvent, fields, set(fields)))
        return message

    def fail(self, error_message: str, *, aborted: bool = False) -> AssistantMessage:
        """Finish with an error, keeping whatever content arrived (open blocks are kept as-is).

        Every error text of every provider ends here, so this is where the request's credentials
        are scrubbed from it (error texts quote raw stream lines, URLs and error bodies)."""
        reason: Literal["error", "aborted"] = "aborted" if aborted else "error"
        redactor = self.redactor() if self.redactor is not None else Redactor()
        error_message = redactor.scrub(error_message)
        try:
            message = self._final_message(reason, error_message)
        except Exception as exc:  # a provider bug left a block unbuildable: still end the reply
            error_message = f"{error_message} (the partial reply was lost: {exc!r})"
            message = self._message(
                [], self._usage, reason, error_message, self._response_id, self._response_model
            )
        self._blocks = list(message.content)
        self._open = []
        self._layout = None
        self._run = None
        self.finished = True
        fields = {"type": "error", "reason": reason, "error": message}
        self.stream.push(construct(ErrorEvent, fields, set(fields)))
        return message
