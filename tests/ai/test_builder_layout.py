"""MessageBuilder's shared snapshots: interleaved blocks, late metadata, and objects identical to
what ``model_construct`` would build."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    AssistantMessageEventStream,
    MessageBuilder,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from pi_notebook.ai.builder import loads_json

MODEL = Model(id="m", api="test", provider="test")


def _state(model: Any) -> tuple[Any, ...]:
    return (
        type(model),
        list(model.__dict__.items()),
        model.__pydantic_fields_set__,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


def _events(build: Any) -> list[Any]:
    stream = AssistantMessageEventStream()
    build(MessageBuilder(MODEL, stream))
    events = list(stream._backlog)  # a finished stream: everything is queued
    return events


def test_interleaved_deltas_into_two_open_blocks_keep_their_moment() -> None:
    def build(out: MessageBuilder) -> None:
        out.start()
        text = out.text_start()
        call = out.toolcall_start("c1", "f")
        out.text_delta(text, "a")
        out.toolcall_delta(call, '{"x": 1')
        out.text_delta(text, "b")
        out.text_delta(text, "c")
        out.toolcall_delta(call, ', "y": 2}')
        out.set_usage(input=3, output=4)
        out.text_delta(text, "d")
        out.done("toolUse")

    events = _events(build)
    seen = [
        (e.partial.content[0].text, e.partial.content[1].arguments, e.partial.usage.output)
        for e in events
        if e.type.endswith("_delta")
    ]
    assert seen == [
        ("a", {}, 0),
        ("a", {"x": 1}, 0),
        ("ab", {"x": 1}, 0),
        ("abc", {"x": 1}, 0),
        ("abc", {"x": 1, "y": 2}, 0),
        ("abcd", {"x": 1, "y": 2}, 4),
    ]
    final = events[-1].message
    assert final.text == "abcd" and final.tool_calls[0].arguments == {"x": 1, "y": 2}


def test_a_signature_set_on_an_open_block_shows_from_the_next_event_on() -> None:
    def build(out: MessageBuilder) -> None:
        i = out.thinking_start()
        out.thinking_delta(i, "hm")
        out.open_block(i).signature = "sig"
        out.thinking_delta(i, "m")
        out.done("stop")

    first, second = [e.partial.content[0] for e in _events(build) if e.type == "thinking_delta"]
    assert (first.thinking, first.thinking_signature) == ("hm", None)
    assert (second.thinking, second.thinking_signature) == ("hmm", "sig")


def test_built_objects_equal_model_construct() -> None:
    def build(out: MessageBuilder) -> None:
        t = out.text_start()
        out.text_delta(t, "hi")
        out.text_end(t, signature="ts")
        k = out.thinking_start(signature="ks")
        out.thinking_delta(k, "think")
        out.thinking_end(k)
        out.redacted_thinking("rs")
        c = out.toolcall_start("c1", "f")
        out.toolcall_delta(c, '{"a": 1}')
        out.toolcall_end(c)
        bad = out.toolcall_start("c2", "g")
        out.toolcall_delta(bad, "{oops")
        out.toolcall_end(bad)
        given = out.toolcall_start("c3", "h")
        out.toolcall_end(given, arguments={"b": 2})
        out.set_usage(input=1, output=2, cache_read=3, cache_write=4)
        out.done("toolUse")

    events = _events(build)
    message = events[-1].message
    text, thinking, redacted, call, broken, objects = message.content
    assert _state(text) == _state(TextContent.model_construct(text="hi", text_signature="ts"))
    assert _state(thinking) == _state(
        ThinkingContent.model_construct(thinking="think", thinking_signature="ks")
    )
    assert _state(redacted) == _state(
        ThinkingContent.model_construct(
            thinking="[Reasoning redacted]", thinking_signature="rs", redacted=True
        )
    )
    assert _state(call) == _state(
        ToolCall.model_construct(
            id="c1",
            name="f",
            arguments={"a": 1},
            thought_signature=None,
            parse_error=None,
            raw_arguments=None,
        )
    )
    assert broken.parse_error and broken.raw_arguments == "{oops"
    assert _state(broken) == _state(
        ToolCall.model_construct(
            id="c2",
            name="g",
            arguments={},
            thought_signature=None,
            parse_error=broken.parse_error,
            raw_arguments="{oops",
        )
    )
    assert _state(objects) == _state(
        ToolCall.model_construct(id="c3", name="h", arguments={"b": 2}, thought_signature=None)
    )
    usage = Usage.model_construct(input=1, output=2, cache_read=3, cache_write=4, total_tokens=10)
    usage.cost = message.usage.cost
    assert _state(message.usage) == _state(usage)
    expected = AssistantMessage.model_construct(
        **{name: getattr(message, name) for name in AssistantMessage.model_fields}
    )
    assert _state(message) == _state(expected)
    partial = events[2].partial  # text_delta: the open text block, built for this snapshot
    assert _state(partial.content[0]) == _state(
        TextContent.model_construct(text="hi", text_signature=None)
    )


async def test_next_batch_hands_over_queued_events_in_order_then_empty() -> None:
    stream = AssistantMessageEventStream()
    out = MessageBuilder(MODEL, stream)
    i = out.text_start()
    out.text_delta(i, "a")
    first = await stream.next_batch()
    assert [e.type for e in first] == ["start", "text_start", "text_delta"]
    waiting = asyncio.ensure_future(stream.next_batch())
    await asyncio.sleep(0)
    assert not waiting.done()  # nothing queued: it waits for the producer
    out.text_delta(i, "b")
    out.done("stop")
    second = await waiting
    assert [e.type for e in second] == ["text_delta", "text_end", "done"]
    assert len(await stream.next_batch()) == 0
    assert [e async for e in stream] == []


def test_deltas_share_one_snapshot_source_while_metadata_only_repeats() -> None:
    def build(out: MessageBuilder) -> None:
        i = out.text_start()
        for piece in "abcd":
            out.response_id = "resp_1"  # providers repeat these on every chunk
            out.response_model = None
            out.open_block(i).signature = None
            out.text_delta(i, piece)
        out.done("stop")

    deltas = [e for e in _events(build) if e.type == "text_delta"]
    assert [e.partial.text for e in deltas] == ["a", "ab", "abc", "abcd"]
    assert all(e.partial.response_id == "resp_1" for e in deltas)
    sources = {id(e.__pydantic_private__["_partial"]) for e in _events(build)[2:6]}
    assert len(sources) == 1  # O(1) per delta: no new snapshot while nothing else changed


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, -0, 1e400, "\\u00e9\\ud83d\\ude00"], "b": null, "a2": true}',
        '{"k": 1, "k": 2}',
        '"\\ud800"',  # a lone surrogate: jiter refuses it, json.loads parses it
        "NaN",
        " [] ",
    ],
)
def test_loads_json_gives_what_json_loads_gives(text: str) -> None:
    assert repr(loads_json(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ["", "{", '{"a":1,}', "{}x", "'a'", '"\\x41"'])
def test_loads_json_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads_json(text)


def test_a_reply_without_usage_reports_what_usage_defaults_to() -> None:
    def build(out: MessageBuilder) -> None:
        out.done("stop")

    usage = _events(build)[-1].message.usage
    assert _state(usage) == _state(Usage()) and _state(usage.cost) == _state(Usage().cost)
