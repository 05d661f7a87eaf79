"""``MessageBuilder``: how providers assemble a reply and emit its events.

A provider calls ``start()``, then ``text_start/text_delta/text_end`` (and the thinking and
tool-call twins), ``set_usage`` whenever usage arrives, and finally ``done(...)`` or ``fail(...)``.
The builder keeps the open blocks as lists of chunks, so appending is O(1); every event gets an
O(1) snapshot that is turned into an ``AssistantMessage`` only if somebody reads ``event.partial``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic_core import from_json

from .event_stream import AssistantMessageEventStream
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
)
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

__all__ = ["MessageBuilder", "calculate_cost", "parse_partial_json", "parse_tool_arguments"]


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Dollars for ``usage`` at ``model``'s per-million-token prices."""
    rates = model.cost
    inp = rates.input * usage.input / 1e6
    out = rates.output * usage.output / 1e6
    cr = rates.cache_read * usage.cache_read / 1e6
    cw = rates.cache_write * usage.cache_write / 1e6
    return Cost(input=inp, output=out, cache_read=cr, cache_write=cw, total=inp + out + cr + cw)


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


class _OpenBlock:
    __slots__ = ("chunks", "id", "kind", "name", "signature")

    def __init__(self, kind: Literal["text", "thinking", "toolCall"], id: str = "", name: str = ""):
        self.kind = kind
        self.chunks: list[str] = []
        self.signature: str | None = None
        self.id = id
        self.name = name

    def state(self) -> tuple[_OpenBlock, int, str, str, str | None]:
        """What a snapshot needs to rebuild this block as it is now."""
        return (self, len(self.chunks), self.id, self.name, self.signature)

    def build(self, count: int | None = None, final: bool = False) -> AssistantContent:
        return self.build_from(count, self.id, self.name, self.signature, final)

    def build_from(
        self, count: int | None, id: str, name: str, signature: str | None, final: bool = False
    ) -> AssistantContent:
        chunks = self.chunks if count is None else self.chunks[:count]
        text = "".join(chunks)
        if self.kind == "text":
            return TextContent.model_construct(text=text, text_signature=signature)
        if self.kind == "thinking":
            return ThinkingContent.model_construct(thinking=text, thinking_signature=signature)
        if final:
            arguments, error = parse_tool_arguments(text)
            return ToolCall.model_construct(
                id=id,
                name=name,
                arguments=arguments,
                thought_signature=signature,
                parse_error=error,
                raw_arguments=text if error else None,
            )
        return ToolCall.model_construct(
            id=id, name=name, arguments=parse_partial_json(text), thought_signature=signature
        )


class _Snapshot:
    """The builder's state at one event, in O(1): block count, the open blocks' chunk counts and
    metadata, usage and response ids — everything a later event could change."""

    __slots__ = ("_blocks", "_builder", "_count", "_ids", "_open", "_usage")

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._blocks = builder._blocks
        self._count = len(builder._blocks)
        self._open = tuple((i, builder.open_block(i).state()) for i in builder._open)
        self._usage = builder.usage
        self._ids = (builder.response_id, builder.response_model)

    def materialize(self) -> AssistantMessage:
        content: list[Any] = list(self._blocks[: self._count])
        for index, (block, count, id, name, signature) in self._open:
            content[index] = block.build_from(count, id, name, signature)
        message = self._builder._message(content, self._usage, stop_reason="stop")
        message.response_id, message.response_model = self._ids
        return message


class MessageBuilder:
    """Builds one assistant reply for ``model`` and pushes its events onto ``stream``."""

    def __init__(self, model: Model, stream: AssistantMessageEventStream) -> None:
        self.model = model
        self.stream = stream
        self.usage = Usage()
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.timestamp = now_ms()
        self._blocks: list[AssistantContent | _OpenBlock] = []
        self._open: list[int] = []
        self.started = False
        self.finished = False

    # --- state -----------------------------------------------------------------------------------

    @property
    def has_content(self) -> bool:
        """True once any content block was started (a retry would now splice two replies)."""
        return bool(self._blocks)

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
        usage = Usage.model_construct(
            input=input,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=input + output + cache_read + cache_write,
        )
        usage.cost = calculate_cost(self.model, usage)
        self.usage = usage

    def _message(
        self,
        content: list[Any],
        usage: Usage,
        stop_reason: StopReason,
        error_message: str | None = None,
    ) -> AssistantMessage:
        return AssistantMessage.model_construct(
            role="assistant",
            content=content,
            api=self.model.api,
            provider=self.model.provider,
            model=self.model.id,
            response_id=self.response_id,
            response_model=self.response_model,
            usage=usage,
            stop_reason=stop_reason,
            error_message=error_message,
            timestamp=self.timestamp,
        )

    def snapshot(self) -> _Snapshot:
        return _Snapshot(self)

    # --- events ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.stream.push(StartEvent._fast(_Snapshot(self)))

    def _open_new(self, block: _OpenBlock) -> int:
        self.start()
        index = len(self._blocks)
        self._blocks.append(block)
        self._open.append(index)
        return index

    def _close(self, index: int) -> AssistantContent:
        block = self.open_block(index)
        final = block.build(final=True)
        self._blocks[index] = final
        self._open.remove(index)
        return final

    def text_start(self) -> int:
        index = self._open_new(_OpenBlock("text"))
        self.stream.push(TextStartEvent._fast(_Snapshot(self), content_index=index))
        return index

    def text_delta(self, index: int, delta: str) -> None:
        self._blocks[index].chunks.append(delta)  # type: ignore[union-attr]
        self.stream.push(TextDeltaEvent._fast(_Snapshot(self), content_index=index, delta=delta))

    def text_end(self, index: int, signature: str | None = None) -> None:
        if signature is not None:
            self.open_block(index).signature = signature
        final = self._close(index)
        assert isinstance(final, TextContent)
        self.stream.push(
            TextEndEvent._fast(_Snapshot(self), content_index=index, content=final.text)
        )

    def thinking_start(self, signature: str | None = None) -> int:
        block = _OpenBlock("thinking")
        block.signature = signature
        index = self._open_new(block)
        self.stream.push(ThinkingStartEvent._fast(_Snapshot(self), content_index=index))
        return index

    def thinking_delta(self, index: int, delta: str) -> None:
        self._blocks[index].chunks.append(delta)  # type: ignore[union-attr]
        self.stream.push(
            ThinkingDeltaEvent._fast(_Snapshot(self), content_index=index, delta=delta)
        )

    def thinking_end(self, index: int, signature: str | None = None) -> None:
        if signature is not None:
            self.open_block(index).signature = signature
        final = self._close(index)
        assert isinstance(final, ThinkingContent)
        self.stream.push(
            ThinkingEndEvent._fast(_Snapshot(self), content_index=index, content=final.thinking)
        )

    def redacted_thinking(self, signature: str, text: str = "[Reasoning redacted]") -> None:
        """A complete, opaque thinking block (Anthropic ``redacted_thinking``)."""
        index = self._open_new(_OpenBlock("thinking"))
        self.stream.push(ThinkingStartEvent._fast(_Snapshot(self), content_index=index))
        self._blocks[index] = ThinkingContent.model_construct(
            thinking=text, thinking_signature=signature, redacted=True
        )
        self._open.remove(index)
        self.stream.push(ThinkingEndEvent._fast(_Snapshot(self), content_index=index, content=text))

    def toolcall_start(self, id: str, name: str) -> int:
        index = self._open_new(_OpenBlock("toolCall", id=id, name=name))
        self.stream.push(ToolCallStartEvent._fast(_Snapshot(self), content_index=index))
        return index

    def toolcall_delta(self, index: int, delta: str) -> None:
        self._blocks[index].chunks.append(delta)  # type: ignore[union-attr]
        self.stream.push(
            ToolCallDeltaEvent._fast(_Snapshot(self), content_index=index, delta=delta)
        )

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> None:
        """Close a tool call; ``arguments`` replaces the streamed text (APIs that send objects)."""
        if arguments is not None:
            block = self.open_block(index)
            final: AssistantContent = ToolCall.model_construct(
                id=block.id, name=block.name, arguments=arguments, thought_signature=block.signature
            )
            self._blocks[index] = final
            self._open.remove(index)
        else:
            final = self._close(index)
        assert isinstance(final, ToolCall)
        self.stream.push(
            ToolCallEndEvent._fast(_Snapshot(self), content_index=index, tool_call=final)
        )

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
        message = self._message(self.final_content(), self.usage, stop_reason)
        self.finished = True
        self.stream.push(
            DoneEvent.model_construct(type="done", reason=stop_reason, message=message)
        )
        return message

    def fail(self, error_message: str, *, aborted: bool = False) -> AssistantMessage:
        """Finish with an error, keeping whatever content arrived (open blocks are kept as-is)."""
        reason: Literal["error", "aborted"] = "aborted" if aborted else "error"
        message = self._message(self.final_content(), self.usage, reason, error_message)
        self._blocks = list(message.content)
        self._open = []
        self.finished = True
        self.stream.push(ErrorEvent.model_construct(type="error", reason=reason, error=message))
        return message
