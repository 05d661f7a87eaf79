"""Shortcuts on the agent's per-call paths keep their contracts."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import pytest

from pi_notebook.agent import Agent, AgentContext, AgentLoopConfig, AgentTool, AgentToolResult
from pi_notebook.agent.abortable import unless_aborted
from pi_notebook.agent.events import AgentEvent, TurnStartEvent
from pi_notebook.agent.loop import run_agent_loop
from pi_notebook.agent.tool_declarations import declare_tool_changes, tool_declaration
from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    FauxProvider,
    MessageBuilder,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    Tool,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    produce_stream,
)
from pi_notebook.ai.event_stream import _running_producers
from pi_notebook.ai.validation import (
    ToolArgumentsError,
    schema_validator,
    validate_tool_arguments,
)


def test_validated_arguments_are_a_deep_copy_of_any_mapping() -> None:
    tool = Tool(
        name="t",
        parameters={
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object"}},
            },
        },
    )
    nested: dict[str, Any] = {"k": [1, 2]}
    raw: dict[str, Any] = {"n": "3", "items": [nested], "extra": OrderedDict(a=[1])}
    args = validate_tool_arguments(tool, raw)
    assert args == {"n": 3, "items": [{"k": [1, 2]}], "extra": OrderedDict(a=[1])}
    args["items"][0]["k"].append(3)
    args["extra"]["a"].append(2)
    assert raw == {"n": "3", "items": [{"k": [1, 2]}], "extra": OrderedDict(a=[1])}
    assert type(args["extra"]) is OrderedDict


def _tool_reply(call_id: str) -> AssistantMessage:
    return faux_assistant_message([faux_tool_call("noop", {}, id=call_id)])


def _noop() -> AgentTool:
    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="ok")])

    return AgentTool(name="noop", description="", parameters={"type": "object"}, execute=execute)


async def test_a_plain_function_emit_sees_what_an_async_one_sees(faux: FauxProvider) -> None:
    seen: dict[str, list[str]] = {"sync": [], "async": []}

    def plain(event: AgentEvent) -> None:
        seen["sync"].append(event.type)

    async def awaited(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        seen["async"].append(event.type)

    for emit in (plain, awaited):
        faux.set_responses([_tool_reply("c1"), faux_assistant_message("done")])
        context = AgentContext("", [], [_noop()])
        config = AgentLoopConfig(model=faux.get_model())
        await run_agent_loop(
            [UserMessage(content="go")], context, config, emit, stream_fn=faux.stream
        )
    assert seen["sync"] == seen["async"] and seen["sync"][0] == "agent_start"
    assert seen["sync"].count("message_update") > 0 and seen["sync"][-1] == "agent_end"


async def test_listeners_run_in_order_and_an_async_one_holds_the_run(faux: FauxProvider) -> None:
    faux.set_responses([_tool_reply("c1"), faux_assistant_message("done")])
    agent = Agent(model=faux.get_model(), tools=[_noop()], stream_fn=faux.stream)
    log: list[str] = []
    released = asyncio.Event()

    async def slow(event: AgentEvent) -> None:
        log.append(f"slow:{event.type}")
        if event.type == "tool_execution_start":
            await released.wait()  # the run must not go on until this listener returns

    agent.subscribe(lambda event: log.append(f"first:{event.type}"))
    agent.subscribe(slow)
    agent.subscribe(lambda event, signal: log.append(f"last:{event.type}"))
    run = asyncio.ensure_future(agent.prompt("go"))
    for _ in range(20):
        await asyncio.sleep(0)
    assert log[-2:] == ["first:tool_execution_start", "slow:tool_execution_start"]
    assert agent.state.pending_tool_calls == {"c1"}
    released.set()
    await run
    kinds = [entry.split(":", 1)[1] for entry in log]
    assert kinds == [kind for kind in kinds[::3] for _ in range(3)]  # each event to all three
    assert [entry.split(":", 1)[0] for entry in log[:3]] == ["first", "slow", "last"]
    assert kinds[-1] == "agent_end" and agent.state.error_message is None


def test_shared_fields_sets_match_the_plain_events_and_copy_on_write() -> None:
    """``partial_event`` and ``message_update`` share one fields set per class (one GC-tracked
    object fewer per delta); the plain, validated events are the reference."""
    from pi_notebook.agent.events import MessageUpdateEvent, message_update
    from pi_notebook.ai.events import TextDeltaEvent, partial_event

    reply = AssistantMessage(content=[TextContent(text="hi")], model="m", provider="p", api="a")
    fields = {"type": "text_delta", "content_index": 0, "delta": "hi"}

    class Source:
        def materialize_at(self, chunks: int) -> AssistantMessage:
            return reply

    first = partial_event(TextDeltaEvent, dict(fields), Source(), 1)
    second = partial_event(TextDeltaEvent, dict(fields), Source(), 1)
    plain = TextDeltaEvent(partial=reply, type="text_delta", content_index=0, delta="hi")
    assert first.model_fields_set == plain.model_fields_set | {"type"}
    assert first.model_dump() == plain.model_dump()

    first.delta = "changed"
    first.note = "an extra key"  # type: ignore[attr-defined]
    assert "note" in first.model_fields_set
    assert "note" not in second.model_fields_set
    assert second.delta == "hi"

    update, other = message_update(second), message_update(second)
    reference = MessageUpdateEvent(type="message_update", assistant_message_event=second)
    assert update.model_fields_set == reference.model_fields_set
    assert update.model_dump() == reference.model_dump()
    update.note = "an extra key"  # type: ignore[attr-defined]
    assert "note" in update.model_fields_set
    assert "note" not in other.model_fields_set


async def test_a_request_keeps_the_messages_it_was_given_while_later_ones_grow(
    faux: FauxProvider,
) -> None:
    """The converted history is extended in place only while no earlier request still holds
    it: a stream function that keeps each context's list sees each as it was at its call."""
    kept: list[tuple[list[Any], list[str]]] = []
    forgotten: list[list[str]] = []

    def keeping(model: Any, context: Any, options: Any) -> Any:
        kept.append((context.messages, [m.role for m in context.messages]))
        return faux.stream(model, context, options)

    def forgetting(model: Any, context: Any, options: Any) -> Any:
        forgotten.append([m.role for m in context.messages])
        return faux.stream(model, context, options)

    runs: list[list[str]] = []
    for stream_fn in (keeping, forgetting):
        faux.set_responses(
            [_tool_reply("c1"), _tool_reply("c2"), _tool_reply("c3"), faux_assistant_message("ok")]
        )
        agent = Agent(model=faux.get_model(), tools=[_noop()], stream_fn=stream_fn)
        await agent.prompt("go")
        runs.append([m.role for m in agent.state.messages])
    assert runs[0] == runs[1]
    turn = ["assistant", "toolResult"]
    expected = [["system", "user", *turn * calls] for calls in range(4)]
    assert [roles for _, roles in kept] == expected == forgotten
    assert [[m.role for m in messages] for messages, _ in kept] == expected  # none grew later


async def test_a_run_of_deltas_reaches_an_emit_that_turns_async_midway_in_order() -> None:
    """The loop hands a queued run of deltas to the sink whole (``EventSink.offer_run``); an emit
    that answers with an awaitable on some deltas sees the same events, in the same order, each
    with its own partial reply, as a plain one."""
    from pi_notebook.ai import Model, produce_stream

    model = Model(id="m", name="m", api="scripted", provider="p")
    texts = [f"d{i} " for i in range(40)]

    def stream_fn(model: Model, context: Any, options: Any) -> Any:
        async def body(out: MessageBuilder) -> None:
            out.start()
            index = out.text_start()
            for i, text in enumerate(texts):
                out.text_delta(index, text)
                if i % 15 == 14:
                    await asyncio.sleep(0)  # the consumer takes a run of 15
            out.text_end(index)
            out.done("stop")

        return produce_stream(model, options, body)

    def record(log: list[tuple[str, str, str]], event: AgentEvent) -> None:
        if event.type == "message_update":
            inner = event.assistant_message_event
            log.append((inner.type, getattr(inner, "delta", ""), event.message.text))
        else:
            log.append((event.type, "", ""))

    plain_log: list[tuple[str, str, str]] = []
    mixed_log: list[tuple[str, str, str]] = []
    held: list[AgentEvent] = []
    count = 0

    def plain(event: AgentEvent) -> None:
        record(plain_log, event)

    def mixed(event: AgentEvent) -> Any:
        nonlocal count
        count += 1
        held.append(event)
        if count % 7:
            record(mixed_log, event)
            return None

        async def later() -> None:
            await asyncio.sleep(0)
            record(mixed_log, event)

        return later()

    for emit in (plain, mixed):
        context = AgentContext("", [], [])
        config = AgentLoopConfig(model=model)
        await run_agent_loop(
            [UserMessage(content="go")], context, config, emit, stream_fn=stream_fn
        )
    assert mixed_log == plain_log
    deltas = [entry for entry in plain_log if entry[0] == "text_delta"]
    assert [d for _, d, _ in deltas] == texts
    assert [partial for _, _, partial in deltas] == ["".join(texts[: i + 1]) for i in range(40)]
    updates = [e for e in held if e.type == "message_update"]
    assert len({id(e) for e in updates}) == len(updates)  # each delta its own event
    assert updates[3].message.text == "".join(texts[:3])  # earlier events keep their view


# --- per-turn shortcuts --------------------------------------------------------------------------


def test_empty_arguments_skip_the_schema_pass_only_when_the_schema_takes_them() -> None:
    open_schema = Tool(name="open", parameters={"type": "object", "properties": {}})
    given: dict[str, Any] = {}
    args = validate_tool_arguments(open_schema, given)
    assert args == {} and args is not given  # still a copy the tool may change
    assert schema_validator(open_schema.parameters).accepts_empty_object()
    needs = Tool(
        name="needs",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )
    for _ in range(2):  # the cached answer says no the second time as well
        with pytest.raises(ToolArgumentsError, match="  - n: missing"):
            validate_tool_arguments(needs, {})
    assert not schema_validator(needs.parameters).accepts_empty_object()
    wrapped = Tool(name="list", parameters={"type": "array"})  # coerced, as pi-schema does
    assert validate_tool_arguments(wrapped, {}) == [{}]


def test_declarations_that_match_by_count_but_repeat_a_name_are_still_reported() -> None:
    first = _noop()
    twin = _noop()  # the same name twice: as many tools as declarations, one name left over
    other = AgentTool(
        name="other", description="", parameters={"type": "object"}, execute=_noop().execute
    )
    patch = SystemMessage(
        content="", tools_added=[tool_declaration(first), tool_declaration(other)]
    )
    out = declare_tool_changes(AgentContext("", [patch], [first, twin]), [])
    assert len(out) == 1 and isinstance(out[0], SystemMessage)
    assert [t.name for t in out[0].tools_removed or ()] == ["other"]
    assert declare_tool_changes(AgentContext("", [patch], [first, other]), []) == []


async def test_a_tool_that_answers_at_once_is_not_watched_and_one_that_waits_is() -> None:
    controller = AbortController()

    async def at_once() -> str:
        return "done"

    async def aborts_then_waits() -> str:
        controller.abort()  # during its first step: the watch set up after it still arms
        await asyncio.sleep(10)
        return "slept"

    assert await unless_aborted(at_once(), controller.signal) == (False, "done")
    gave_up: tuple[bool, Any] = await asyncio.wait_for(
        unless_aborted(aborts_then_waits(), controller.signal), 5
    )
    assert gave_up == (True, None)


async def test_a_producer_task_leaves_the_registry_when_its_reply_ends() -> None:
    model = Model(id="m", name="m", api="scripted", provider="test")

    async def body(out: MessageBuilder) -> None:
        out.start()
        await asyncio.sleep(0)
        out.done("stop")

    before = set(_running_producers)
    stream = produce_stream(model, StreamOptions(), body)
    await asyncio.sleep(0)  # its first step: registered while it streams
    assert len(_running_producers - before) == 1
    assert (await stream.result()).stop_reason == "stop"
    await asyncio.sleep(0)
    assert _running_producers == before


async def test_a_tool_result_message_is_what_model_construct_builds(faux: FauxProvider) -> None:
    faux.set_responses([_tool_reply("c1"), faux_assistant_message("done")])
    agent = Agent(model=faux.get_model(), tools=[_noop()], stream_fn=faux.stream)
    await agent.prompt("go")
    built = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    given = {name: getattr(built, name) for name in built.model_fields_set}
    reference = ToolResultMessage.model_construct(**given)
    assert built.__dict__ == reference.__dict__
    assert list(built.__dict__) == list(reference.__dict__)  # field order, as dumps show it
    assert built.model_fields_set == reference.model_fields_set
    assert built.model_fields_set == {
        "role",
        "tool_call_id",
        "tool_name",
        "content",
        "details",
        "is_error",
        "timestamp",
        "duration_ms",
    }


def test_new_events_share_a_fields_set_per_class_and_copy_it_on_write() -> None:
    from pi_notebook.agent.events import ToolExecutionStartEvent, new_event

    def start() -> ToolExecutionStartEvent:
        values = {"type": "tool_execution_start", "tool_call_id": "c", "tool_name": "t", "args": {}}
        return new_event(ToolExecutionStartEvent, values)

    first, second = start(), start()
    reference = ToolExecutionStartEvent(
        type="tool_execution_start", tool_call_id="c", tool_name="t", args={}
    )
    assert first.model_fields_set == reference.model_fields_set
    assert first.model_dump() == reference.model_dump()
    first.tool_name = "renamed"
    first.note = "an extra key"  # type: ignore[attr-defined]
    assert "note" in first.model_fields_set and "note" not in second.model_fields_set
    assert second.model_fields_set == reference.model_fields_set and second.tool_name == "t"


async def test_a_reply_made_at_once_reaches_the_consumer_without_a_waiter() -> None:
    """The consumer steps aside for the producer's first step: a reply produced without waiting
    is then all there, and no future is made to wake the consumer; one that waits still comes."""
    model = Model(id="m", name="m", api="scripted", provider="test")
    gate = asyncio.Event()

    async def at_once(out: MessageBuilder) -> None:
        out.start()
        index = out.text_start()
        out.text_delta(index, "hi")
        out.text_end(index)
        out.done("stop")

    async def waits(out: MessageBuilder) -> None:
        await gate.wait()
        await at_once(out)

    loop = asyncio.get_running_loop()
    made = 0
    create_future = loop.create_future

    def counting() -> asyncio.Future[Any]:
        nonlocal made
        made += 1
        return create_future()

    loop.create_future = counting  # type: ignore[method-assign]
    try:
        batch = await produce_stream(model, StreamOptions(), at_once).next_batch()
        assert made == 0
        assert [e.type for e in batch] == [
            "start", "text_start", "text_delta", "text_end", "done",
        ]  # fmt: skip
        waiting = produce_stream(model, StreamOptions(), waits)
        loop.call_later(0.01, gate.set)
        assert (await waiting.result()).text == "hi"
        assert made > 0
    finally:
        del loop.create_future  # type: ignore[method-assign]


async def test_an_event_posted_during_a_run_of_deltas_goes_before_the_rest_of_it() -> None:
    """``offer_run`` checks the sink once, then only whether a delivery posted something: the
    deltas after such a post wait behind it, in order."""
    from pi_notebook.agent.events import EventSink, MessageUpdateEvent, new_event
    from pi_notebook.ai.event_stream import DeltaRun

    model = Model(id="m", name="m", api="scripted", provider="p")

    async def body(out: MessageBuilder) -> None:
        out.start()
        index = out.text_start()
        for i in range(6):
            out.text_delta(index, f"d{i}")
        out.text_end(index)
        out.done("stop")

    stream = produce_stream(model, StreamOptions(), body)
    runs = [item for item in (await stream.next_batch()).queued() if type(item) is DeltaRun]
    assert len(runs) == 1 and runs[0].last - runs[0].first == 5
    seen: list[str] = []

    def emit(event: AgentEvent) -> None:
        if type(event) is MessageUpdateEvent:
            delta = getattr(event.assistant_message_event, "delta", "")
            seen.append(delta)
            if delta == "d1":
                sink.post(new_event(TurnStartEvent, {"type": "turn_start"}))
        else:
            seen.append(event.type)

    sink = EventSink(emit)
    pending = sink.offer_run(runs[0])
    assert pending is not None  # the rest waits behind the posted event
    await pending
    await sink.flush()
    assert seen == ["d0", "d1", "turn_start", "d2", "d3", "d4", "d5"]


async def test_a_listener_subscribed_twice_around_an_async_one_runs_twice_in_order(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message("done")])
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream)
    log: list[str] = []

    def plain(event: AgentEvent) -> None:
        log.append(f"plain {event.type}")

    async def awaited(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        log.append(f"async {event.type}")

    for listener in (plain, awaited, plain):
        agent.subscribe(listener)
    await agent.prompt("go")
    assert log[:3] == ["plain agent_start", "async agent_start", "plain agent_start"]
    assert len(log) % 3 == 0 and log[-1] == "plain agent_end"
