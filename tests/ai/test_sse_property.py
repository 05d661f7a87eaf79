"""Property tests: how the network splits a stream must never change what comes out of it.

Recorded Chat Completions streams are re-chunked at random byte positions and served through a
fake byte transport (``httpx.MockTransport`` behind the shared HTTP layer); the events and the final
message must be identical to the unsplit delivery, and nothing may raise. Cut-off prefixes must end
in one terminal event. Tool-call argument JSON split anywhere must parse live without raising and
end as the original object.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.ai import (
    AssistantMessageEventStream,
    Context,
    MessageBuilder,
    Model,
    UserMessage,
    stream,
)
from pi_notebook.ai.builder import parse_partial_json
from pi_notebook.ai.http import ProviderError
from pi_notebook.ai.providers.openai_completions import CompletionsStreamParser

MODEL = Model(
    id="smollm2", api="openai-completions", provider="custom", base_url="http://fake.test/v1"
)
CONTEXT = Context(messages=[UserMessage(content="hi")])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "model": "smollm2",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _events(items: list[Any], newline: str = "\n") -> bytes:
    out = []
    for item in items:
        if isinstance(item, bytes):
            out.append(item)
        else:
            data = json.dumps(item, ensure_ascii=False)
            out.append(f"data: {data}{newline}{newline}".encode())
    return b"".join(out)


_USAGE = {
    "id": "chatcmpl-7",
    "choices": [],
    "usage": {
        "completion_tokens": 14,
        "prompt_tokens": 37,
        "total_tokens": 51,
        "prompt_tokens_details": {"cached_tokens": 36},
    },
    "timings": {"prompt_n": 1, "predicted_n": 14, "predicted_per_second": 95.2},
}

RECORDED: dict[str, bytes] = {
    # shaped like the llama.cpp text capture (content null role chunk, usage with choices: [])
    "llama-text": _events(
        [
            _chunk({"role": "assistant", "content": None}),
            *(_chunk({"content": p}) for p in ["Hello", ",", " I", "'m", " here", " ✓"]),
            _chunk({}, "stop"),
            _USAGE,
            b"data: [DONE]\n\n",
        ]
    ),
    # shaped like the llama.cpp tool-call capture (arguments split inside strings)
    "llama-toolcall": _events(
        [
            _chunk({"role": "assistant", "content": None}),
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "ClTa9",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{"},
                        }
                    ]
                }
            ),
            *(
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in ['\n    "', "city", '":', ' "', "Par\\u00", "e9s", '"', "\n  }"]
            ),
            _chunk({}, "tool_calls"),
            _USAGE,
            b"data: [DONE]\n\n",
        ]
    ),
    # everything awkward at once: CRLF, comments, event lines, U+2028/U+0085, emoji, reasoning,
    # two interleaved calls, several calls per chunk
    "awkward": _events(
        [
            b":\r\n\r\n: OPENROUTER PROCESSING\r\n\r\n",
            _chunk({"role": "assistant", "reasoning_content": "th\u2028ink", "reasoning": "x"}),
            b"event: message\r\n",
            _chunk({"reasoning_content": " more 🧠"}),
            _chunk({"content": "a\u0085b\u2029c 🌍"}),
            _chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"k": "'}},
                        {"index": 1, "id": "b", "function": {"name": "g", "arguments": "[1"}},
                    ]
                }
            ),
            _chunk({"tool_calls": [{"index": 1, "function": {"arguments": ", 2]"}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'v\\"\\u00e9"}'}}]}),
            b": keep-alive\r\n\r\n",
            _chunk({}, "tool_calls"),
            b"data: [DONE]\r\n\r\n",
        ],
        newline="\r\n",
    ),
    # shaped like the llama.cpp mid-stream error capture
    "midstream-error": _events(
        [
            _chunk({"role": "assistant", "content": None}),
            _chunk({"content": "Par"}),
            {"error": {"code": 500, "message": "output does not match", "type": "server_error"}},
        ]
    ),
}


def _summary(event: Any) -> dict[str, Any]:
    data = event.to_json_dict()
    for key in ("partial", "message", "error"):
        if isinstance(data.get(key), dict):
            data[key].pop("timestamp", None)
    return data


async def _serve(pieces: list[bytes], cut: bool = False) -> list[dict[str, Any]]:
    """Run the provider over a fake transport that delivers ``pieces``; summaries of all events
    (partials included)."""

    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece
            await asyncio.sleep(0)
        if cut:
            raise httpx.RemoteProtocolError("peer closed connection")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    try:
        events = stream(MODEL, CONTEXT, http_client=client)
        return [_summary(event) async for event in events]
    finally:
        await client.aclose()


def _split(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(raw) + 1) for c in cuts})
    return [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True) if b > a]


@functools.cache
def _reference(name: str) -> list[dict[str, Any]]:
    """The events of ``name`` delivered in one piece."""
    return asyncio.run(_serve([RECORDED[name]]))


def test_reference_streams_end_as_recorded() -> None:
    finals = {name: _reference(name)[-1] for name in RECORDED}
    assert finals["llama-text"]["message"]["stopReason"] == "stop"
    assert finals["llama-toolcall"]["message"]["content"][0]["arguments"] == {"city": "Parés"}
    awkward = finals["awkward"]["message"]
    assert awkward["stopReason"] == "toolUse"
    assert [b["type"] for b in awkward["content"]] == ["thinking", "text", "toolCall", "toolCall"]
    assert finals["midstream-error"]["error"]["content"] == [{"type": "text", "text": "Par"}]


@SETTINGS
@given(name=st.sampled_from(sorted(RECORDED)), cuts=st.lists(st.integers(0, 10_000), max_size=40))
def test_rechunking_never_changes_events_or_final_message(name: str, cuts: list[int]) -> None:
    assert asyncio.run(_serve(_split(RECORDED[name], cuts))) == _reference(name)


@SETTINGS
@given(
    name=st.sampled_from(sorted(RECORDED)),
    length=st.integers(0, 10_000),
    cuts=st.lists(st.integers(0, 10_000), max_size=10),
    broken=st.booleans(),
)
def test_cut_off_streams_end_in_exactly_one_terminal_event(
    name: str, length: int, cuts: list[int], broken: bool
) -> None:
    raw = RECORDED[name]
    prefix = raw[: length % (len(raw) + 1)]
    events = asyncio.run(_serve(_split(prefix, cuts), cut=broken))
    kinds = [e["type"] for e in events]
    assert kinds[-1] in ("done", "error")
    assert kinds.count("done") + kinds.count("error") == 1
    if prefix == raw and not broken:
        assert events == _reference(name)


# --- tool-call argument JSON ---------------------------------------------------------------------

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)
_OBJECTS = st.dictionaries(_TEXT, _JSON, max_size=5)


async def _feed_tool_call(fragments: list[str], finish: str) -> list[Any]:
    events_stream = AssistantMessageEventStream()
    parser = CompletionsStreamParser(MessageBuilder(MODEL, events_stream))
    first = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
    parser.feed(_chunk({"tool_calls": [first]}))
    for fragment in fragments:
        parser.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}))
    parser.feed(_chunk({}, finish))
    parser.finish()
    events_stream.end()
    return [event async for event in events_stream]


@SETTINGS
@given(value=_OBJECTS, ascii_only=st.booleans(), cuts=st.lists(st.integers(0, 2_000)))
def test_split_tool_arguments_parse_live_and_end_as_the_original(
    value: dict[str, Any], ascii_only: bool, cuts: list[int]
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    points = sorted({c % (len(text) + 1) for c in cuts})
    fragments = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    events = asyncio.run(_feed_tool_call(fragments, "tool_calls"))
    for event in events:
        if event.type == "toolcall_delta":
            assert isinstance(event.partial.content[0].arguments, dict)
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert final.content[0].arguments == value
    assert final.content[0].parse_error is None


@SETTINGS
@given(value=_OBJECTS, ascii_only=st.booleans(), length=st.integers(0, 2_000))
def test_truncated_tool_arguments_never_raise(
    value: dict[str, Any], ascii_only: bool, length: int
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    prefix = text[: length % (len(text) + 1)]
    assert isinstance(parse_partial_json(prefix), dict)
    events = asyncio.run(
        _feed_tool_call([prefix[: len(prefix) // 2], prefix[len(prefix) // 2 :]], "length")
    )
    call = events[-1].message.content[0]
    assert isinstance(call.arguments, dict)
    assert (call.parse_error is None) == (prefix == text or not prefix.strip())


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return strategy | _JSON


_FRAGMENT = st.fixed_dictionaries(
    {},
    optional={
        "index": _maybe(st.integers(0, 3)),
        "id": _maybe(st.sampled_from(["a", "b", ""])),
        "function": _maybe(
            st.fixed_dictionaries({}, optional={"name": _maybe(_TEXT), "arguments": _maybe(_TEXT)})
        ),
    },
)
_DELTA = st.fixed_dictionaries(
    {},
    optional={
        "content": _maybe(_TEXT),
        "reasoning": _maybe(_TEXT),
        "reasoning_content": _maybe(_TEXT),
        "tool_calls": _maybe(st.lists(_maybe(_FRAGMENT), max_size=3)),
    },
)
_USAGE_KEYS = st.sampled_from(
    ["prompt_tokens", "completion_tokens", "prompt_tokens_details", "cached_tokens"]
)
_CHUNKISH = st.fixed_dictionaries(
    {},
    optional={
        "id": _JSON,
        "model": _JSON,
        "error": _JSON,
        "usage": _maybe(
            st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), _JSON)
        ),
        "choices": _maybe(
            st.lists(
                _maybe(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "delta": _maybe(_DELTA),
                            "finish_reason": _maybe(st.sampled_from(["stop", "tool_calls"])),
                            "usage": _JSON,
                        },
                    )
                ),
                max_size=2,
            )
        ),
    },
)


@SETTINGS
@given(
    payloads=st.lists(st.text(max_size=40) | _CHUNKISH.map(json.dumps), max_size=8),
    done=st.booleans(),
)
def test_arbitrary_payloads_raise_only_provider_errors(payloads: list[str], done: bool) -> None:
    parser = CompletionsStreamParser(MessageBuilder(MODEL, AssistantMessageEventStream()))
    try:
        for payload in payloads:
            parser.feed_data(payload)
        parser.saw_done = parser.saw_done or done
        parser.finish()
    except ProviderError:
        pass
