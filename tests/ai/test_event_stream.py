"""AssistantMessageEventStream: ordering, result(), backlog, snapshots that do not change later."""

from __future__ import annotations

import asyncio

from pi_notebook.ai import (
    AbortController,
    AssistantMessageEventStream,
    Context,
    MessageBuilder,
    Model,
    TextDeltaEvent,
    UserMessage,
    produce_stream,
)
from pi_notebook.ai.options import StreamOptions

MODEL = Model(id="m", api="test", provider="test")


def build(body) -> AssistantMessageEventStream:  # type: ignore[no-untyped-def]
    return produce_stream(MODEL, StreamOptions(), body)


async def test_events_then_result() -> None:
    async def body(out: MessageBuilder) -> None:
        i = out.text_start()
        out.text_delta(i, "Hel")
        out.text_delta(i, "lo")
        out.text_end(i)
        out.done("stop")

    stream = build(body)
    types = [e.type async for e in stream]
    assert types == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    result = await stream.result()
    assert result.text == "Hello" and result.stop_reason == "stop"


async def test_partials_are_frozen_at_their_event() -> None:
    async def body(out: MessageBuilder) -> None:
        i = out.text_start()
        for piece in ["a", "b", "c"]:
            out.text_delta(i, piece)
        out.text_end(i)
        j = out.toolcall_start("t1", "f")
        out.toolcall_delta(j, '{"x": 1')
        out.toolcall_delta(j, ', "y": 2}')
        out.toolcall_end(j)
        out.done("toolUse")

    events = [e async for e in build(body)]
    # read partials only after the whole stream went by: they must still show their own moment
    deltas = [e for e in events if isinstance(e, TextDeltaEvent)]
    assert [e.partial.text for e in deltas] == ["a", "ab", "abc"]
    tool_deltas = [e for e in events if e.type == "toolcall_delta"]
    assert tool_deltas[0].partial.content[1].arguments == {"x": 1}  # type: ignore[union-attr]
    assert tool_deltas[1].partial.content[1].arguments == {"x": 1, "y": 2}  # type: ignore[union-attr]
    assert events[0].partial.content == []  # type: ignore[union-attr]


async def test_result_without_iterating_and_backlog_is_kept() -> None:
    async def body(out: MessageBuilder) -> None:
        i = out.text_start()
        for _ in range(1000):
            out.text_delta(i, "x")
        out.done("stop")

    stream = build(body)
    assert (await stream.result()).text == "x" * 1000
    assert len([e async for e in stream]) == 1004


async def test_exception_in_body_becomes_error_event_with_partial() -> None:
    async def body(out: MessageBuilder) -> None:
        i = out.text_start()
        out.text_delta(i, "partial")
        raise RuntimeError("socket closed")

    events = [e async for e in build(body)]
    assert events[-1].type == "error"
    final = events[-1].error  # type: ignore[union-attr]
    assert final.stop_reason == "error" and final.error_message == "socket closed"
    assert final.text == "partial"


async def test_body_returning_without_terminal_event_is_an_error() -> None:
    async def body(out: MessageBuilder) -> None:
        out.start()

    result = await build(body).result()
    assert result.stop_reason == "error" and result.error_message


async def test_abort_cancels_body_and_keeps_partial() -> None:
    controller = AbortController()
    reached = asyncio.Event()

    async def body(out: MessageBuilder) -> None:
        i = out.text_start()
        out.text_delta(i, "so far")
        reached.set()
        await asyncio.sleep(30)

    stream = produce_stream(MODEL, StreamOptions(signal=controller.signal), body)
    await asyncio.wait_for(reached.wait(), 5)
    controller.abort()
    result = await asyncio.wait_for(stream.result(), 5)
    assert result.stop_reason == "aborted" and result.error_message == "Request was aborted"
    assert result.text == "so far"


async def test_already_aborted_signal_never_starts() -> None:
    controller = AbortController()
    controller.abort()
    started = False

    async def body(out: MessageBuilder) -> None:
        nonlocal started
        started = True

    result = await produce_stream(MODEL, StreamOptions(signal=controller.signal), body).result()
    assert result.stop_reason == "aborted" and not started


async def test_push_after_completion_is_ignored() -> None:
    stream = AssistantMessageEventStream()
    out = MessageBuilder(MODEL, stream)
    out.done("stop")
    out.start()
    events = [e async for e in stream]
    assert [e.type for e in events] == ["done"]


def test_stream_created_outside_a_loop_starts_lazily() -> None:
    async def body(out: MessageBuilder) -> None:
        out.done("stop")

    stream = build(body)  # no running loop here

    async def consume() -> str:
        return (await stream.result()).stop_reason

    assert asyncio.run(consume()) == "stop"


async def test_context_roundtrip_smoke() -> None:
    ctx = Context(system_prompt="s", messages=[UserMessage(content="hi")])
    assert ctx.to_json_dict()["systemPrompt"] == "s"


async def test_snapshots_keep_ids_and_names_of_their_moment() -> None:
    async def body(out: MessageBuilder) -> None:
        out.start()
        j = out.toolcall_start("", "")
        out.toolcall_delta(j, '{"a"')
        out.response_id = "resp_1"
        block = out.open_block(j)
        block.id, block.name = "call_1", "late_name"
        out.toolcall_delta(j, ": 1}")
        out.toolcall_end(j)
        out.done("toolUse")

    events = [e async for e in build(body)]
    first, second = [e for e in events if e.type == "toolcall_delta"]
    early = first.partial
    assert early.response_id is None
    assert (early.content[0].id, early.content[0].name) == ("", "")  # type: ignore[union-attr]
    late = second.partial
    assert late.response_id == "resp_1"
    assert (late.content[0].id, late.content[0].name) == ("call_1", "late_name")  # type: ignore[union-attr]
