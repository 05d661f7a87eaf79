"""Hypothesis fuzzing of the four stream parsers: any sequence of JSON events, in the shapes of
each API with values of any type, ends the reply with exactly one terminal event and never
raises out of the stream (bounded: few examples, no deadline)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.ai import MessageBuilder, Model
from pi_notebook.ai.options import StreamOptions
from pi_notebook.ai.producer import produce_stream
from pi_notebook.ai.providers.anthropic_messages import AnthropicStreamParser
from pi_notebook.ai.providers.google_generative_ai import GeminiStreamParser
from pi_notebook.ai.providers.openai_completions import CompletionsStreamParser
from pi_notebook.ai.providers.openai_responses import ResponsesStreamParser

MODEL = Model(id="m", api="openai-completions", provider="custom", base_url="http://x.test")
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = [
    "type",
    "index",
    "delta",
    "text",
    "thinking",
    "partial_json",
    "content_block",
    "message",
    "content",
    "stop_reason",
    "usage",
    "choices",
    "finish_reason",
    "tool_calls",
    "candidates",
    "parts",
    "item",
    "output_index",
    "arguments",
    "error",
    "signature",
    "id",
    "name",
]
TYPES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "error",
    "text_delta",
    "thinking_delta",
    "input_json_delta",
    "signature_delta",
    "text",
    "thinking",
    "tool_use",
    "response.output_item.added",
    "response.output_text.delta",
    "response.completed",
    "response.function_call_arguments.delta",
    "response.output_item.done",
    "function_call",
]
shaped = st.recursive(
    scalars | st.sampled_from(TYPES),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS), inner | st.sampled_from(TYPES), max_size=5)
    ),
    max_leaves=12,
)
events = st.lists(st.dictionaries(st.sampled_from(KEYS), shaped | values, max_size=5), max_size=8)

PARSERS: list[Any] = [
    AnthropicStreamParser,
    CompletionsStreamParser,
    GeminiStreamParser,
    ResponsesStreamParser,
]
examples = 0


async def run(parser_class: Any, items: list[dict[str, Any]]) -> None:
    global examples
    examples += 1

    async def body(builder: MessageBuilder) -> None:
        parser = parser_class(builder)
        for item in items:
            if builder.finished:
                return
            parser.feed(item)
        if not builder.finished:
            parser.finish()

    stream = produce_stream(MODEL, StreamOptions(), body)
    seen = [event async for event in stream]
    final = await stream.result()
    terminal = [e for e in seen if e.type in ("done", "error")]
    assert len(terminal) == 1 and seen[-1] is terminal[0]
    assert final.stop_reason in ("stop", "length", "toolUse", "error", "aborted")


@SETTINGS
@given(st.sampled_from(PARSERS), events)
async def test_any_event_sequence_ends_in_one_terminal_event(
    parser_class: Any, items: list[dict[str, Any]]
) -> None:
    await run(parser_class, items)
