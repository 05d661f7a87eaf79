"""The stateful ``Agent``: state reducer, listeners, queues, continue, abort, failures."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from pi_notebook.agent.agent import BUSY_MESSAGE, Agent
from pi_notebook.agent.events import AgentEvent
from pi_notebook.agent.types import AgentMessage, TurnEndContext
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    Context,
    FauxProvider,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
)
from tests.agent.test_agent_loop import make_tool, text_result, user


def make_agent(faux: FauxProvider, **options: Any) -> Agent:
    options.setdefault("model", faux.get_model())
    return Agent(**options)


def roles(agent: Agent) -> list[str]:
    return [m.role for m in agent.state.messages]


def texts(agent: Agent) -> list[str]:
    """The text of every user/assistant message of the transcript."""
    out = []
    for message in agent.state.messages:
        if isinstance(message, AssistantMessage):
            out.append(message.text)
        elif isinstance(message, UserMessage):
            content = message.content
            out.append(content if isinstance(content, str) else content[0].text)  # type: ignore[union-attr]
    return out


# --- construction and prompting ------------------------------------------------------------------


async def test_defaults_and_a_clear_error_without_a_model() -> None:
    agent = Agent()
    state = agent.state
    assert (state.system_prompt, state.thinking_level, state.tools, state.messages) == (
        "",
        "off",
        [],
        [],
    )
    assert state.model.id == "unknown" and not state.is_streaming
    assert state.streaming_message is None and state.pending_tool_calls == frozenset()
    assert agent.steering_mode == agent.follow_up_mode == "one-at-a-time"
    assert agent.tool_execution == "parallel" and agent.signal is None

    await agent.prompt("hello")
    assert roles(agent) == ["user", "assistant"]
    assert agent.state.error_message == "No API provider registered for api: unknown"


async def test_prompt_forms(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message(str(i)) for i in range(3)])
    agent = make_agent(faux)
    image = ImageContent(data="aGk=", mime_type="image/png")
    await agent.prompt("look", images=[image])
    first = agent.state.messages[0]
    assert isinstance(first, UserMessage) and first.content == [TextContent(text="look"), image]
    await agent.prompt(user("one message"))
    await agent.prompt([user("two"), user("messages")])
    assert roles(agent) == ["user", "assistant", "user", "assistant", "user", "user", "assistant"]

    with pytest.raises(ValueError, match="images can only be given with a text prompt"):
        await agent.prompt(user("x"), images=[image])
    with pytest.raises(TypeError, match="prompt takes a str"):
        await agent.prompt(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="queue mode"):
        Agent(steering_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_execution"):
        Agent(tool_execution="eventually")  # type: ignore[arg-type]


async def test_prompt_while_busy_is_refused_and_the_run_goes_on(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("first answer")])
    agent = make_agent(faux)
    refused: list[str] = []

    async def listener(event: AgentEvent) -> None:
        if event.type == "turn_start":
            for attempt in (agent.prompt("again"), agent.continue_run()):
                try:
                    await attempt
                except RuntimeError as exc:
                    refused.append(str(exc))

    agent.subscribe(listener)
    await agent.prompt("first")
    assert refused == [
        BUSY_MESSAGE,
        "Agent is already processing. Wait for completion before continuing.",
    ]
    assert texts(agent) == ["first", "first answer"]


async def test_thinking_level_and_options_reach_the_stream_function(faux: FauxProvider) -> None:
    seen: list[tuple[Any, ...]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append(
            (
                context.system_prompt,
                [t.name for t in context.tools or []],
                options.reasoning,
                options.session_id,
                options.api_key,
                options.extra.get("transport"),
            )
        )
        return faux_assistant_message("ok")

    faux.set_responses([reply, reply])
    noop = make_tool("noop", lambda p, s, u: "ok")
    agent = make_agent(
        faux,
        system_prompt="be brief",
        thinking_level="high",
        tools=[noop],
        get_api_key=lambda provider: f"key-for-{provider}",
    )
    agent.session_id = "session-1"
    agent.transport = "sse"
    await agent.prompt("go")
    agent.state.thinking_level = "off"
    await agent.prompt("again")
    assert seen == [
        ("be brief", ["noop"], "high", "session-1", "key-for-faux", "sse"),
        ("be brief", ["noop"], None, "session-1", "key-for-faux", "sse"),
    ]


# --- state and listeners -------------------------------------------------------------------------


async def test_state_follows_the_events(faux: FauxProvider) -> None:
    observed: list[tuple[str, Any, bool, frozenset[str], int]] = []

    async def slow(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> Any:
        await asyncio.sleep(0.001)
        return text_result("slept")

    agent = make_agent(faux, tools=[make_tool("slow", slow)])

    def listener(event: AgentEvent) -> None:
        message = agent.state.streaming_message
        text = message.text if isinstance(message, AssistantMessage) else message
        observed.append(
            (
                event.type,
                text,
                agent.state.is_streaming,
                agent.state.pending_tool_calls,
                len(agent.state.messages),
            )
        )

    agent.subscribe(listener)
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("slow", {}, id="a")]),
            faux_assistant_message("all done now, nothing else to say here"),
        ]
    )
    await agent.prompt("go")

    by_type: dict[str, list[tuple[Any, ...]]] = {}
    for row in observed:
        by_type.setdefault(row[0], []).append(row[1:])
    assert all(streaming for _, _, streaming, _, _ in observed)
    # the user prompt was appended (after the leading system message) before listeners ran
    assert by_type["message_end"][0][3] == 2
    assert by_type["tool_execution_start"][0][2] == frozenset({"a"})
    assert by_type["tool_execution_end"][0][2] == frozenset()
    updates = [text for text, _, _, _ in by_type["message_update"] if text]
    assert updates[-1] == "all done now, nothing else to say here" and len(updates[0]) < len(
        updates[-1]
    )
    assert by_type["agent_end"][0][0] is None
    assert not agent.state.is_streaming and agent.state.streaming_message is None
    assert roles(agent) == ["system", "user", "assistant", "toolResult", "assistant"]


async def test_listeners_run_in_order_sync_and_async_and_can_take_the_signal(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message("hi")])
    agent = make_agent(faux)
    calls: list[str] = []

    def first(event: AgentEvent) -> None:
        calls.append(f"1:{event.type}")

    async def second(event: AgentEvent, signal: AbortSignal | None) -> None:
        await asyncio.sleep(0)
        assert signal is agent.signal and signal is not None
        calls.append(f"2:{event.type}")

    def third(*args: Any) -> None:
        assert len(args) == 2
        calls.append(f"3:{args[0].type}")

    agent.subscribe(first)
    agent.subscribe(second)
    unsubscribe = agent.subscribe(third)
    await agent.prompt("go")
    assert calls[:6] == [
        "1:agent_start",
        "2:agent_start",
        "3:agent_start",
        "1:turn_start",
        "2:turn_start",
        "3:turn_start",
    ]
    unsubscribe()
    unsubscribe()  # harmless twice
    calls.clear()
    faux.set_responses([faux_assistant_message("again")])
    await agent.prompt("go")
    assert not any(c.startswith("3:") for c in calls)


async def test_changes_during_a_run_apply_to_the_next_run(faux: FauxProvider) -> None:
    prompts: list[str | None] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        prompts.append(context.system_prompt)
        if len(prompts) == 1:
            return faux_assistant_message([faux_tool_call("noop", {}, id="c")])
        return faux_assistant_message("ok")

    faux.set_responses([reply, reply, reply])
    agent = make_agent(faux, system_prompt="old", tools=[make_tool("noop", lambda p, s, u: "ok")])

    def listener(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            agent.state.system_prompt = "new"

    agent.subscribe(listener)
    await agent.prompt("go")
    await agent.prompt("go again")
    assert prompts == ["old", "old", "new"]


async def test_tools_and_messages_setters_copy(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    tools = [make_tool("a", lambda p, s, u: "a")]
    messages: list[AgentMessage] = [user("x")]
    agent.state.tools = tools
    agent.state.messages = messages
    tools.append(make_tool("b", lambda p, s, u: "b"))
    messages.clear()
    assert [t.name for t in agent.state.tools] == ["a"] and roles(agent) == ["user"]


# --- queues --------------------------------------------------------------------------------------


async def test_queue_management(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    assert not agent.has_queued_messages()
    agent.steer("left")
    agent.follow_up(user("then"))
    assert agent.has_queued_messages()
    agent.clear_steering_queue()
    assert agent.has_queued_messages()
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages()
    agent.steer("a")
    agent.follow_up("b")
    agent.clear_all_queues()
    assert not agent.has_queued_messages()
    agent.steering_mode = "all"
    agent.follow_up_mode = "all"
    assert (agent.steering_mode, agent.follow_up_mode) == ("all", "all")
    with pytest.raises(ValueError):
        agent.follow_up_mode = "never"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="expected a message"):
        agent.steer(42)  # type: ignore[arg-type]


async def test_follow_ups_in_all_mode_share_one_turn(faux: FauxProvider) -> None:
    seen: list[int] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append(len(context.messages))
        return faux_assistant_message("ok")

    faux.set_responses([reply, reply])
    agent = make_agent(faux, follow_up_mode="all")
    agent.follow_up("one")
    agent.follow_up("two")
    await agent.prompt("start")
    assert texts(agent) == ["start", "ok", "one", "two", "ok"]
    assert seen == [1, 4]


async def test_queued_steering_waits_for_the_next_run(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    agent = make_agent(faux)
    agent.steer("queued while idle")
    await agent.prompt("go")
    assert texts(agent) == ["go", "queued while idle", "a"]  # injected before the first call


# --- continue ------------------------------------------------------------------------------------


async def test_continue_rules(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    with pytest.raises(ValueError, match="No messages to continue from"):
        await agent.continue_run()

    agent.state.messages = [user("pending")]
    faux.set_responses([faux_assistant_message("answer")])
    await agent.continue_run()
    assert texts(agent) == ["pending", "answer"]

    with pytest.raises(ValueError, match="Cannot continue from message role: assistant"):
        await agent.continue_run()

    faux.set_responses([faux_assistant_message("to s1"), faux_assistant_message("to s2")])
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_run()  # s1 is the prompt; s2 is not pulled in before the first call
    assert texts(agent)[2:] == ["s1", "to s1", "s2", "to s2"]

    faux.set_responses([faux_assistant_message("to f")])
    agent.follow_up("f")
    await agent.continue_run()
    assert texts(agent)[-2:] == ["f", "to f"]


# --- abort, idle, reset --------------------------------------------------------------------------


async def test_abort_keeps_the_partial_reply_and_wait_for_idle(faux: FauxProvider) -> None:
    faux.tokens_per_second = 2000
    faux.set_responses([faux_assistant_message("word " * 4000)])
    agent = make_agent(faux)
    agent.abort()  # idle: nothing happens
    task = asyncio.ensure_future(agent.prompt("talk"))
    while not isinstance(agent.state.streaming_message, AssistantMessage) or not (
        agent.state.streaming_message.text
    ):
        await asyncio.sleep(0.001)
    agent.steer("kept")
    agent.abort()
    await agent.wait_for_idle()
    assert task.done() and task.exception() is None
    reply = agent.state.messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "aborted"
    assert 0 < len(reply.text) < len("word " * 4000)
    assert agent.state.error_message == "Request was aborted"
    assert agent.has_queued_messages()  # abort leaves the queues alone
    await agent.wait_for_idle()  # idle: returns at once


async def test_reset_forgets_the_transcript_and_queues(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("x", stop_reason="error", error_message="bad")])
    agent = make_agent(faux, system_prompt="keep me")
    await agent.prompt("go")
    agent.follow_up("later")
    assert agent.state.error_message == "bad"
    agent.reset()
    state = agent.state
    # pi 1.6: the replayed system prompt (and tool declarations) stay as the leading message
    assert [m.role for m in state.messages] == ["system"]
    assert (state.error_message, state.system_prompt) == (None, "keep me")
    assert not agent.has_queued_messages()
    with pytest.raises(ValueError, match="No messages to continue from"):
        await agent.continue_run()


async def test_error_message_is_cleared_by_the_next_run(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message("", stop_reason="error", error_message="overloaded"),
            faux_assistant_message("fine"),
        ]
    )
    agent = make_agent(faux)
    await agent.prompt("one")
    assert agent.state.error_message == "overloaded"
    await agent.prompt("two")
    assert agent.state.error_message is None


# --- run failures --------------------------------------------------------------------------------


async def test_a_throwing_listener_is_logged_and_the_run_goes_on(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture
) -> None:
    faux.set_responses([faux_assistant_message("hi")])
    agent = make_agent(faux)
    seen: list[str] = []
    after: list[str] = []

    def fragile(event: AgentEvent) -> None:
        seen.append(event.type)
        if event.type == "message_end" and event.message.role == "assistant":
            raise RuntimeError(f"listener broke on {event.type}")

    agent.subscribe(fragile)
    agent.subscribe(lambda event: after.append(event.type))
    with caplog.at_level(logging.WARNING, logger="pi_notebook.agent.agent"):
        await agent.prompt("go")
    assert seen[-3:] == ["message_end", "turn_end", "agent_end"]
    assert after == seen  # the next listener still heard every event
    assert roles(agent) == ["user", "assistant"]
    assert agent.state.messages[-1].text == "hi"  # type: ignore[union-attr]
    assert agent.state.error_message is None
    assert not agent.state.is_streaming and agent.signal is None
    assert "failed on message_end" in caplog.text and "the run goes on" in caplog.text
    assert "listener broke on message_end" in caplog.text


async def test_a_failure_after_abort_is_reported_as_aborted(faux: FauxProvider) -> None:
    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> None:
        agent.abort()
        raise RuntimeError("hook broke")

    faux.set_responses([faux_assistant_message("hi")])
    agent = make_agent(faux)
    agent.finish_turn = finish
    await agent.prompt("go")
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.stop_reason == "aborted"
    assert failure.error_message == "hook broke"


async def test_cancelling_the_prompt_stops_the_tools_and_aborts_the_run(
    faux: FauxProvider,
) -> None:
    signals: list[AbortSignal] = []
    cancelled: list[bool] = []
    started = asyncio.Event()

    async def wait(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> Any:
        assert signal is not None
        signals.append(signal)
        if len(signals) == 2:
            started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "unreachable"

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("wait", {}, id=i) for i in ("a", "b")])]
    )
    agent = make_agent(faux, tools=[make_tool("wait", wait)])
    task = asyncio.ensure_future(agent.prompt("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True, True]  # both parallel tools were cancelled …
    assert signals[0].aborted  # … and the run's signal fired for anything else still going
    assert not agent.state.is_streaming and agent.signal is None
    await agent.wait_for_idle()


# --- pi 1.6: peeking at the queues, the new hooks as Agent options -------------------------------


async def test_peek_queued_messages_shows_the_next_poll_without_taking_it(
    faux: FauxProvider,
) -> None:
    agent = make_agent(faux)
    assert agent.peek_queued_messages() == []
    agent.follow_up("later")
    assert [m.content[0].text for m in agent.peek_queued_messages()] == ["later"]  # type: ignore[union-attr,index]
    agent.steer("a")
    agent.steer("b")
    assert [m.content[0].text for m in agent.peek_queued_messages()] == ["a"]  # type: ignore[union-attr,index]
    agent.steering_mode = "all"
    assert [m.content[0].text for m in agent.peek_queued_messages()] == ["a", "b"]  # type: ignore[union-attr,index]
    assert agent.has_queued_messages()  # nothing was taken
    agent.clear_steering_queue()
    assert [m.content[0].text for m in agent.peek_queued_messages()] == ["later"]  # type: ignore[union-attr,index]


async def test_the_agent_passes_its_pi_16_hooks_to_every_run(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    calls: list[str] = []
    decisions = iter([{"action": "continue"}, {"action": "end"}])

    def prepare_request(request: Any, signal: AbortSignal | None) -> None:
        assert signal is agent.signal
        calls.append(f"request:{request.thinking_level}")

    def finish_turn(turn: TurnEndContext, signal: AbortSignal | None) -> Any:
        calls.append(f"finish:{turn.message.text}")
        return next(decisions)

    def prepare_next_turn(turn: TurnEndContext) -> None:
        calls.append("next")

    agent = make_agent(
        faux,
        thinking_level="medium",
        prepare_request=prepare_request,
        finish_turn=finish_turn,
        prepare_next_turn=prepare_next_turn,
    )
    await agent.prompt("go")
    assert calls == ["request:medium", "finish:one", "next", "request:medium", "finish:two"]
    assert roles(agent) == ["user", "assistant", "assistant"]
    assert [m.thinking_level for m in agent.state.messages[1:]] == ["medium", "medium"]  # type: ignore[union-attr]
