"""The faux provider (pi's registerFauxProvider): scripted replies streamed like a real model."""

from __future__ import annotations

import asyncio
import time

import pytest

from pi_notebook.ai import (
    AbortController,
    Context,
    FauxProvider,
    UserMessage,
    complete,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    get_api_provider,
    register_faux_provider,
    stream,
)

CTX = Context(messages=[UserMessage(content="hi")])


async def test_default_model_and_counts(faux: FauxProvider) -> None:
    model = faux.get_model()
    assert (model.id, model.name, model.provider) == ("faux-1", "Faux Model", "faux")
    assert model.input == ["text", "image"] and model.context_window == 128_000
    assert model.max_tokens == 16_384 and model.cost.input == 0
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    assert faux.pending_response_count == 2
    assert (await complete(model, CTX)).text == "one"
    assert faux.call_count == 1 and faux.pending_response_count == 1


async def test_streams_every_block_kind(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("ponder"),
                    faux_text("answer " * 10),
                    faux_tool_call("f", {"a": 1}, id="c"),
                ]
            )
        ]
    )
    events = [e async for e in stream(faux.get_model(), CTX)]
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert types.count("text_delta") >= 2
    for kind in ("thinking", "text", "toolcall"):
        assert f"{kind}_start" in types and f"{kind}_end" in types
    final = events[-1].message  # type: ignore[union-attr]
    assert final.stop_reason == "toolUse"
    assert final.tool_calls[0].arguments == {"a": 1}
    assert final.usage.output > 0 and final.usage.input > 0


async def test_empty_queue_is_an_error_event(faux: FauxProvider) -> None:
    result = await complete(faux.get_model(), CTX)
    assert result.stop_reason == "error"
    assert result.error_message == "No more faux responses queued"


async def test_factory_steps_see_context_and_state(faux: FauxProvider) -> None:
    def reply(context, options, state, model):  # type: ignore[no-untyped-def]
        return faux_assistant_message(f"call {state.call_count}: {len(context.messages)} messages")

    async def async_reply(context, options, state, model):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0)
        return faux_assistant_message("async")

    def broken(context, options, state, model):  # type: ignore[no-untyped-def]
        raise ValueError("factory broke")

    faux.set_responses([reply, async_reply, broken])
    assert (await complete(faux.get_model(), CTX)).text == "call 1: 1 messages"
    assert (await complete(faux.get_model(), CTX)).text == "async"
    failed = await complete(faux.get_model(), CTX)
    assert failed.stop_reason == "error" and failed.error_message == "factory broke"


async def test_scripted_error_and_aborted_replies(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message("half", stop_reason="error", error_message="529 overloaded"),
            faux_assistant_message("cut", stop_reason="aborted"),
        ]
    )
    events = [e async for e in stream(faux.get_model(), CTX)]
    assert events[-1].type == "error" and events[-1].reason == "error"  # type: ignore[union-attr]
    assert events[-1].error.error_message == "529 overloaded"  # type: ignore[union-attr]
    aborted = await complete(faux.get_model(), CTX)
    assert aborted.stop_reason == "aborted"


async def test_abort_mid_stream_keeps_partial() -> None:
    faux = register_faux_provider(tokens_per_second=200)
    try:
        faux.set_responses([faux_assistant_message("word " * 200)])
        controller = AbortController()
        s = stream(faux.get_model(), CTX, signal=controller.signal)
        seen = 0
        async for event in s:
            if event.type == "text_delta":
                seen += 1
                if seen == 3:
                    controller.abort()
        result = await s.result()
        assert result.stop_reason == "aborted" and result.error_message == "Request was aborted"
        assert 0 < len(result.text) < len("word " * 200)
    finally:
        faux.unregister()


async def test_tokens_per_second_paces_in_real_time() -> None:
    faux = register_faux_provider(tokens_per_second=400, token_size=(1, 1))
    try:
        faux.set_responses([faux_assistant_message("abcd" * 40)])  # 40 tokens -> ~0.1 s
        start = time.perf_counter()
        await complete(faux.get_model(), CTX)
        assert time.perf_counter() - start >= 0.08
    finally:
        faux.unregister()


async def test_session_id_simulates_prompt_caching(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message(t) for t in "abc"])
    first = await complete(faux.get_model(), CTX, session_id="s1")
    assert first.usage.cache_read == 0 and first.usage.cache_write > 0
    longer = Context(messages=[*CTX.messages, UserMessage(content="more words here")])
    second = await complete(faux.get_model(), longer, session_id="s1")
    assert second.usage.cache_read > 0
    # as pi 1.6's faux: a prompt token is read from or written to the cache, never also input
    uncached = await complete(faux.get_model(), longer)
    assert uncached.usage.input > 0 and uncached.usage.cache_read == 0
    for cached in (first, second):
        assert cached.usage.input == 0
    prompt = second.usage.cache_read + second.usage.cache_write
    assert prompt == uncached.usage.input
    assert second.usage.total_tokens == prompt + second.usage.output


async def test_on_response_is_called_first(faux: FauxProvider) -> None:
    seen = []
    faux.set_responses([faux_assistant_message("x")])
    await complete(faux.get_model(), CTX, on_response=lambda info, model: seen.append(info.status))
    assert seen == [200]


def test_unregister_removes_the_api() -> None:
    faux = register_faux_provider()
    faux.unregister()
    with pytest.raises(ValueError, match="No API provider registered"):
        get_api_provider(faux.api)


def test_faux_models_are_found_by_parse_model_until_unregistered() -> None:
    from pi_notebook.ai import parse_model

    faux = register_faux_provider(provider="faux-lookup")
    assert parse_model("faux-lookup/faux-1").api == faux.api
    faux.unregister()
    with pytest.raises(KeyError):
        parse_model("faux-lookup/faux-1")
