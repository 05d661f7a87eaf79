"""The low-level agent loop: entry points, hooks, tool execution rules, abort, ordering, cost."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pi_notebook.agent.events import (
    AgentEndEvent,
    AgentEvent,
    EventSink,
    MessageUpdateEvent,
    ToolExecutionUpdateEvent,
    TurnStartEvent,
)
from pi_notebook.agent.loop import (
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
    run_agent_loop_continue,
)
from pi_notebook.agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from pi_notebook.agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    RequestContext,
    RequestUpdate,
    TurnDecision,
    TurnEndContext,
    TurnUpdate,
)
from pi_notebook.ai import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    FauxProvider,
    MessageBuilder,
    Model,
    StartEvent,
    StreamOptions,
    SystemMessage,
    TextContent,
    TextDeltaEvent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    produce_stream,
)

# --- helpers (also used by test_agent.py) --------------------------------------------------------


def text_result(text: str, terminate: bool = False) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], terminate=terminate)


def result_text(message: ToolResultMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def make_tool(
    name: str,
    run: Callable[[dict[str, Any], AbortSignal | None, ToolUpdateCallback], Any],
    *,
    properties: dict[str, Any] | None = None,
    **options: Any,
) -> AgentTool:
    """An AgentTool whose ``execute`` awaits ``run(params, signal, on_update)``."""

    async def execute(
        call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        outcome = run(params, signal, on_update)
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
        return outcome if isinstance(outcome, AgentToolResult) else text_result(str(outcome))

    schema = {"type": "object", "properties": properties or {}}
    return AgentTool(name=name, description=name, parameters=schema, execute=execute, **options)


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


class Collector:
    """An awaited emit that records events; optionally reacts to each one."""

    def __init__(self, react: Callable[[AgentEvent], Any] | None = None) -> None:
        self.events: list[AgentEvent] = []
        self.react = react

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        if self.react is not None:
            outcome = self.react(event)
            if asyncio.iscoroutine(outcome):
                await outcome

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def tool_order(self) -> list[str]:
        """``start:id`` / ``update:id`` / ``end:id`` / ``result:id`` for the tool events."""
        out = []
        for e in self.events:
            if e.type.startswith("tool_execution_"):
                out.append(f"{e.type.removeprefix('tool_execution_')}:{e.tool_call_id}")  # type: ignore[union-attr]
            elif e.type == "message_end" and isinstance(e.message, ToolResultMessage):
                out.append(f"result:{e.message.tool_call_id}")
        return out


def config(faux: FauxProvider, **options: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=faux.get_model(), **options)


def tool_reply(*calls: tuple[str, dict[str, Any], str]) -> AssistantMessage:
    return faux_assistant_message([faux_tool_call(name, args, id=cid) for name, args, cid in calls])


# --- entry points --------------------------------------------------------------------------------


async def test_run_agent_loop_reports_pi_order_and_returns_new_messages(
    faux: FauxProvider,
) -> None:
    echo = make_tool("echo", lambda p, s, u: f"echo:{p['text']}", properties={"text": {}})
    faux.set_responses([tool_reply(("echo", {"text": "hi"}, "c1")), faux_assistant_message("ok")])
    history: list[AgentMessage] = [user("earlier")]
    context = AgentContext("sys", history, [echo])
    emit = Collector()

    new = await run_agent_loop([user("go")], context, config(faux), emit, stream_fn=faux.stream)

    assert [m.role for m in new] == ["user", "assistant", "toolResult", "assistant"]
    assert context.messages is history and len(history) == 1  # the caller's context is kept
    types = [t for t in emit.types if t != "message_update"]
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert emit.of("agent_end")[0].messages == new
    assert result_text(new[2]) == "echo:hi"  # type: ignore[arg-type]


async def test_agent_loop_iterates_the_same_events_and_gives_the_result(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message("one two three")])
    stream = agent_loop([user("go")], AgentContext(), config(faux), stream_fn=faux.stream)
    events = [event async for event in stream]
    assert events[0].type == "agent_start" and events[-1].type == "agent_end"
    assert any(e.type == "message_update" for e in events)
    new = await stream.result()
    assert [m.role for m in new] == ["user", "assistant"]
    assert new[1].text == "one two three"  # type: ignore[union-attr]


async def test_agent_loop_raises_the_run_failure_after_its_events(faux: FauxProvider) -> None:
    def broken(messages: list[AgentMessage]) -> list[Any]:
        raise ValueError("convert broke")

    stream = agent_loop([user("go")], AgentContext(), config(faux, convert_to_llm=broken))
    seen: list[str] = []
    with pytest.raises(ValueError, match="convert broke"):
        async for event in stream:
            seen.append(event.type)
    assert seen == ["agent_start", "turn_start", "message_start", "message_end"]
    with pytest.raises(ValueError, match="convert broke"):
        await stream.result()


async def test_continue_checks_the_transcript_before_running(faux: FauxProvider) -> None:
    with pytest.raises(ValueError, match="Cannot continue: no messages in context"):
        agent_loop_continue(AgentContext(), config(faux))
    reply = faux_assistant_message("done")
    with pytest.raises(ValueError, match="Cannot continue from message role: assistant"):
        agent_loop_continue(AgentContext(messages=[user("q"), reply]), config(faux))
    with pytest.raises(ValueError, match="no messages"):
        await run_agent_loop_continue(AgentContext(), config(faux), Collector())

    faux.set_responses([faux_assistant_message("answer")])
    emit = Collector()
    new = await run_agent_loop_continue(
        AgentContext(messages=[user("q")]), config(faux), emit, stream_fn=faux.stream
    )
    assert [m.role for m in new] == ["assistant"]
    assert emit.types[:3] == ["agent_start", "turn_start", "message_start"]


# --- one model call ------------------------------------------------------------------------------


async def test_hooks_shape_each_call_without_touching_the_working_context(
    faux: FauxProvider,
) -> None:
    seen: list[tuple[list[str], str | None, Any]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        roles: list[str] = [m.role for m in context.messages]
        seen.append((roles, options.api_key, options.extra.get("transport")))
        return faux_assistant_message("ok")

    keys = iter(["key-1", None])
    transformed: list[int] = []

    async def transform(messages: list[AgentMessage], signal: AbortSignal | None) -> Any:
        transformed.append(len(messages))
        return messages[-1:]  # only the latest message goes to the model

    faux.set_responses([reply, reply])
    cfg = config(
        faux,
        transform_context=transform,
        get_api_key=lambda provider: next(keys),
        api_key="fallback",
        stream_options={"transport": "sse"},
        get_follow_up_messages=iter([[user("more")], []]).__next__,
    )
    new = await run_agent_loop(
        [user("a"), user("b")], AgentContext(), cfg, Collector(), stream_fn=faux.stream
    )
    assert seen == [(["user"], "key-1", "sse"), (["user"], "fallback", "sse")]
    assert transformed == [2, 4]  # the whole working context, every call
    assert [m.role for m in new] == ["user", "user", "assistant", "user", "assistant"]


async def test_custom_roles_ride_along_but_stay_away_from_the_model(faux: FauxProvider) -> None:
    class Note(TextContent):
        role: str = "note"

    seen: list[list[str]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append([m.role for m in context.messages])
        return faux_assistant_message("ok")

    faux.set_responses([reply, reply])
    note = Note(text="for the UI only")
    emit = Collector()
    await run_agent_loop(
        [user("a"), note], AgentContext(), config(faux), emit, stream_fn=faux.stream
    )
    assert emit.of("message_end")[1].message is note
    assert emit.of("message_end")[1].to_json_dict()["message"]["role"] == "note"

    def keep_notes_as_user(messages: list[AgentMessage]) -> list[Any]:
        return [m if m.role != "note" else user(m.text) for m in messages]  # type: ignore[union-attr]

    cfg = config(faux, convert_to_llm=keep_notes_as_user)
    await run_agent_loop([note], AgentContext(), cfg, Collector(), stream_fn=faux.stream)
    assert seen == [["user"], ["user"]]


async def test_incremental_conversion_sees_every_message_in_order(faux: FauxProvider) -> None:
    """The default conversion is extended per turn; the model still sees the whole history."""
    seen: list[list[str]] = []
    noop = make_tool("noop", lambda p, s, u: "ok")

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append([m.role for m in context.messages])
        if len(seen) < 3:
            return tool_reply(("noop", {}, f"c{len(seen)}"))
        return faux_assistant_message("done")

    faux.set_responses([reply] * 3)
    await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), config(faux), Collector(), stream_fn=faux.stream
    )
    assert seen == [
        ["user"],
        ["user", "assistant", "toolResult"],
        ["user", "assistant", "toolResult", "assistant", "toolResult"],
    ]


async def test_message_updates_do_not_build_partials_nobody_reads() -> None:
    """Deltas cost O(1): a partial reply is only built when an event's message is read."""
    model = Model(id="m", api="scripted", provider="scripted")

    class CountingPartial:
        built = 0

        def __init__(self, text: str) -> None:
            self.text = text

        def materialize(self) -> AssistantMessage:
            CountingPartial.built += 1
            return faux_assistant_message(self.text)

    final = faux_assistant_message("x" * 200)
    events: list[Any] = [StartEvent(partial=CountingPartial(""))]
    events += [
        TextDeltaEvent(partial=CountingPartial("x" * (i + 1)), content_index=0, delta="x")
        for i in range(200)
    ]
    events.append(DoneEvent(reason="stop", message=final))

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        return AssistantMessageEventStream.of(events)

    emit = Collector()
    cfg = AgentLoopConfig(model=model)
    await run_agent_loop([user("go")], AgentContext(), cfg, emit, stream_fn=stream_fn)
    updates = emit.of("message_update")
    assert len(updates) == 200
    assert CountingPartial.built == 1  # the start event's partial, for message_start
    assert updates[99].message.text == "x" * 100  # built on demand, as it was at that delta
    assert CountingPartial.built == 2


async def test_error_reply_without_start_and_stream_without_terminal_event(
    faux: FauxProvider,
) -> None:
    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(), config(faux), emit, stream_fn=faux.stream
    )
    assert new[-1].stop_reason == "error"  # type: ignore[union-attr]
    assert new[-1].error_message == "No more faux responses queued"  # type: ignore[union-attr]
    assert emit.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]

    final = faux_assistant_message("whole")

    def unterminated(model: Model, context: Context, options: StreamOptions) -> Any:
        stream = AssistantMessageEventStream()
        stream.end(final)
        return stream

    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(), config(faux), emit, stream_fn=unterminated
    )
    assert new[-1] is final and emit.of("message_end")[-1].message is final


async def test_async_stream_functions_are_awaited(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("later")])

    async def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        await asyncio.sleep(0)
        return faux.stream(model, context, options)

    new = await run_agent_loop(
        [user("go")], AgentContext(), config(faux), Collector(), stream_fn=stream_fn
    )
    assert new[-1].text == "later"  # type: ignore[union-attr]


# --- turns: steering, follow-ups, stop and prepare hooks -----------------------------------------


async def test_steering_before_the_first_call_is_injected_after_the_prompt(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message("ok")])
    polls = iter([[user("steer")], []])
    emit = Collector()
    cfg = config(faux, get_steering_messages=lambda: next(polls))
    new = await run_agent_loop([user("go")], AgentContext(), cfg, emit, stream_fn=faux.stream)
    assert [m.role for m in new] == ["user", "user", "assistant"]
    assert emit.types[:6] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
    ]  # no second turn_start: the first turn is still open


async def test_finish_turn_end_stops_after_the_turn_end_without_polling(
    faux: FauxProvider,
) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    faux.set_responses([tool_reply(("noop", {}, "c1")), faux_assistant_message("never")])
    turns: list[TurnEndContext] = []
    order: list[str] = []
    polled = 0

    def steering() -> list[AgentMessage]:
        nonlocal polled
        polled += 1
        return []

    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str]:
        turns.append(turn)
        order.append("finish_turn")
        return {"action": "end"}

    cfg = config(faux, finish_turn=finish, get_steering_messages=steering)
    emit = Collector(lambda e: order.append(e.type) if e.type == "turn_end" else None)
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, emit, stream_fn=faux.stream
    )
    assert emit.types[-2:] == ["turn_end", "agent_end"]
    assert order == ["finish_turn", "turn_end"]  # decided before the turn is reported
    assert [m.role for m in new] == ["user", "assistant", "toolResult"]
    assert polled == 1  # only the initial poll
    assert [r.tool_call_id for r in turns[0].tool_results] == ["c1"]
    assert turns[0].new_messages is new and faux.pending_response_count == 1


async def test_finish_turn_continue_makes_one_more_request(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    decisions = iter([TurnDecision("continue"), None])
    seen: list[str] = []

    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> TurnDecision | None:
        seen.append(turn.message.text)
        return next(decisions)

    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(), config(faux, finish_turn=finish), emit, stream_fn=faux.stream
    )
    assert [m.role for m in new] == ["user", "assistant", "assistant"]
    assert seen == ["first", "second"]
    assert emit.types.count("turn_start") == 2 and emit.types.count("turn_end") == 2


async def test_finish_turn_continue_is_not_an_extra_turn_when_tools_follow(
    faux: FauxProvider,
) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    faux.set_responses([tool_reply(("noop", {}, "c1")), faux_assistant_message("done")])
    cfg = config(
        faux, finish_turn=lambda turn, signal: {"action": "continue"} if turn.tool_results else None
    )
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, Collector(), stream_fn=faux.stream
    )
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "assistant"]
    assert faux.pending_response_count == 0


async def test_finish_turn_sees_failed_turns_but_cannot_continue_them(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("x", stop_reason="error", error_message="bad")])
    seen: list[str] = []

    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str]:
        seen.append(turn.message.stop_reason)
        return {"action": "continue"}

    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(), config(faux, finish_turn=finish), emit, stream_fn=faux.stream
    )
    assert seen == ["error"] and [m.role for m in new] == ["user", "assistant"]
    assert emit.types[-2:] == ["turn_end", "agent_end"]


@pytest.mark.parametrize(
    ("decision", "error", "match"),
    [
        ({"action": "stop"}, ValueError, "'end' or 'continue'"),
        ({"next": "end"}, ValueError, "without 'action'"),
        (True, TypeError, "finish_turn must return"),
    ],
)
async def test_a_bad_finish_turn_decision_fails_clearly(
    faux: FauxProvider, decision: object, error: type[Exception], match: str
) -> None:
    faux.set_responses([faux_assistant_message("ok")])
    cfg = config(faux, finish_turn=lambda turn, signal: decision)
    with pytest.raises(error, match=match):
        await run_agent_loop([user("go")], AgentContext(), cfg, Collector(), stream_fn=faux.stream)


async def test_should_stop_after_turn_still_works_but_is_deprecated(faux: FauxProvider) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    faux.set_responses([tool_reply(("noop", {}, "c1")), faux_assistant_message("never")])
    with pytest.warns(DeprecationWarning, match="finish_turn"):
        cfg = config(faux, should_stop_after_turn=lambda turn: True)
    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, emit, stream_fn=faux.stream
    )
    assert emit.types[-2:] == ["turn_end", "agent_end"]
    assert [m.role for m in new] == ["user", "assistant", "toolResult"]


async def test_prepare_request_runs_before_every_request_and_swaps_what_it_returns(
    faux: FauxProvider,
) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    other = faux.get_model().model_copy(update={"id": "faux-2"})
    seen: list[tuple[str, str | None]] = []
    asked: list[tuple[str, str, int]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append((model.id, options.reasoning))
        return tool_reply(("noop", {}, "c1")) if len(seen) == 1 else faux_assistant_message("ok")

    def prepare(request: RequestContext, signal: AbortSignal | None) -> RequestUpdate | None:
        asked.append((request.model.id, request.thinking_level, len(request.context.messages)))
        if len(asked) == 2:
            return RequestUpdate(model=other, thinking_level="off")
        return None

    faux.set_responses([reply, reply])
    cfg = config(faux, prepare_request=prepare, reasoning="low")
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, Collector(), stream_fn=faux.stream
    )
    assert asked == [("faux-1", "low", 1), ("faux-1", "low", 3)]
    assert seen == [("faux-1", "low"), ("faux-2", None)]
    replies = [m for m in new if isinstance(m, AssistantMessage)]
    assert [m.thinking_level for m in replies] == ["low", "off"]  # the level each was asked with


async def test_prepare_next_turn_runs_only_when_another_turn_starts(faux: FauxProvider) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    faux.set_responses([tool_reply(("noop", {}, "c1")), faux_assistant_message("done")])
    order: list[str] = []

    def prepare(turn: TurnEndContext) -> TurnUpdate:
        order.append(f"prepare:{turn.message.stop_reason}")
        return TurnUpdate(messages=[user("note from prepare")])

    emit = Collector(lambda e: order.append(e.type) if "turn" in e.type else None)
    new = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[noop]),
        config(faux, prepare_next_turn=prepare),
        emit,
        stream_fn=faux.stream,
    )
    assert order == ["turn_start", "turn_end", "prepare:toolUse", "turn_start", "turn_end"]
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "user", "assistant"]
    assert result_text(new[2]) == "ok" and new[3].content[0].text == "note from prepare"  # type: ignore[union-attr,index,arg-type]


async def test_a_length_stop_does_not_run_its_tool_calls(faux: FauxProvider) -> None:
    ran: list[str] = []
    noop = make_tool("noop", lambda p, s, u: ran.append("ran") or "ok")
    cut = tool_reply(("noop", {}, "c1"), ("noop", {}, "c2")).model_copy(
        update={"stop_reason": "length"}
    )
    faux.set_responses([cut, faux_assistant_message("retried")])
    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), config(faux), emit, stream_fn=faux.stream
    )
    assert ran == []
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    results = [m for m in new if isinstance(m, ToolResultMessage)]
    assert all(r.is_error and r.duration_ms is None for r in results)
    assert result_text(results[0]) == (
        'Tool call "noop" was not executed: the response hit the output token limit, so its '
        "arguments may be truncated. Re-issue the tool call with complete arguments."
    )
    assert emit.tool_order() == [
        *("start:c1", "end:c1", "result:c1"),
        *("start:c2", "end:c2", "result:c2"),
    ]


async def test_tool_results_record_how_long_the_tool_ran(faux: FauxProvider) -> None:
    async def slow(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        await asyncio.sleep(0.02)
        return "ok"

    tools = [make_tool("slow", slow), make_tool("boom", lambda p, s, u: 1 / 0)]
    faux.set_responses(
        [
            tool_reply(("slow", {}, "c1"), ("boom", {}, "c2"), ("gone", {}, "c3")),
            faux_assistant_message("ok"),
        ]
    )
    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=tools), config(faux), emit, stream_fn=faux.stream
    )
    results = {m.tool_call_id: m for m in new if isinstance(m, ToolResultMessage)}
    ends = {e.tool_call_id: e for e in emit.of("tool_execution_end")}
    assert results["c1"].duration_ms is not None and results["c1"].duration_ms >= 15
    assert results["c2"].is_error and results["c2"].duration_ms is not None  # it ran and raised
    assert results["c3"].duration_ms is None  # never ran: unknown tool
    assert [ends[c].duration_ms for c in ("c1", "c2", "c3")] == [
        results[c].duration_ms for c in ("c1", "c2", "c3")
    ]
    assert results["c1"].to_json_dict()["durationMs"] == results["c1"].duration_ms


async def test_prepare_next_turn_swaps_model_thinking_and_context(faux: FauxProvider) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    other = faux.get_model().model_copy(update={"id": "faux-2"})
    seen: list[tuple[str, str | None, list[str]]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append((model.id, options.reasoning, [m.role for m in context.messages]))
        return tool_reply(("noop", {}, "c1")) if len(seen) == 1 else faux_assistant_message("ok")

    def prepare(turn: TurnEndContext) -> TurnUpdate:
        fresh = AgentContext("new system", [user("summary")], turn.context.tools)
        return TurnUpdate(context=fresh, model=other, thinking_level="high")

    faux.set_responses([reply, reply])
    cfg = config(faux, prepare_next_turn=prepare, reasoning="low")
    await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, Collector(), stream_fn=faux.stream
    )
    assert seen == [("faux-1", "low", ["user"]), ("faux-2", "high", ["user"])]


async def test_a_hook_returning_the_wrong_type_fails_the_run(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("ok")])
    cfg = config(faux, prepare_request=lambda request, signal: {"model": None})
    with pytest.raises(TypeError, match="RequestUpdate"):
        await run_agent_loop([user("go")], AgentContext(), cfg, Collector(), stream_fn=faux.stream)


async def test_prepare_next_turn_returning_the_wrong_type_fails_the_run(
    faux: FauxProvider,
) -> None:
    noop = make_tool("noop", lambda p, s, u: "ok")
    faux.set_responses([tool_reply(("noop", {}, "c1")), faux_assistant_message("ok")])
    cfg = config(faux, prepare_next_turn=lambda turn: {"model": None})
    with pytest.raises(TypeError, match="TurnUpdate"):
        await run_agent_loop(
            [user("go")], AgentContext(tools=[noop]), cfg, Collector(), stream_fn=faux.stream
        )


# --- tool execution ------------------------------------------------------------------------------


def sleeper(delays: dict[str, float], log: list[str] | None = None) -> AgentTool:
    async def run(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> Any:
        name = params["name"]
        on_update(text_result(f"{name} started"))
        if log is not None:
            log.append(f"run:{name}")
        await asyncio.sleep(delays[name])
        return f"{name} done"

    return make_tool("sleep", run, properties={"name": {"type": "string"}})


async def test_parallel_ends_in_completion_order_results_in_call_order(
    faux: FauxProvider,
) -> None:
    tool = sleeper({"slow": 0.03, "fast": 0.001})
    faux.set_responses(
        [
            tool_reply(("sleep", {"name": "slow"}, "a"), ("sleep", {"name": "fast"}, "b")),
            faux_assistant_message("ok"),
        ]
    )
    emit = Collector()
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), config(faux), emit, stream_fn=faux.stream
    )
    assert emit.tool_order() == [
        "start:a",
        "start:b",
        "update:a",
        "update:b",
        "end:b",
        "end:a",
        "result:a",
        "result:b",
    ]
    turn_end = emit.of("turn_end")[0]
    assert [r.tool_call_id for r in turn_end.tool_results] == ["a", "b"]


async def test_one_sequential_tool_makes_the_batch_sequential(faux: FauxProvider) -> None:
    log: list[str] = []
    tool = sleeper({"slow": 0.01, "fast": 0.0}, log)
    serial = make_tool("serial", lambda p, s, u: "s", execution_mode="sequential")
    faux.set_responses(
        [
            tool_reply(
                ("sleep", {"name": "slow"}, "a"),
                ("serial", {}, "s"),
                ("sleep", {"name": "fast"}, "b"),
            ),
            faux_assistant_message("ok"),
        ]
    )
    emit = Collector()
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool, serial]), config(faux), emit, stream_fn=faux.stream
    )
    assert emit.tool_order() == [
        "start:a",
        "update:a",
        "end:a",
        "result:a",
        "start:s",
        "end:s",
        "result:s",
        "start:b",
        "update:b",
        "end:b",
        "result:b",
    ]


async def test_failures_become_error_results_with_the_exception_text(
    faux: FauxProvider,
) -> None:
    ran: list[str] = []

    def boom(params: dict[str, Any], signal: Any, on_update: Any) -> Any:
        ran.append("boom")
        raise KeyError("missing thing")

    def wrong(params: dict[str, Any], signal: Any, on_update: Any) -> Any:
        ran.append("wrong")
        return text_result("fine")

    async def wrong_type(call_id: str, params: dict[str, Any], signal: Any, on_update: Any) -> Any:
        return "a plain string"

    tools = [
        make_tool("boom", boom),
        make_tool("strict", wrong, properties={"n": {"type": "integer"}}, prepare_arguments=None),
        AgentTool(name="loose", description="", execute=wrong_type),
    ]
    tools[1].parameters["required"] = ["n"]
    calls = [("boom", "t", "{}"), ("strict", "v", '{"n": "x"}'), ("strict", "j", '{"n": 1')]
    calls += [("ghost", "g", "{}"), ("loose", "l", "{}")]

    async def body(out: MessageBuilder) -> None:
        for name, call_id, arguments in calls:
            index = out.toolcall_start(call_id, name)
            out.toolcall_delta(index, arguments)  # "j" streams invalid JSON
            out.toolcall_end(index)
        out.done("toolUse")

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        if context.messages[-1].role != "toolResult":
            return produce_stream(model, options, body)
        return faux.stream(model, context, options)

    faux.set_responses([faux_assistant_message("ok")])
    emit = Collector()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=tools), config(faux), emit, stream_fn=stream_fn
    )
    results = {m.tool_call_id: m for m in new if isinstance(m, ToolResultMessage)}
    assert {k: r.is_error for k, r in results.items()} == dict.fromkeys("tvjgl", True)
    assert result_text(results["t"]) == "'missing thing'"
    assert result_text(results["v"]).startswith('Validation failed for tool "strict":\n  - n:')
    assert result_text(results["j"]).startswith('Invalid arguments for tool "strict": invalid JSON')
    assert result_text(results["g"]) == "Tool ghost not found"
    assert result_text(results["l"]) == "Tool loose returned str, expected an AgentToolResult"
    assert ran == ["boom"]  # neither invalid call ran
    assert [e.is_error for e in emit.of("tool_execution_end")] == [True] * 5
    assert results["g"].details == {}


async def test_prepare_arguments_and_validation_feed_the_tool(faux: FauxProvider) -> None:
    seen: list[dict[str, Any]] = []

    def run(params: dict[str, Any], signal: Any, on_update: Any) -> str:
        seen.append(params)
        return "ok"

    tool = make_tool(
        "count",
        run,
        properties={"n": {"type": "integer"}},
        prepare_arguments=lambda raw: {"n": raw.get("count", raw.get("n"))},
    )
    faux.set_responses([tool_reply(("count", {"count": "7"}, "c")), faux_assistant_message("ok")])
    emit = Collector()
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), config(faux), emit, stream_fn=faux.stream
    )
    assert seen == [{"n": 7}]
    assert emit.of("tool_execution_start")[0].args == {"count": "7"}  # raw in events


async def test_before_and_after_hooks(faux: FauxProvider) -> None:
    tool = make_tool("echo", lambda p, s, u: text_result(f"echo:{p['text']}", terminate=False))
    contexts: list[Any] = []

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> Any:
        contexts.append((ctx, ctx.context.messages[-1] is ctx.assistant_message))
        if ctx.args["text"] == "raise":
            raise RuntimeError("hook broke")
        if ctx.args["text"] == "block":
            return BeforeToolCallResult(block=True)
        return None

    def after(ctx: AfterToolCallContext, signal: AbortSignal | None) -> Any:
        if ctx.args["text"] == "details":
            return AfterToolCallResult(details={"seen": ctx.is_error})
        if ctx.args["text"] == "after-raise":
            raise ValueError("after broke")
        return None

    texts = ["ok", "raise", "block", "details", "after-raise"]
    faux.set_responses(
        [
            tool_reply(*[("echo", {"text": t}, t) for t in texts]),
            faux_assistant_message("ok"),
        ]
    )
    cfg = config(faux, before_tool_call=before, after_tool_call=after)
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), cfg, Collector(), stream_fn=faux.stream
    )
    results = {m.tool_call_id: m for m in new if isinstance(m, ToolResultMessage)}
    assert (result_text(results["ok"]), results["ok"].is_error) == ("echo:ok", False)
    assert (result_text(results["raise"]), results["raise"].is_error) == ("hook broke", True)
    assert result_text(results["block"]) == "Tool execution was blocked"
    assert result_text(results["details"]) == "echo:details"  # content kept, details replaced
    assert results["details"].details == {"seen": False} and not results["details"].is_error
    assert (result_text(results["after-raise"]), results["after-raise"].is_error) == (
        "after broke",
        True,
    )
    assert contexts[0][0].assistant_message is new[1]
    assert all(last for _, last in contexts)  # the reply is in the context the hook sees


async def test_terminate_needs_every_result_to_ask_for_it(faux: FauxProvider) -> None:
    tool = make_tool("t", lambda p, s, u: text_result("x", terminate=p.get("stop", False)))

    def after(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    faux.set_responses([tool_reply(("t", {}, "a"), ("t", {"stop": True}, "b"))])
    emit = Collector()
    cfg = config(faux, after_tool_call=after)  # the override makes both terminate
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), cfg, emit, stream_fn=faux.stream
    )
    assert emit.types[-2:] == ["turn_end", "agent_end"] and faux.call_count == 1
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "toolResult"]

    faux.set_responses(
        [tool_reply(("t", {}, "a"), ("t", {"stop": True}, "b")), faux_assistant_message("more")]
    )
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), config(faux), Collector(), stream_fn=faux.stream
    )
    assert faux.call_count == 3  # a mixed batch goes on to another model call


async def test_updates_arrive_in_order_and_late_ones_are_dropped(faux: FauxProvider) -> None:
    keep: list[ToolUpdateCallback] = []

    async def run(params: dict[str, Any], signal: Any, on_update: ToolUpdateCallback) -> str:
        keep.append(on_update)
        for i in range(3):
            on_update(text_result(f"{params['name']}{i}"))
            await asyncio.sleep(0)
        return "done"

    slow_listener_calls: list[str] = []

    async def react(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionUpdateEvent):
            await asyncio.sleep(0.001)  # a slow listener: updates queue up meanwhile
            slow_listener_calls.append(result_text_of(event.partial_result))

    tool = make_tool("p", run, properties={"name": {"type": "string"}})
    faux.set_responses(
        [
            tool_reply(("p", {"name": "a"}, "a"), ("p", {"name": "b"}, "b")),
            faux_assistant_message("ok"),
        ]
    )
    emit = Collector(react)
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), config(faux), emit, stream_fn=faux.stream
    )
    assert slow_listener_calls == ["a0", "b0", "a1", "b1", "a2", "b2"]
    order = emit.tool_order()
    assert order.index("end:a") > order.index("update:a") and order[-2:] == ["result:a", "result:b"]
    count = len(emit.events)
    keep[0](text_result("too late"))
    await asyncio.sleep(0.01)
    assert len(emit.events) == count


def result_text_of(result: AgentToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def reports_progress(params: dict[str, Any], signal: Any, on_update: ToolUpdateCallback) -> str:
    on_update(text_result("progress"))
    return "done"


async def test_a_listener_failing_on_an_update_fails_the_run(faux: FauxProvider) -> None:
    tool = make_tool("p", reports_progress)

    def react(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            raise RuntimeError("listener broke")

    faux.set_responses([tool_reply(("p", {}, "a")), faux_assistant_message("ok")])
    with pytest.raises(RuntimeError, match="listener broke"):
        await run_agent_loop(
            [user("go")],
            AgentContext(tools=[tool]),
            config(faux),
            Collector(react),
            stream_fn=faux.stream,
        )


# --- abort ---------------------------------------------------------------------------------------


async def test_abort_during_a_sequential_batch_ends_the_remaining_calls_unrun(
    faux: FauxProvider,
) -> None:
    controller = AbortController()

    async def run(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        assert signal is controller.signal
        controller.abort()
        await signal.wait()
        raise RuntimeError("interrupted")

    tool = make_tool("t", run)
    faux.set_responses([tool_reply(("t", {}, "a"), ("t", {}, "b")), faux_assistant_message("no")])
    emit = Collector()
    cfg = config(faux, tool_execution="sequential")
    new = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[tool]),
        cfg,
        emit,
        controller.signal,
        stream_fn=faux.stream,
    )
    # as pi 1.6: the call not started yet is not run, and still gets its result
    assert emit.tool_order() == ["start:a", "end:a", "result:a", "start:b", "end:b", "result:b"]
    roles = [m.role for m in new]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert new[3].content[0].text == "Operation aborted"  # type: ignore[union-attr]
    assert new[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert new[-1].error_message == "Request was aborted"  # type: ignore[union-attr]


async def test_abort_in_before_tool_call_stops_the_batch(faux: FauxProvider) -> None:
    controller = AbortController()
    ran: list[str] = []
    tool = make_tool("t", lambda p, s, u: ran.append("t"))

    def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> None:
        controller.abort()

    faux.set_responses([tool_reply(("t", {}, "a"), ("t", {}, "b")), faux_assistant_message("no")])
    emit = Collector()
    cfg = config(faux, before_tool_call=before)
    new = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[tool]),
        cfg,
        emit,
        controller.signal,
        stream_fn=faux.stream,
    )
    assert ran == []
    # as pi 1.6: every call of the reply ends unrun with its own result
    order = ["start:a", "end:a", "start:b", "end:b", "result:a", "result:b"]
    assert emit.tool_order() == order
    assert result_text(new[2]) == result_text(new[3]) == "Operation aborted"  # type: ignore[arg-type]


async def test_parallel_tools_all_see_the_abort(faux: FauxProvider) -> None:
    controller = AbortController()
    started = 0

    async def run(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        nonlocal started
        started += 1
        if started == 2:
            controller.abort()
        assert signal is not None
        await signal.wait()
        return "stopped early"

    tool = make_tool("t", run)
    faux.set_responses([tool_reply(("t", {}, "a"), ("t", {}, "b")), faux_assistant_message("no")])
    new = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[tool]),
        config(faux),
        Collector(),
        controller.signal,
        faux.stream,
    )
    assert [result_text(m) for m in new if isinstance(m, ToolResultMessage)] == [
        "stopped early",
        "stopped early",
    ]
    assert new[-1].stop_reason == "aborted"  # type: ignore[union-attr]


# --- the event sink ------------------------------------------------------------------------------


async def test_sink_keeps_order_between_sent_and_posted_events() -> None:
    delivered: list[str] = []
    slow = asyncio.Event()

    async def emit(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionUpdateEvent) and event.tool_call_id == "first":
            await slow.wait()
        delivered.append(getattr(event, "tool_call_id", event.type))

    def update(call_id: str) -> ToolExecutionUpdateEvent:
        return ToolExecutionUpdateEvent._quick(
            type="tool_execution_update",
            tool_call_id=call_id,
            tool_name="t",
            args={},
            partial_result=AgentToolResult(),
        )

    sink = EventSink(emit)
    sink.post(update("first"))
    sink.post(update("second"))
    sending = asyncio.ensure_future(sink.send(TurnStartEvent._quick(type="turn_start")))
    await asyncio.sleep(0)
    assert delivered == [] and not sending.done()
    slow.set()
    await sending
    assert delivered == ["first", "second", "turn_start"]

    thread = threading.Thread(target=sink.post, args=(update("from-thread"),))
    thread.start()
    thread.join()
    await asyncio.sleep(0.01)
    await sink.flush()
    assert delivered[-1] == "from-thread"


async def test_sink_reports_a_failed_posted_event_at_the_next_send() -> None:
    async def emit(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            raise RuntimeError("listener broke")

    sink = EventSink(emit)
    sink.post(
        ToolExecutionUpdateEvent._quick(
            type="tool_execution_update",
            tool_call_id="a",
            tool_name="t",
            args={},
            partial_result=AgentToolResult(),
        )
    )
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="listener broke"):
        await sink.send(TurnStartEvent._quick(type="turn_start"))
    await sink.send(TurnStartEvent._quick(type="turn_start"))  # reported once


async def test_events_serialise_to_pi_json(faux: FauxProvider) -> None:
    tool = make_tool("echo", reports_progress)
    faux.set_responses([tool_reply(("echo", {"x": 1}, "c1")), faux_assistant_message("ok")])
    emit = Collector()
    await run_agent_loop(
        [user("go")], AgentContext(tools=[tool]), config(faux), emit, stream_fn=faux.stream
    )
    by_type = {e.type: e.to_json_dict() for e in emit.events}
    assert by_type["tool_execution_start"] == {
        "type": "tool_execution_start",
        "toolCallId": "c1",
        "toolName": "echo",
        "args": {"x": 1},
    }
    assert by_type["tool_execution_update"]["partialResult"]["content"] == [
        {"type": "text", "text": "progress"}
    ]
    assert by_type["tool_execution_end"]["isError"] is False
    update = by_type["message_update"]
    assert update["assistantMessageEvent"]["type"] in {"text_start", "text_delta", "text_end"}
    assert update["message"]["role"] == "assistant" and "stopReason" in update["message"]
    assert by_type["turn_end"]["toolResults"] == []
    assert [m["role"] for m in by_type["agent_end"]["messages"]] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    parsed = AgentEndEvent.model_validate(by_type["agent_end"])
    assert isinstance(parsed.messages[1], AssistantMessage)
    assert parsed.messages[1].to_json_dict() == by_type["agent_end"]["messages"][1]
    assert isinstance(emit.of("message_update")[0], MessageUpdateEvent)


async def test_on_update_rejects_what_is_not_a_tool_result(faux: FauxProvider) -> None:
    def sloppy(params: dict[str, Any], signal: Any, on_update: Any) -> str:
        on_update("50%")
        return "done"

    faux.set_responses([tool_reply(("sloppy", {}, "s")), faux_assistant_message("ok")])
    emit = Collector()
    new = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[make_tool("sloppy", sloppy)]),
        config(faux),
        emit,
        stream_fn=faux.stream,
    )
    assert result_text(new[2]) == "on_update takes an AgentToolResult, not str"  # type: ignore[arg-type]
    assert not emit.of("tool_execution_update")


async def test_a_blocked_call_can_terminate_the_batch(faux: FauxProvider) -> None:
    noop = make_tool("noop", lambda p, s, u: text_result("ran", terminate=True))
    faux.set_responses(
        [tool_reply(("noop", {}, "c1"), ("noop", {}, "c2")), faux_assistant_message("never")]
    )

    def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> BeforeToolCallResult:
        if ctx.tool_call.id == "c1":
            return BeforeToolCallResult(block=True, reason="stop here", terminate=True)
        return BeforeToolCallResult()

    cfg = config(faux, before_tool_call=before)
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[noop]), cfg, Collector(), stream_fn=faux.stream
    )
    results = [m for m in new if isinstance(m, ToolResultMessage)]
    assert [(result_text(r), r.is_error) for r in results] == [("stop here", True), ("ran", False)]
    assert new[-1] is results[-1] and faux.pending_response_count == 1  # no further request


async def test_system_messages_in_the_transcript_reach_the_request(faux: FauxProvider) -> None:
    """pi 1.6 keeps prompt and tool patches as system messages: the default conversion keeps
    them and ``pi_notebook.ai.stream`` folds them into the request's prompt."""
    seen: list[tuple[str | None, list[str]]] = []

    def reply(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append((context.system_prompt, [m.role for m in context.messages]))
        return faux_assistant_message("ok")

    faux.set_responses([reply])
    context = AgentContext("Base.", [SystemMessage(content="Be terse.")])
    new = await run_agent_loop([user("go")], context, config(faux), Collector())
    assert seen == [("Base.\n\nBe terse.", ["user"])]
    assert [m.role for m in new] == ["user", "assistant"]
