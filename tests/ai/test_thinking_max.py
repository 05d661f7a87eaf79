"""Thinking level ``max`` (pi 1.6): offered only where a model's ``thinking_level_map`` names it,
clamped to the nearest supported level elsewhere, and budgeted like ``high`` by the providers that
take token budgets (pi-ai 1.6 ``clampReasoning``). The Chat Completions case goes over real HTTP."""

from __future__ import annotations

from pi_notebook.ai import Model, stream
from pi_notebook.ai.models import clamp_thinking_level, supported_thinking_levels
from pi_notebook.ai.options import StreamOptions
from pi_notebook.ai.providers.anthropic_request import thinking_budget
from pi_notebook.ai.providers.google_generative_ai import thinking_config
from pi_notebook.ai.providers.openai_responses import reasoning_effort
from tests.ai.test_openai_completions import HELLO, local_model, text_stream
from tests.loopback import LoopbackServer, Reply, sse_chunks


def thinker(level_map: dict[str, str | None] | None = None, api: str = "openai-responses") -> Model:
    return Model(id="t", api=api, provider="p", reasoning=True, thinking_level_map=level_map)


def test_max_is_supported_only_where_the_map_names_it() -> None:
    assert "max" not in supported_thinking_levels(thinker())
    assert "max" not in supported_thinking_levels(thinker({"xhigh": "xhigh"}))
    assert supported_thinking_levels(thinker({"xhigh": "xhigh", "max": "max"}))[-2:] == [
        "xhigh",
        "max",
    ]
    assert supported_thinking_levels(thinker({"max": None})) == [
        "off",
        "minimal",
        "low",
        "medium",
        "high",
    ]


def test_max_clamps_down_to_the_highest_supported_level() -> None:
    assert clamp_thinking_level(thinker(), "max") == "high"
    assert clamp_thinking_level(thinker({"xhigh": "xhigh"}), "max") == "xhigh"
    assert clamp_thinking_level(thinker({"max": "max"}), "max") == "max"
    assert clamp_thinking_level(thinker({"max": "max"}), "xhigh") == "max"  # upward first
    plain = Model(id="p", api="openai-responses", provider="p")
    assert clamp_thinking_level(plain, "max") == "off"


def test_budget_providers_treat_max_as_high() -> None:
    assert thinking_budget("max", 1000, 64_000) == thinking_budget("high", 1000, 64_000)
    google = Model(id="g", api="google-generative-ai", provider="google", reasoning=True)
    assert thinking_config(google, StreamOptions(reasoning="max")) == thinking_config(
        google, StreamOptions(reasoning="high")
    )


def test_responses_effort_for_max() -> None:
    assert reasoning_effort(thinker(), StreamOptions(reasoning="max")) == "high"
    assert reasoning_effort(thinker({"max": "max"}), StreamOptions(reasoning="max")) == "max"


async def test_chat_completions_sends_max_only_where_the_model_has_it() -> None:
    async with LoopbackServer() as server:
        for _ in range(3):
            server.add(Reply.sse(sse_chunks(text_stream("ok"), done=True)))
        for level_map in (None, {"xhigh": "xhigh"}, {"max": "max"}):
            model = local_model(server, reasoning=True, thinking_level_map=level_map)
            events = stream(model, HELLO, reasoning="max")
            async for _ in events:
                pass
            await events.result()
    efforts = [request.json().get("reasoning_effort") for request in server.requests]
    assert efforts == ["high", "xhigh", "max"]
