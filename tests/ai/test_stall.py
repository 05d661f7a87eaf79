"""A stalled stream (headers, then silence): ``on_stall`` hears of it, and the timeout says how
long the server was silent. Over a real loopback server."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pi_notebook.agent import Agent
from pi_notebook.ai import Context, Model, UserMessage, stream
from pi_notebook.ai.options import StallNotice
from tests.loopback import LoopbackServer, Reply, sse_chunks

HELLO = Context(messages=[UserMessage(content="hi")])


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def model(server: LoopbackServer) -> Model:
    return Model(id="m", api="openai-completions", provider="custom", base_url=server.url + "/v1")


async def test_headers_then_silence_is_reported_and_the_timeout_says_how_long() -> None:
    notices: list[StallNotice] = []
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk({"content": "Hel"})]), hang=True))
        reply = stream(
            model(server),
            HELLO,
            stall_ms=100,
            on_stall=notices.append,
            timeout_ms=700,
            max_retries=0,
        )
        final = await reply.result()
    assert final.stop_reason == "error"
    assert final.content and final.content[0].text == "Hel"  # type: ignore[union-attr]
    assert final.error_message is not None
    match = re.search(r"sent nothing for (\d+\.\d) s \(read timeout\)", final.error_message)
    assert match, final.error_message
    assert float(match[1]) >= 0.7
    stalls = [n for n in notices if n.stalled]
    assert stalls and all(n.waited_ms >= 100 for n in stalls)
    # repeated while the silence lasts, with a growing wait; cleared when the request ends
    assert [n.waited_ms for n in stalls] == sorted(n.waited_ms for n in stalls)
    assert notices[-1].stalled is False


async def test_a_stall_that_ends_is_reported_as_resumed_and_async_hooks_are_awaited() -> None:
    notices: list[StallNotice] = []

    async def on_stall(notice: StallNotice) -> None:
        await asyncio.sleep(0)
        notices.append(notice)

    async with LoopbackServer() as server:
        chunks = sse_chunks([chunk({"content": "a"}), chunk({"content": "b"}, "stop")], done=True)
        server.add(Reply.sse(chunks, delay=0.3))
        final = await stream(model(server), HELLO, stall_ms=100, on_stall=on_stall).result()
        await asyncio.sleep(0.01)
    assert final.stop_reason == "stop", final.error_message
    assert [n.stalled for n in notices][:1] == [True]
    assert any(not n.stalled for n in notices)
    resumed = [i for i, n in enumerate(notices) if not n.stalled]
    assert all(notices[i - 1].stalled for i in resumed)  # each "resumed" follows a stall


async def test_a_failing_stall_hook_is_logged_and_the_reply_goes_on(caplog: Any) -> None:
    def on_stall(notice: StallNotice) -> None:
        raise RuntimeError("hook broke")

    async with LoopbackServer() as server:
        chunks = sse_chunks([chunk({"content": "ok"}, "stop")], done=True)
        server.add(Reply.sse(chunks, delay=0.25))
        final = await stream(model(server), HELLO, stall_ms=50, on_stall=on_stall).result()
    assert final.stop_reason == "stop"
    assert "on_stall failed" in caplog.text


async def test_without_a_hook_no_timer_runs_and_nothing_changes() -> None:
    async with LoopbackServer() as server:
        chunks = sse_chunks([chunk({"content": "ok"}, "stop")], done=True)
        server.add(Reply.sse(chunks))
        final = await stream(model(server), HELLO).result()
    assert final.stop_reason == "stop"
    assert final.content[0].text == "ok"  # type: ignore[union-attr]


async def test_an_agent_passes_its_on_stall_to_every_model_request() -> None:
    notices: list[StallNotice] = []
    async with LoopbackServer() as server:
        chunks = sse_chunks([chunk({"content": "a"}), chunk({"content": "b"}, "stop")], done=True)
        server.add(Reply.sse(chunks, delay=0.3))
        agent = Agent(model=model(server))
        agent.on_stall = notices.append
        agent.stall_ms = 100
        await agent.prompt("hi")
    assert agent.state.messages[-1].text == "ab"  # type: ignore[union-attr]
    assert notices and notices[0].stalled and notices[-1].stalled is False
