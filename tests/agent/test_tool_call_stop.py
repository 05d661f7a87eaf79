"""Stopping one tool call (``Agent.cancel_tool_call``) and error results a tool returns
(``AgentToolResult.is_error``): the run goes on, the model sees the error, nothing is lost."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_notebook.agent import (
    CANCELLED_TOOL_MESSAGE,
    Agent,
    AgentToolResult,
    ToolCallStops,
)
from pi_notebook.agent.events import AgentEvent
from pi_notebook.agent.types import AfterToolCallContext, BeforeToolCallContext
from pi_notebook.ai import (
    AbortSignal,
    Context,
    FauxProvider,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
)
from pi_notebook.ai.faux import FauxState
from tests.agent.test_agent_loop import make_tool, result_text

PIXEL = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


def tool_results(agent: Agent) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}


class Seen:
    """A faux reply factory that records the tool results the model was sent."""

    def __init__(self, text: str = "done") -> None:
        self.text = text
        self.results: list[tuple[str, bool, str]] = []

    def __call__(
        self, context: Context, _options: StreamOptions, _state: FauxState, _model: Model
    ) -> Any:
        for m in context.messages:
            if isinstance(m, ToolResultMessage):
                self.results.append((m.tool_call_id, m.is_error, result_text(m)))
        return faux_assistant_message(self.text)


def stop_when_running(agent: Agent, call_id: str, running: asyncio.Event) -> asyncio.Task[bool]:
    async def stop() -> bool:
        await running.wait()
        return agent.cancel_tool_call(call_id)

    return asyncio.ensure_future(stop())


@pytest.mark.parametrize("cooperative", [True, False])
async def test_stopping_one_parallel_call_ends_it_and_the_run_goes_on(
    faux: FauxProvider, cooperative: bool
) -> None:
    """A tool that honours its signal and one that ignores it (abandoned after the grace) both
    end with the "aborted by the user" result; the other call and the next turn run."""
    slow_running = asyncio.Event()
    fast_may_finish = asyncio.Event()
    seen_signals: dict[str, AbortSignal | None] = {}

    async def slow(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        seen_signals["slow"] = signal
        slow_running.set()
        if cooperative:
            assert signal is not None
            await signal.wait()
            raise RuntimeError("interrupted")  # what a tool raises is replaced by the stop
        await asyncio.sleep(30)
        return "never"

    async def fast(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        seen_signals["fast"] = signal
        await fast_may_finish.wait()
        return "fast result"

    seen = Seen()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("slow", {}, id="s"), faux_tool_call("fast", {}, id="f")]
            ),
            seen,
        ]
    )
    agent = Agent(model=faux.get_model(), tools=[make_tool("slow", slow), make_tool("fast", fast)])
    ends: list[tuple[str, bool]] = []
    agent.subscribe(
        lambda e: (
            ends.append((e.tool_call_id, e.is_error)) if e.type == "tool_execution_end" else None
        )
    )
    stopper = stop_when_running(agent, "s", slow_running)
    run = asyncio.ensure_future(agent.prompt("go"))
    assert await stopper is True
    fast_may_finish.set()
    await run

    results = tool_results(agent)
    assert results["s"].is_error and result_text(results["s"]) == CANCELLED_TOOL_MESSAGE
    assert not results["f"].is_error and result_text(results["f"]) == "fast result"
    assert sorted(ends) == [("f", False), ("s", True)]
    assert seen.results == [("s", True, CANCELLED_TOOL_MESSAGE), ("f", False, "fast result")]
    assert agent.state.messages[-1].role == "assistant"  # the run went on to its next turn
    assert agent.state.error_message is None
    # each call had its own signal: only the stopped one fired
    slow_signal, fast_signal = seen_signals["slow"], seen_signals["fast"]
    assert slow_signal is not None and fast_signal is not None and slow_signal is not fast_signal
    assert slow_signal.aborted and not fast_signal.aborted
    assert agent.cancel_tool_call("s") is False  # over: nothing to stop


async def test_a_stopped_sequential_call_lets_the_next_call_run(faux: FauxProvider) -> None:
    running = asyncio.Event()
    ran: list[str] = []

    async def work(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        ran.append(params["n"])
        if params["n"] == "1":
            running.set()
            await asyncio.sleep(30)
        return f"work {params['n']}"

    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("work", {"n": "1"}, id="a"),
                    faux_tool_call("work", {"n": "2"}, id="b"),
                ]
            ),
            faux_assistant_message("done"),
        ]
    )
    tool = make_tool("work", work, properties={"n": {"type": "string"}})
    agent = Agent(model=faux.get_model(), tools=[tool], tool_execution="sequential")
    stopper = stop_when_running(agent, "a", running)
    await agent.prompt("go")
    assert await stopper is True
    results = tool_results(agent)
    assert result_text(results["a"]) == CANCELLED_TOOL_MESSAGE and results["a"].is_error
    assert result_text(results["b"]) == "work 2" and not results["b"].is_error
    assert ran == ["1", "2"]


async def test_a_call_waiting_for_approval_can_be_stopped(faux: FauxProvider) -> None:
    asking = asyncio.Event()
    executed: list[str] = []
    hook_signals: list[AbortSignal | None] = []

    async def ask(context: BeforeToolCallContext, signal: AbortSignal | None) -> None:
        hook_signals.append(signal)
        asking.set()
        await asyncio.sleep(30)  # the user never answers

    async def run(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        executed.append("ran")
        return "ran"

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("t", {}, id="x")]), faux_assistant_message("ok")]
    )
    agent = Agent(model=faux.get_model(), tools=[make_tool("t", run)], before_tool_call=ask)
    stopper = stop_when_running(agent, "x", asking)
    await agent.prompt("go")
    assert await stopper is True
    assert result_text(tool_results(agent)["x"]) == CANCELLED_TOOL_MESSAGE
    assert executed == []
    assert hook_signals[0] is not None and hook_signals[0].aborted


async def test_a_run_abort_still_reads_operation_aborted(faux: FauxProvider) -> None:
    running = asyncio.Event()

    async def wait(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        running.set()
        await asyncio.sleep(30)

    faux.set_responses([faux_assistant_message([faux_tool_call("wait", {}, id="w")])])
    agent = Agent(model=faux.get_model(), tools=[make_tool("wait", wait)])
    run = asyncio.ensure_future(agent.prompt("go"))
    await running.wait()
    agent.abort()
    await run
    assert result_text(tool_results(agent)["w"]) == "Operation aborted"


async def test_cancel_tool_call_is_false_when_nothing_runs(faux: FauxProvider) -> None:
    agent = Agent(model=faux.get_model())
    assert agent.cancel_tool_call("nope") is False
    stops = ToolCallStops()
    assert stops.stop("nope") is False and stops.running == frozenset()
    signal = stops.open("a", None)
    assert stops.running == {"a"} and stops.stop("a") and signal.aborted
    assert stops.stop("a") is False  # stopped once
    stops.close("a")
    assert not stops.stopped("a") and stops.running == frozenset()


# --- error results a tool returns ----------------------------------------------------------------


async def test_an_error_result_keeps_its_images_and_details(faux: FauxProvider) -> None:
    """pi 1.6's ``isError``: a tool reports a failure without raising and nothing is lost."""

    async def plot(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        return AgentToolResult(
            content=[TextContent(text="axis out of range"), PIXEL],
            details={"structuredContent": {"code": 7}},
            is_error=True,
        )

    seen_by_hook: list[bool] = []

    def after(context: AfterToolCallContext, _signal: AbortSignal | None) -> None:
        seen_by_hook.append(context.is_error)

    seen = Seen()
    faux.set_responses([faux_assistant_message([faux_tool_call("plot", {}, id="p")]), seen])
    agent = Agent(model=faux.get_model(), tools=[make_tool("plot", plot)], after_tool_call=after)
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("plot it")

    message = tool_results(agent)["p"]
    assert message.is_error
    assert message.content == [TextContent(text="axis out of range"), PIXEL]
    assert message.details == {"structuredContent": {"code": 7}}
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.is_error and end.result.is_error  # type: ignore[union-attr]
    assert seen_by_hook == [True]
    assert seen.results == [("p", True, "axis out of range")]


def test_is_error_reads_and_writes_pi_s_field_name() -> None:
    result = AgentToolResult.model_validate({"content": [], "isError": True})
    assert result.is_error
    assert result.model_dump(by_alias=True)["isError"] is True
    assert AgentToolResult().is_error is False


async def test_after_tool_call_can_clear_the_error_flag(faux: FauxProvider) -> None:
    from pi_notebook.agent.types import AfterToolCallResult

    async def fails(params: dict[str, Any], signal: AbortSignal | None, _u: Any) -> Any:
        return AgentToolResult(content=[TextContent(text="soft failure")], is_error=True)

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("t", {}, id="t1")]), faux_assistant_message("ok")]
    )
    agent = Agent(
        model=faux.get_model(),
        tools=[make_tool("t", fails)],
        after_tool_call=lambda c, s: AfterToolCallResult(is_error=False),
    )
    await agent.prompt("go")
    message = tool_results(agent)["t1"]
    assert not message.is_error and result_text(message) == "soft failure"
