"""``AgentHarness``: runs over a session, turn snapshots and save points, pending writes,
setters, queues, abort, hooks and their result rules, errors, manual and automatic compaction,
tree navigation, skills and templates. Everything runs against the faux provider."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import AgentToolResult
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    Context,
    FauxProvider,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
)
from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.harness import (
    AgentHarness,
    AgentHarnessError,
    BeforeAgentStartResult,
    BranchSummaryEntry,
    CompactionEntry,
    CompactionResult,
    CompactionSettings,
    ContextResult,
    CustomMessage,
    FinishTurnResult,
    HarnessStreamOptions,
    InMemorySessionStorage,
    JsonlSessionStorage,
    MessageEntry,
    PromptTemplate,
    Resources,
    Session,
    Skill,
    ToolCallResult,
)
from pi_notebook.harness.auto_compaction import RECOVERY_FAILED_OVERFLOW, check_compaction
from pi_notebook.harness.entries import ContextEditEntry
from tests.agent.test_agent_loop import make_tool, text_result

ECHO_PROPS = {"text": {"type": "string"}}


def new_session() -> Session:
    return Session.create(InMemorySessionStorage())


def make(faux: FauxProvider, session: Session | None = None, **options: Any) -> AgentHarness:
    model = options.pop("model", faux.get_model())
    return AgentHarness(session if session is not None else new_session(), model, **options)


class Recorder:
    """A listener recording every event (and checking each one on the way, if asked)."""

    def __init__(self, check: Callable[[Any], Any] | None = None) -> None:
        self.events: list[Any] = []
        self.check = check

    async def __call__(self, event: Any) -> None:
        self.events.append(event)
        if self.check is not None:
            outcome = self.check(event)
            if asyncio.iscoroutine(outcome):
                await outcome

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def compact_types(self) -> list[str]:
        """Types with runs of message_update collapsed to one."""
        out: list[str] = []
        for kind in self.types:
            if kind == "message_update" and out and out[-1] == "message_update":
                continue
            out.append(kind)
        return out

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def session_roles(session: Session) -> list[str]:
    return [e.message.role for e in session.get_branch() if isinstance(e, MessageEntry)]


def texts(session: Session) -> list[str]:
    out = []
    for entry in session.get_branch():
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, AssistantMessage):
                out.append(message.text)
            elif isinstance(message, UserMessage) and not isinstance(message.content, str):
                out.append("".join(b.text for b in message.content if isinstance(b, TextContent)))
    return out


def echo_tool(run: Callable[..., Any] | None = None) -> Any:
    return make_tool("echo", run or (lambda p, s, u: f"echo:{p['text']}"), properties=ECHO_PROPS)


StreamFnType = Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]


def spying(faux: FauxProvider, calls: list[tuple[Model, Context, StreamOptions]]) -> StreamFnType:
    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        calls.append((model, context, options))
        return faux.stream(model, context, options)

    return stream_fn


# --- construction --------------------------------------------------------------------------------


def test_construction_checks_its_arguments(faux: FauxProvider) -> None:
    session = new_session()
    model = faux.get_model()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"tools": [echo_tool(), echo_tool()]}, "Duplicate tool name(s): echo"),
        ({"tools": [echo_tool()], "active_tool_names": ["nope"]}, "Unknown tool(s): nope"),
        ({"tools": [echo_tool()], "active_tool_names": ["echo", "echo"]}, "Duplicate active"),
        ({"thinking_level": "maximal"}, "thinking level"),
        ({"steering_mode": "some"}, "queue mode"),
        ({"tools": ["not a tool"]}, "AgentTools"),
    ]
    for options, message in cases:
        with pytest.raises(AgentHarnessError, match=re.escape(message)) as info:
            AgentHarness(session, model, **options)
        assert info.value.code == "invalid_argument"
    with pytest.raises(AgentHarnessError, match="Session"):
        AgentHarness("session.jsonl", model)  # type: ignore[arg-type]
    harness = AgentHarness(session, model, tools=[echo_tool()])
    assert harness.phase == "idle" and harness.active_tool_names == ["echo"]
    assert harness.thinking_level == "off" and harness.steering_mode == "one-at-a-time"
    assert harness.system_prompt is None and harness.signal is None
    assert "faux/faux-1" in repr(harness)


# --- prompting -----------------------------------------------------------------------------------


async def test_prompt_persists_and_reports_in_pi_order(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("Hello!")])
    harness = make(faux)
    phases: list[str] = []
    recorder = Recorder(lambda e: phases.append(harness.phase))
    harness.subscribe(recorder)
    reply = await harness.prompt("hi")
    assert reply.text == "Hello!" and reply.stop_reason == "stop"
    assert recorder.compact_types() == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "after_provider_response",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
        "save_point",
        "agent_end",
        "settled",
    ]
    assert set(phases) == {"turn"} and harness.phase == "idle"
    assert session_roles(harness.session) == ["user", "assistant"]
    assert [m.role for m in harness.last_run_messages] == ["user", "assistant"]
    assert recorder.of("settled")[0].next_turn_count == 0
    assert recorder.of("save_point")[0].had_pending_mutations is False


async def test_message_end_is_persisted_before_listeners_hear_of_it(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("done"),
        ]
    )
    harness = make(faux, tools=[echo_tool()])
    seen: list[bool] = []

    def check(event: Any) -> None:
        if event.type == "message_end":
            branch = harness.session.get_branch()
            seen.append(
                isinstance(branch[-1], MessageEntry) and branch[-1].message is event.message
            )

    harness.subscribe(check)
    await harness.prompt("go")
    assert seen == [True] * 4
    assert session_roles(harness.session) == ["user", "assistant", "toolResult", "assistant"]


async def test_turn_snapshots_come_from_the_session_with_the_current_config(
    faux: FauxProvider,
) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    harness = make(
        faux,
        system_prompt=lambda ctx: f"prompt for {ctx.model.id} at {ctx.thinking_level}",
        thinking_level="low",
        stream_fn=spying(faux, calls),
        stream_options=HarnessStreamOptions(headers={"x-a": "1"}, max_retries=5, transport="sse"),
    )
    await harness.prompt("first")
    await harness.prompt("second")
    _, context, options = calls[-1]
    assert context.system_prompt == "prompt for faux-1 at low"
    assert [m.role for m in context.messages] == ["user", "assistant", "user"]
    assert options.reasoning == "low" and options.session_id == harness.session.id
    assert options.headers == {"x-a": "1"} and options.max_retries == 5
    assert options.extra == {"transport": "sse"}
    # the default system prompt
    harness.system_prompt = None
    faux.append_responses([faux_assistant_message("three")])
    await harness.prompt("third")
    assert calls[-1][1].system_prompt == "You are a helpful assistant."


async def test_busy_and_invalid_state(faux: FauxProvider) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        started.set()
        await release.wait()
        return "slow"

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("ok"),
        ]
    )
    harness = make(faux, tools=[echo_tool(slow)])
    for method in (harness.steer, harness.follow_up):
        with pytest.raises(AgentHarnessError, match="while idle") as info:
            method("too early")
        assert info.value.code == "invalid_state"
    run = asyncio.create_task(harness.prompt("go"))
    await started.wait()
    for attempt in (
        harness.prompt("again"),
        harness.compact(),
        harness.navigate_tree("x"),
        harness.skill("x"),
        harness.prompt_from_template("x"),
    ):
        with pytest.raises(AgentHarnessError) as info:
            await attempt
        assert info.value.code == "busy"
    assert harness.signal is not None and not harness.signal.aborted
    release.set()
    assert (await run).text == "ok"
    with pytest.raises(AgentHarnessError, match="text must be a str"):
        await harness.prompt(42)  # type: ignore[arg-type]


async def test_images_go_with_the_prompt(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("seen")])
    harness = make(faux)
    image = ImageContent(data="aGk=", mime_type="image/png")
    await harness.prompt("look", images=[image])
    first = harness.session.get_branch()[0]
    assert isinstance(first, MessageEntry) and first.message.content == [
        TextContent(text="look"),
        image,
    ]  # type: ignore[union-attr]


# --- queues --------------------------------------------------------------------------------------


async def test_steer_follow_up_and_next_turn(faux: FauxProvider) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        started.set()
        await release.wait()
        return "done"

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("after steer"),
            faux_assistant_message("after follow-up"),
        ]
    )
    harness = make(faux, tools=[echo_tool(slow)])
    recorder = Recorder()
    harness.subscribe(recorder)
    harness.next_turn("context first")
    await harness.wait_for_idle()
    assert recorder.of("queue_update")[-1].next_turn[0].content[0].text == "context first"
    run = asyncio.create_task(harness.prompt("main"))
    await started.wait()
    harness.steer("steer me")
    harness.follow_up("and then this")
    release.set()
    await run
    assert texts(harness.session) == [
        "context first",
        "main",
        "",
        "steer me",
        "after steer",
        "and then this",
        "after follow-up",
    ]
    updates = [
        (len(e.steer), len(e.follow_up), len(e.next_turn)) for e in recorder.of("queue_update")
    ]
    assert updates == [(0, 0, 1), (0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 0)]


async def test_on_start_is_called_once_the_prompt_is_taken(faux: FauxProvider) -> None:
    """``prompt(on_start=...)`` is told when the harness is busy with the prompt, before any
    request: steering from it comes right after the prompt, a follow-up when the run would end.
    A prompt refused as busy never calls it."""
    faux.set_responses(
        [
            faux_assistant_message("to the prompt and the steer"),
            faux_assistant_message("to the follow-up"),
        ]
    )
    harness = make(faux)
    seen: list[tuple[str, int]] = []

    def on_start() -> None:
        seen.append((harness.phase, faux.call_count))
        harness.steer("steered")
        harness.follow_up("followed")

    reply = await harness.prompt("main", on_start=on_start)
    assert seen == [("turn", 0)]
    assert reply.text == "to the follow-up"
    assert texts(harness.session) == [
        "main",
        "steered",
        "to the prompt and the steer",
        "followed",
        "to the follow-up",
    ]
    release = asyncio.Event()

    async def slow(model: Model, context: Context, options: StreamOptions) -> Any:
        await release.wait()
        return await faux.stream(model, context, options)

    busy = make(faux, stream_fn=slow)
    faux.set_responses([faux_assistant_message("late")])
    first = asyncio.create_task(busy.prompt("first"))
    await asyncio.sleep(0)
    called: list[bool] = []
    with pytest.raises(AgentHarnessError) as refused:
        await busy.prompt("second", on_start=lambda: called.append(True))
    assert refused.value.code == "busy" and called == []
    release.set()
    await first


async def test_queue_modes_all(faux: FauxProvider) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        started.set()
        await release.wait()
        return "done"

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("both"),
        ]
    )
    harness = make(faux, tools=[echo_tool(slow)], steering_mode="all")
    assert harness.steering_mode == "all"
    run = asyncio.create_task(harness.prompt("main"))
    await started.wait()
    harness.steer("a")
    harness.steer("b")
    release.set()
    await run
    assert texts(harness.session)[-3:] == ["a", "b", "both"]
    harness.follow_up_mode = "all"
    with pytest.raises(AgentHarnessError):
        harness.follow_up_mode = "many"  # type: ignore[assignment]


# --- pending writes and setters ------------------------------------------------------------------


async def test_setters_while_idle_write_at_once_and_report(faux: FauxProvider) -> None:
    harness = make(faux, tools=[echo_tool()])
    recorder = Recorder()
    harness.subscribe(recorder)
    other = faux.get_model().model_copy(update={"id": "faux-2"})
    harness.set_model(other)
    harness.set_thinking_level("high")
    harness.set_active_tools([])
    ping = make_tool("ping", lambda p, s, u: "pong")
    harness.set_tools([echo_tool(), ping])
    await harness.wait_for_idle()
    types = [e.type for e in harness.session.get_entries()]
    assert types == [
        "model_change",
        "thinking_level_change",
        "active_tools_change",
        "active_tools_change",
    ]
    context = harness.session.build_context()
    assert context.thinking_level == "high" and context.model is not None
    assert context.model.model_id == "faux-2"
    # echo stayed inactive, the new ping tool became active
    assert context.active_tool_names == ["ping"] == harness.active_tool_names
    assert recorder.types == [
        "model_update",
        "thinking_level_update",
        "tools_update",
        "tools_update",
    ]
    update = recorder.of("tools_update")[-1]
    assert update.tool_names == ["echo", "ping"] and update.previous_active_tool_names == []
    assert recorder.of("model_update")[0].previous_model.id == "faux-1"
    harness.set_tools([ping], active_tool_names=["ping"])
    assert [t.name for t in harness.tools] == ["ping"]
    for bad in (
        lambda: harness.set_active_tools(["nope"]),
        lambda: harness.set_thinking_level("x"),
    ):  # type: ignore[arg-type]
        with pytest.raises(AgentHarnessError) as info:
            bad()
        assert info.value.code == "invalid_argument"


async def test_changes_during_a_turn_are_pending_until_the_save_point(faux: FauxProvider) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    other = Model(**{**faux.get_model().model_dump(), "id": "faux-2"})
    harness: AgentHarness

    def change_everything(
        params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> str:
        harness.set_model(other)
        harness.set_thinking_level("medium")
        harness.set_active_tools([])
        # nothing written yet: the turn is still going
        assert [e.type for e in harness.session.get_entries()].count("model_change") == 0
        return "changed"

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("next"),
        ]
    )
    harness = make(faux, tools=[echo_tool(change_everything)], stream_fn=spying(faux, calls))
    recorder = Recorder()
    harness.subscribe(recorder)
    await harness.prompt("go")
    types = [e.type for e in harness.session.get_entries()]
    # written at the save point right after the first turn, before the second reply
    assert types == [
        "message",
        "message",
        "message",
        "model_change",
        "thinking_level_change",
        "active_tools_change",
        "message",
    ]
    assert [e.had_pending_mutations for e in recorder.of("save_point")] == [True, False]
    # the second turn of the same run already uses the new configuration
    (model1, context1, options1), (model2, context2, options2) = calls
    assert (model1.id, options1.reasoning, bool(context1.tools)) == ("faux-1", None, True)
    assert (model2.id, options2.reasoning, context2.tools) == ("faux-2", "medium", None)


# --- abort ---------------------------------------------------------------------------------------


async def test_abort_while_a_tool_runs(faux: FauxProvider) -> None:
    started = asyncio.Event()

    async def wait_for_abort(
        params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> str:
        started.set()
        assert signal is not None
        await signal.wait()
        raise RuntimeError("stopped")

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"text": "x"})])])
    harness = make(faux, tools=[echo_tool(wait_for_abort)])
    recorder = Recorder()
    harness.subscribe(recorder)
    run = asyncio.create_task(harness.prompt("go"))
    await started.wait()
    harness.follow_up("dropped")
    result = harness.abort()
    assert [m.content[0].text for m in result.cleared_follow_up] == ["dropped"]  # type: ignore[union-attr]
    await harness.wait_for_idle()
    reply = await run
    assert reply.stop_reason == "aborted" and harness.phase == "idle"
    types = recorder.types
    assert types.index("settled") < types.index("abort") == len(types) - 1
    assert recorder.of("abort")[0].cleared_follow_up[0].content[0].text == "dropped"
    # abort while idle: the events come at once
    harness.abort()
    await harness.wait_for_idle()
    assert recorder.types[-2:] == ["queue_update", "abort"]


async def test_cancelling_the_prompt_task_aborts_the_run(faux: FauxProvider) -> None:
    started = asyncio.Event()
    signals: list[AbortSignal] = []

    async def hang(params: dict[str, Any], signal: AbortSignal | None, on_update: Any) -> str:
        assert signal is not None
        signals.append(signal)
        started.set()
        await asyncio.sleep(60)
        return "never"

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"text": "x"})])])
    harness = make(faux, tools=[echo_tool(hang)])
    run = asyncio.create_task(harness.prompt("go"))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert signals[0].aborted and harness.phase == "idle"


# --- failures ------------------------------------------------------------------------------------


async def test_a_failing_run_ends_with_a_persisted_failure_reply(faux: FauxProvider) -> None:
    def broken(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        raise RuntimeError("stream function broke")

    harness = make(faux, stream_fn=broken)
    recorder = Recorder()
    harness.subscribe(recorder)
    reply = await harness.prompt("hi")
    assert reply.stop_reason == "error" and reply.error_message == "stream function broke"
    assert session_roles(harness.session) == ["user", "assistant"]
    assert recorder.types[-6:] == [
        "message_start",
        "message_end",
        "turn_end",
        "save_point",
        "agent_end",
        "settled",
    ]


async def test_provider_errors_are_replies(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("", stop_reason="error", error_message="HTTP 500")])
    reply = await make(faux).prompt("hi")
    assert reply.stop_reason == "error" and reply.error_message == "HTTP 500"


async def test_listener_failures(faux: FauxProvider) -> None:
    """A failing listener no longer fails the run (tests/harness/test_listeners.py)."""
    faux.set_responses([faux_assistant_message("hello there")])
    harness = make(faux)

    def always(event: Any) -> None:
        raise ValueError("always broken")

    harness.subscribe(always)
    reply = await harness.prompt("hi")
    assert reply.stop_reason == "stop" and reply.error_message is None
    assert harness.phase == "idle"


async def test_session_write_failures(
    faux: FauxProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Failing(InMemorySessionStorage):
        fail = False

        def append(self, entry: Any) -> None:
            if self.fail:
                raise OSError("disk full")
            super().append(entry)

    storage = Failing()
    harness = make(faux, session=Session.create(storage))
    storage.fail = True
    with pytest.raises(AgentHarnessError, match="disk full") as info:
        harness.set_thinking_level("low")
    assert info.value.code == "session"
    assert harness.thinking_level == "off"  # nothing changed
    # Messages are kept in memory when their write fails (Session.unsaved_entries): the run
    # goes on and ends with its reply; the next write that works puts them in the file.
    faux.set_responses([faux_assistant_message("x")])
    seen: list[Any] = []
    harness.subscribe(
        lambda event: seen.append(event) if event.type.startswith("session_w") else None
    )
    with caplog.at_level(logging.WARNING, logger="pi_notebook.harness"):
        reply = await harness.prompt("hi")
    assert reply.stop_reason == "stop" and harness.phase == "idle"
    # not silent in plain Python: one warning when saving stops, an event for each kept entry
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "disk full" in warnings[0], warnings
    assert [(e.type, e.unsaved) for e in seen] == [
        ("session_write_error", 1),
        ("session_write_error", 2),
    ]
    assert "disk full" in seen[0].error_message
    session = harness.session
    assert session.write_error is not None and "disk full" in str(session.write_error)
    kept = [entry.message.role for entry in session.unsaved_entries]  # type: ignore[attr-defined]
    assert kept == ["user", "assistant"]
    storage.fail = False
    assert session.flush() == 2 and session.write_error is None
    written = storage.load()[1][-2:]
    assert [e.message.role for e in written] == ["user", "assistant"]  # type: ignore[attr-defined]


# --- hooks ---------------------------------------------------------------------------------------


async def test_before_agent_start_adds_messages_and_a_first_turn_system_prompt(
    faux: FauxProvider,
) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("ok"),
        ]
    )
    resources = Resources(skills=(Skill("s", "d", "c", "/s/SKILL.md"),))
    harness = make(faux, tools=[echo_tool()], stream_fn=spying(faux, calls), resources=resources)
    seen: list[Any] = []

    def first(event: Any) -> BeforeAgentStartResult:
        seen.append(event)
        return BeforeAgentStartResult(system_prompt="ignored: a later handler wins")

    def second(event: Any) -> dict[str, Any]:
        extra = CustomMessage(custom_type="note", content="remember the milk")
        return {"messages": [extra], "systemPrompt": "special first turn"}

    harness.on("before_agent_start", first)
    harness.on("before_agent_start", second)
    harness.on("before_agent_start", lambda event: None)  # None keeps the earlier result
    await harness.prompt("go")
    event = seen[0]
    assert event.prompt == "go" and event.system_prompt == "You are a helpful assistant."
    assert event.resources is resources and event.images == []
    assert [c.system_prompt for _, c, _ in calls] == [
        "special first turn",
        "You are a helpful assistant.",
    ]
    assert session_roles(harness.session)[:2] == ["user", "custom"]


async def test_context_hook_replaces_the_messages_of_each_call(faux: FauxProvider) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    harness = make(faux, stream_fn=spying(faux, calls))
    remove = harness.on("context", lambda event: ContextResult(event.messages[-1:]))
    await harness.prompt("first")
    await harness.prompt("second")
    assert len(calls[-1][1].messages) == 1
    assert session_roles(harness.session) == ["user", "assistant"] * 2  # the session is untouched
    remove()
    faux.append_responses([faux_assistant_message("three")])
    await harness.prompt("third")
    assert len(calls[-1][1].messages) == 5


async def test_tool_hooks_block_and_patch(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("echo", {"text": "a"}), faux_tool_call("echo", {"text": "b"})]
            ),
            faux_assistant_message("done"),
        ]
    )
    harness = make(faux, tools=[echo_tool()])
    inputs: list[dict[str, Any]] = []

    def block_b(event: Any) -> Any:
        inputs.append(event.input)
        return {"block": True, "reason": "not b"} if event.input["text"] == "b" else None

    harness.on("tool_call", block_b)
    harness.on("tool_call", lambda event: None)
    harness.on(
        "tool_result",
        lambda event: (
            {"content": [TextContent(text=f"patched {event.content[0].text}")]}
            if not event.is_error
            else None
        ),
    )
    await harness.prompt("go")
    results = [
        e.message
        for e in harness.session.get_branch()
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]
    assert [(r.content[0].text, r.is_error) for r in results] == [
        ("patched echo:a", False),
        ("not b", True),
    ]  # type: ignore[union-attr]
    assert inputs == [{"text": "a"}, {"text": "b"}]


async def test_last_result_wins_and_hook_failures(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "a"})]),
            faux_assistant_message("done"),
        ]
    )
    harness = make(faux, tools=[echo_tool()])
    harness.on("tool_call", lambda event: ToolCallResult(block=True, reason="first"))
    harness.on("tool_call", lambda event: ToolCallResult(block=True, reason="second"))
    await harness.prompt("go")
    result = harness.session.get_branch()[2]
    assert isinstance(result, MessageEntry) and result.message.content[0].text == "second"  # type: ignore[union-attr]

    with pytest.raises(AgentHarnessError, match="unknown hook") as bad_type:
        harness.on("on_everything", lambda e: None)  # type: ignore[call-overload]
    assert bad_type.value.code == "invalid_argument"

    def explode(event: Any) -> None:
        raise RuntimeError("hook exploded")

    harness.on("before_agent_start", explode)
    with pytest.raises(
        AgentHarnessError, match="before_agent_start hook failed: hook exploded"
    ) as info:
        await harness.prompt("again")
    assert info.value.code == "hook" and harness.phase == "idle"

    second = make(faux)
    second.on("before_agent_start", lambda event: "a string")
    with pytest.raises(AgentHarnessError, match="expected BeforeAgentStartResult") as wrong:
        await second.prompt("x")
    assert wrong.value.code == "hook"


async def test_provider_hooks_chain(faux: FauxProvider) -> None:
    payloads: list[dict[str, Any]] = []
    seen_options: list[StreamOptions] = []

    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        seen_options.append(options)

        async def send() -> AssistantMessageEventStream:
            assert options.on_payload is not None
            payloads.append(await options.on_payload({"model": model.id, "n": 0}, model))
            return faux.stream(model, context, options)

        return send()  # type: ignore[return-value]

    faux.set_responses([faux_assistant_message("ok")])
    harness = make(
        faux,
        stream_fn=stream_fn,  # type: ignore[arg-type]
        stream_options=HarnessStreamOptions(
            headers={"keep": "1", "drop": "2"}, metadata={"a": 1}, max_retries=4
        ),
    )
    requests: list[Any] = []

    def first(event: Any) -> dict[str, Any]:
        requests.append(event.stream_options)
        return {"stream_options": {"headers": {"drop": None, "new": "3"}, "timeoutMs": 1000}}

    def second(event: Any) -> dict[str, Any]:
        requests.append(event.stream_options)
        return {"stream_options": {"metadata": None, "max_retries": None}}

    harness.on("before_provider_request", first)
    harness.on("before_provider_request", second)
    harness.on(
        "before_provider_payload", lambda e: {"payload": {**e.payload, "n": e.payload["n"] + 1}}
    )
    harness.on("before_provider_payload", lambda e: None)
    harness.on(
        "before_provider_payload", lambda e: {"payload": {**e.payload, "n": e.payload["n"] * 10}}
    )
    await harness.prompt("hi")
    assert requests[1].headers == {
        "keep": "1",
        "new": "3",
    }  # the second handler saw the first's patch
    options = seen_options[0]
    assert options.headers == {"keep": "1", "new": "3"} and options.timeout_ms == 1000
    assert options.metadata is None and options.max_retries == 2  # reset to the default
    assert payloads == [{"model": "faux-1", "n": 10}]
    assert harness.stream_options.headers == {"keep": "1", "drop": "2"}  # the harness's own stay


async def test_get_api_key_is_asked_per_request_and_never_stored(
    faux: FauxProvider, tmp_path: Path
) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    faux.set_responses([faux_assistant_message("ok"), faux_assistant_message("## Goal\nsummary")])
    asked: list[str] = []

    async def get_api_key(provider: str) -> str:
        asked.append(provider)
        return "sk-secret-123"

    session = Session.create(tmp_path / "s.jsonl")
    harness = make(faux, session=session, get_api_key=get_api_key, stream_fn=spying(faux, calls))
    await harness.prompt("hi")
    await harness.compact()
    assert [options.api_key for *_, options in calls] == ["sk-secret-123"] * 2
    assert asked == ["faux", "faux"]
    assert "sk-secret" not in (tmp_path / "s.jsonl").read_text()

    def no_key(provider: str) -> str:
        raise LookupError("no key configured")

    failing = make(faux, get_api_key=no_key)
    with pytest.raises(AgentHarnessError, match="no key configured") as info:
        await failing.compact()
    assert info.value.code == "auth"


# --- skills and templates ------------------------------------------------------------------------


async def test_skills_and_templates(faux: FauxProvider) -> None:
    resources = Resources(
        skills=(Skill("demo-skill", "Demo", "Do the demo thing.", "/skills/demo-skill/SKILL.md"),),
        prompt_templates=(PromptTemplate("review", "Review $1 carefully. All args: $@"),),
    )
    faux.set_responses([faux_assistant_message("Skill done."), faux_assistant_message("Reviewed.")])
    harness = make(faux, resources=resources)
    assert (await harness.skill("demo-skill", "extra instructions")).text == "Skill done."
    assert (
        await harness.prompt_from_template("review", ["src/app.ts", "--strict"])
    ).text == "Reviewed."
    assert texts(harness.session) == [
        '<skill name="demo-skill" location="/skills/demo-skill/SKILL.md">\n'
        "References are relative to /skills/demo-skill.\n\nDo the demo thing.\n</skill>"
        "\n\nextra instructions",
        "Skill done.",
        "Review src/app.ts carefully. All args: src/app.ts --strict",
        "Reviewed.",
    ]
    for attempt, message in (
        (harness.skill("nope"), "Unknown skill: nope"),
        (harness.prompt_from_template("nope"), "Unknown prompt template: nope"),
    ):
        with pytest.raises(AgentHarnessError, match=re.escape(message)) as info:
            await attempt
        assert info.value.code == "invalid_argument"
    assert harness.phase == "idle"
    recorder = Recorder()
    harness.subscribe(recorder)
    harness.set_resources(Resources())
    await harness.wait_for_idle()
    assert recorder.of("resources_update")[0].skill_names == []


# --- manual compaction ---------------------------------------------------------------------------


async def fill(harness: AgentHarness, faux: FauxProvider, turns: int) -> None:
    for i in range(turns):
        faux.append_responses([faux_assistant_message(f"answer {i} " + "x" * 200)])
        await harness.prompt(f"question {i} " + "y" * 200)


async def test_manual_compaction(faux: FauxProvider) -> None:
    harness = make(faux, compaction=CompactionSettings(keep_recent_tokens=100))
    recorder = Recorder()
    harness.subscribe(recorder)
    with pytest.raises(AgentHarnessError, match="Nothing to compact") as nothing:
        await harness.compact()
    assert nothing.value.code == "compaction" and harness.phase == "idle"
    await fill(harness, faux, 3)
    faux.append_responses([faux_assistant_message("## Goal\nsummarised")])
    phases: list[str] = []
    harness.on("session_before_compact", lambda event: phases.append(harness.phase))
    result = await harness.compact("focus on tests")
    assert phases == ["compaction"] and harness.phase == "idle"
    assert result.summary == "## Goal\nsummarised"
    entry = harness.session.get_branch()[-1]
    assert isinstance(entry, CompactionEntry) and entry.from_hook is False
    assert entry.first_kept_entry_id == result.first_kept_entry_id
    tail = [t for t in recorder.types if t.startswith(("compaction", "session_compact"))][-3:]
    assert tail == ["compaction_start", "session_compact", "compaction_end"]
    end = recorder.of("compaction_end")[-1]
    assert (end.reason, end.result.summary, end.aborted, end.will_retry) == (
        "manual",
        result.summary,
        False,
        False,
    )
    assert harness.session.build_context().messages[0].role == "compactionSummary"
    with pytest.raises(AgentHarnessError, match="Nothing to compact"):
        await harness.compact()  # the branch ends with a compaction


async def test_compaction_hooks_cancel_or_provide(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 1)
    remove = harness.on("session_before_compact", lambda event: {"cancel": True})
    with pytest.raises(AgentHarnessError, match="Compaction cancelled") as info:
        await harness.compact()
    assert info.value.code == "compaction"
    remove()
    seen: list[Any] = []

    def provide(event: Any) -> dict[str, Any]:
        seen.append(event)
        return {
            "compaction": {
                "summary": "from the hook",
                "firstKeptEntryId": event.preparation.first_kept_entry_id,
                "tokensBefore": 1,
            }
        }

    harness.on("session_before_compact", provide)
    recorder = Recorder()
    harness.subscribe(recorder)
    result = await harness.compact("why")
    assert result == CompactionResult(
        summary="from the hook",
        first_kept_entry_id=seen[0].preparation.first_kept_entry_id,
        tokens_before=1,
    )
    assert seen[0].custom_instructions == "why" and seen[0].branch_entries
    entry = harness.session.get_branch()[-1]
    assert isinstance(entry, CompactionEntry) and entry.from_hook is True
    assert recorder.of("session_compact")[0].from_hook is True
    assert faux.call_count == 1  # no summarisation request


async def test_compaction_failure_and_abort(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 1)
    recorder = Recorder()
    harness.subscribe(recorder)
    faux.append_responses(
        [faux_assistant_message("", stop_reason="error", error_message="overloaded")]
    )
    with pytest.raises(AgentHarnessError, match="Summarization failed: overloaded") as info:
        await harness.compact()
    assert info.value.code == "compaction"
    assert isinstance(info.value.__cause__, Exception)
    end = recorder.of("compaction_end")[-1]
    assert end.result is None and end.aborted is False and "overloaded" in end.error_message

    gate = asyncio.Event()

    async def slow_summary(
        context: Context, options: StreamOptions, state: Any, model: Model
    ) -> AssistantMessage:
        gate.set()
        await asyncio.sleep(60)
        return faux_assistant_message("never")

    faux.append_responses([slow_summary])
    task = asyncio.create_task(harness.compact())
    await gate.wait()
    harness.abort()
    with pytest.raises(AgentHarnessError) as aborted:
        await task
    assert aborted.value.code == "compaction" and recorder.of("compaction_end")[-1].aborted is True
    await harness.wait_for_idle()
    assert recorder.types[-1] == "abort"


# --- automatic compaction ------------------------------------------------------------------------


async def test_automatic_compaction_at_the_threshold(faux: FauxProvider) -> None:
    small = faux.get_model().model_copy(update={"context_window": 1000})
    harness = make(
        faux,
        model=small,
        compaction=CompactionSettings(reserve_tokens=800, keep_recent_tokens=50),
    )
    recorder = Recorder()
    harness.subscribe(recorder)
    faux.set_responses([faux_assistant_message("short answer")])
    await harness.prompt("a small question")
    assert "compaction_start" not in recorder.types  # well below 200 tokens
    faux.set_responses(
        [
            faux_assistant_message("long answer " * 40),
            faux_assistant_message("## Goal\nsummary"),  # the history
            faux_assistant_message("## Original Request\nlong question"),  # the split turn
        ]
    )
    reply = await harness.prompt("a long question " + "z" * 800)
    assert reply.text.startswith("long answer")  # no retry for the threshold case
    types = recorder.types
    tail = types[len(types) - 1 - types[::-1].index("agent_end") :]
    assert tail == ["agent_end", "compaction_start", "session_compact", "compaction_end", "settled"]
    start, end = recorder.of("compaction_start")[0], recorder.of("compaction_end")[0]
    assert start.reason == end.reason == "threshold" and end.will_retry is False
    assert isinstance(harness.session.get_branch()[-1], CompactionEntry)
    assert faux.call_count == 4

    disabled = make(
        faux, model=small, compaction=CompactionSettings(enabled=False, reserve_tokens=800)
    )
    faux.set_responses([faux_assistant_message("long answer " * 40)])
    await disabled.prompt("a long question " + "z" * 800)
    assert not any(isinstance(e, CompactionEntry) for e in disabled.session.get_entries())


async def test_threshold_compaction_continues_with_queued_messages(faux: FauxProvider) -> None:
    small = faux.get_model().model_copy(update={"context_window": 1000})
    harness = make(
        faux, model=small, compaction=CompactionSettings(reserve_tokens=800, keep_recent_tokens=50)
    )

    async def summary_then_steer(
        context: Context, options: StreamOptions, state: Any, model: Model
    ) -> AssistantMessage:
        harness.steer("while compacting")
        return faux_assistant_message("## Goal\nsummary")

    faux.set_responses(
        [
            faux_assistant_message("long answer " * 40),
            summary_then_steer,
            faux_assistant_message("handled"),
        ]
    )
    reply = await harness.prompt("question " + "z" * 800)
    assert reply.text == "handled"
    assert texts(harness.session)[-2:] == ["while compacting", "handled"]


async def test_overflow_compacts_and_retries_exactly_once(faux: FauxProvider) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    settings = CompactionSettings(keep_recent_tokens=100)
    harness = make(faux, stream_fn=spying(faux, calls), compaction=settings)
    await fill(harness, faux, 2)
    recorder = Recorder()
    harness.subscribe(recorder)
    overflow = "prompt is too long: 213000 tokens > 200000 maximum"
    faux.set_responses(
        [
            faux_assistant_message("", stop_reason="error", error_message=overflow),
            faux_assistant_message("## Goal\nsummary"),
            faux_assistant_message("answer after the retry"),
        ]
    )
    reply = await harness.prompt("a big question")
    assert reply.text == "answer after the retry"
    assert faux.call_count == 2 + 3  # the two filled turns, the failure, the summary, the retry
    # the retry is a continue run: it sees the summary, the kept exchange and the question,
    # not the failed reply
    retry_context = calls[-1][1]
    roles = [m.role for m in retry_context.messages if m.role != "system"]
    assert roles == ["user", "user", "assistant", "user"]
    assert "compacted into the following summary" in retry_context.messages[0].content[0].text  # type: ignore[union-attr]
    assert [m.role for m in harness.last_run_messages] == ["user", "assistant", "assistant"]
    types = recorder.types
    first_end = types.index("agent_end")
    assert types[first_end : first_end + 5] == [
        "agent_end",
        "compaction_start",
        "session_compact",
        "compaction_end",
        "agent_start",
    ]
    assert types[-2:] == ["agent_end", "settled"] and types.count("settled") == 1
    end = recorder.of("compaction_end")[0]
    assert end.reason == "overflow" and end.will_retry is True
    # pi 1.6: the failed reply stays in the session file, hidden by a context edit written
    # before the compaction
    tail = harness.session.get_branch()[-4:]
    failed, edit, compaction, answer = tail
    assert isinstance(failed, MessageEntry) and failed.message.stop_reason == "error"  # type: ignore[union-attr]
    assert isinstance(edit, ContextEditEntry) and edit.target_id == failed.id
    assert edit.replacement is None and isinstance(compaction, CompactionEntry)
    assert isinstance(answer, MessageEntry) and answer.message.text == "answer after the retry"  # type: ignore[union-attr]


async def test_a_second_overflow_is_reported_not_retried(faux: FauxProvider) -> None:
    harness = make(faux, compaction=CompactionSettings(keep_recent_tokens=100))
    await fill(harness, faux, 2)
    recorder = Recorder()
    harness.subscribe(recorder)
    overflow = (
        "This model's maximum context length is 128000 tokens. "
        "However, your messages resulted in 130000 tokens."
    )
    faux.set_responses(
        [
            faux_assistant_message("", stop_reason="error", error_message=overflow),
            faux_assistant_message("## Goal\nsummary"),
            faux_assistant_message("", stop_reason="error", error_message=overflow),
        ]
    )
    reply = await harness.prompt("too big")
    assert reply.stop_reason == "error" and reply.error_message == overflow
    assert faux.call_count == 2 + 3 and recorder.types.count("compaction_start") == 1
    # pi 1.6 reports the failed recovery on a compaction_end of its own (no start)
    failed = recorder.of("compaction_end")[-1]
    assert failed.reason == "overflow" and failed.result is None
    assert failed.error_message == RECOVERY_FAILED_OVERFLOW and failed.will_retry is False
    assert harness.phase == "idle" and recorder.types[-1] == "settled"


async def test_an_overflow_with_nothing_to_compact_is_hidden_not_retried(
    faux: FauxProvider,
) -> None:
    """pi 1.6 hides the failed attempt first; with nothing before it to summarise there is no
    compaction (and no event) and the run ends with the error."""
    harness = make(faux)
    recorder = Recorder()
    harness.subscribe(recorder)
    faux.set_responses(
        [faux_assistant_message("", stop_reason="error", error_message="prompt is too long")]
    )
    reply = await harness.prompt("the only question")
    assert reply.stop_reason == "error" and faux.call_count == 1
    assert "compaction_start" not in recorder.types and "compaction_end" not in recorder.types
    edit = harness.session.get_branch()[-1]
    assert isinstance(edit, ContextEditEntry) and edit.replacement is None
    assert [m.role for m in harness.session.build_context().messages] == ["user"]


async def test_no_automatic_compaction_after_an_abort_or_another_model(faux: FauxProvider) -> None:
    harness = make(faux)
    overflow = "prompt is too long"
    faux.set_responses(
        [faux_assistant_message("", stop_reason="aborted", error_message="Request was aborted")]
    )
    await harness.prompt("x")
    other = AssistantMessage(
        content=[],
        api="x",
        provider="other",
        model="m",
        stop_reason="error",
        error_message=overflow,
    )
    settings = harness.compaction_settings
    check = check_compaction(
        other, harness.session, harness.model, settings, recovery_attempted=False
    )
    assert check is None  # another model's overflow: not ours to compact for
    assert faux.call_count == 1


# --- tree navigation -----------------------------------------------------------------------------


async def test_navigate_to_an_assistant_reply_with_a_summary(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 2)
    branch = harness.session.get_branch()
    first_answer = branch[1].id
    old_leaf = harness.session.leaf_id
    faux.append_responses([faux_assistant_message("## Goal\nbranch summary")])
    recorder = Recorder()
    harness.subscribe(recorder)
    phases: list[str] = []
    harness.on("session_before_tree", lambda event: phases.append(harness.phase))
    result = await harness.navigate_tree(first_answer, summarize=True, label="checkpoint")
    assert phases == ["branch_summary"] and harness.phase == "idle"
    assert result.cancelled is False and result.editor_text is None
    summary = result.summary_entry
    assert isinstance(summary, BranchSummaryEntry) and summary.parent_id == first_answer
    # pi 1.6: from_id is the leaf the summarised branch was left at (pi 0.79's harness wrote
    # the target)
    assert summary.from_id == old_leaf and summary.from_hook is False
    assert summary.summary.startswith("The user explored a different conversation branch")
    assert summary.details == {"readFiles": [], "modifiedFiles": []}
    assert harness.session.get_label(summary.id) == "checkpoint"
    event = recorder.of("session_tree")[0]
    assert (event.old_leaf_id, event.new_leaf_id) == (old_leaf, harness.session.leaf_id)
    assert event.summary_entry == summary
    # the next prompt continues from there
    faux.append_responses([faux_assistant_message("new branch")])
    await harness.prompt("take another direction")
    assert [m.role for m in harness.session.build_context().messages] == [
        "user",
        "assistant",
        "branchSummary",
        "user",
        "assistant",
    ]


async def test_navigate_to_a_user_message_returns_its_text(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 2)
    second_question = harness.session.get_branch()[2]
    result = await harness.navigate_tree(second_question.id)
    assert result.editor_text is not None and result.editor_text.startswith("question 1")
    assert harness.session.leaf_id == second_question.parent_id
    assert result.summary_entry is None and faux.call_count == 2  # no summary asked for
    # to the first question: the leaf goes before the root
    first = harness.session.get_branch()[0]
    await harness.navigate_tree(first.id)
    assert harness.session.leaf_id is None


async def test_navigation_errors_and_hooks(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 2)
    target = harness.session.get_branch()[1].id
    leaf = harness.session.leaf_id
    assert (await harness.navigate_tree(leaf or "")).cancelled is False  # the current leaf: no-op
    with pytest.raises(AgentHarnessError, match="Entry nope not found") as missing:
        await harness.navigate_tree("nope")
    assert missing.value.code == "invalid_argument"

    remove = harness.on("session_before_tree", lambda event: {"cancel": True})
    assert (await harness.navigate_tree(target)).cancelled is True
    assert harness.session.leaf_id == leaf
    remove()

    seen: list[Any] = []

    def provide(event: Any) -> dict[str, Any]:
        seen.append(event.preparation)
        return {"summary": {"summary": "hook summary", "details": {"by": "hook"}}, "label": "L"}

    harness.on("session_before_tree", provide)
    result = await harness.navigate_tree(target, summarize=True, custom_instructions="x")
    preparation = seen[0]
    assert preparation.target_id == target and preparation.old_leaf_id == leaf
    assert preparation.user_wants_summary and preparation.custom_instructions == "x"
    assert len(preparation.entries_to_summarize) == 2
    entry = result.summary_entry
    assert entry is not None and entry.summary == "hook summary" and entry.from_hook is True
    assert harness.session.get_label(entry.id) == "L"
    assert faux.call_count == 2

    failing = make(faux)
    await fill(failing, faux, 2)
    faux.append_responses([faux_assistant_message("", stop_reason="error", error_message="nope")])
    with pytest.raises(AgentHarnessError, match="nope") as info:
        await failing.navigate_tree(failing.session.get_branch()[1].id, summarize=True)
    assert info.value.code == "branch_summary" and failing.phase == "idle"


# --- listeners -----------------------------------------------------------------------------------


async def test_listeners_get_the_signal_and_posted_events_keep_their_order(
    faux: FauxProvider,
) -> None:
    seen: list[tuple[str, AbortSignal | None]] = []

    def with_signal(event: Any, signal: AbortSignal | None) -> None:
        seen.append((event.type, signal))

    faux.set_responses([faux_assistant_message("ok")])
    harness = make(faux)
    harness.subscribe(with_signal)
    harness.set_thinking_level("low")  # posted before the run: delivered before its events
    await harness.prompt("x")
    assert seen[0][0] == "thinking_level_update" and seen[1][0] == "agent_start"
    run_signal = seen[1][1]
    assert run_signal is not None and all(signal is run_signal for _, signal in seen[1:])
    harness.set_thinking_level("off")
    await harness.wait_for_idle()
    assert seen[-1] == ("thinking_level_update", None)

    broken = make(faux)
    broken.subscribe(lambda event: (_ for _ in ()).throw(ValueError("bad")))
    broken.set_thinking_level("low")  # a posted event's listener failure is only logged
    await broken.wait_for_idle()
    assert broken.thinking_level == "low"


async def test_events_serialise_to_pi_json(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"}, id="call_1")]),
            faux_assistant_message("done"),
        ]
    )
    harness = make(faux, tools=[echo_tool()])
    recorder = Recorder()
    harness.subscribe(recorder)
    await harness.prompt("go")
    dumped = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in recorder.events]
    json.dumps(dumped)
    save_point = next(d for d in dumped if d["type"] == "save_point")
    assert save_point == {"type": "save_point", "hadPendingMutations": False}
    assert next(d for d in dumped if d["type"] == "settled") == {
        "type": "settled",
        "nextTurnCount": 0,
    }


async def test_tool_results_reach_the_model(faux: FauxProvider) -> None:
    def check(
        context: Context, options: StreamOptions, state: Any, model: Model
    ) -> AssistantMessage:
        last = context.messages[-1]
        assert isinstance(last, ToolResultMessage) and last.content[0].text == "echo:hi"  # type: ignore[union-attr]
        return faux_assistant_message("seen")

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"text": "hi"})]), check])
    harness = make(faux, tools=[echo_tool(lambda p, s, u: text_result(f"echo:{p['text']}"))])
    assert (await harness.prompt("go")).text == "seen"
    assert isinstance(text_result("x"), AgentToolResult)


async def test_next_turn_survives_abort_and_wait_for_idle(faux: FauxProvider) -> None:
    started = asyncio.Event()

    async def wait_for_abort(
        params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> str:
        started.set()
        assert signal is not None
        await signal.wait()
        return "stopped"

    faux.set_responses([faux_assistant_message([faux_tool_call("echo", {"text": "x"})])])
    harness = make(faux, tools=[echo_tool(wait_for_abort)])
    run = asyncio.create_task(harness.prompt("go"))
    await started.wait()
    harness.next_turn("keep me")
    harness.steer("drop me")
    result = harness.abort()
    assert [m.content[0].text for m in result.cleared_steer] == ["drop me"]  # type: ignore[union-attr]
    await harness.wait_for_idle()
    assert run.done() and harness.phase == "idle"
    faux.set_responses([faux_assistant_message("later")])
    await harness.prompt("next")
    assert texts(harness.session)[-3:] == ["keep me", "next", "later"]


async def test_hook_overrides_of_branch_summary_instructions(faux: FauxProvider) -> None:
    harness = make(faux)
    await fill(harness, faux, 2)
    prompts: list[str] = []

    def reply(
        context: Context, options: StreamOptions, state: Any, model: Model
    ) -> AssistantMessage:
        message = context.messages[-1]
        prompts.append(message.content[0].text)  # type: ignore[union-attr]
        return faux_assistant_message("## Goal\nx")

    faux.append_responses([reply])
    harness.on(
        "session_before_tree",
        lambda event: {"custom_instructions": "Only files.", "replace_instructions": True},
    )
    await harness.navigate_tree(harness.session.get_branch()[1].id, summarize=True)
    assert prompts[0].endswith("</conversation>\n\nOnly files.")


async def test_a_bad_request_patch_fails_the_run_not_the_harness(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("never")])
    harness = make(faux)
    harness.on("before_provider_request", lambda event: {"stream_options": {"colour": "red"}})
    reply = await harness.prompt("hi")
    assert reply.stop_reason == "error"
    assert "unknown stream option 'colour'" in (reply.error_message or "")
    assert harness.phase == "idle"


async def test_automatic_compaction_respects_the_compact_hook(faux: FauxProvider) -> None:
    small = faux.get_model().model_copy(update={"context_window": 1000})
    settings = CompactionSettings(reserve_tokens=800, keep_recent_tokens=50)
    harness = make(faux, model=small, compaction=settings)
    reasons: list[Any] = []
    harness.on("session_before_compact", lambda event: {"cancel": True})
    harness.subscribe(
        lambda e: (
            reasons.append((e.reason, e.aborted, e.error_message))
            if e.type == "compaction_end"
            else None
        )
    )
    faux.set_responses([faux_assistant_message("long answer " * 40)])
    reply = await harness.prompt("question " + "z" * 800)
    assert reply.text.startswith("long answer")  # the run itself is fine
    # pi 1.6: a compaction the hook cancelled ends aborted, without an error message
    assert reasons == [("threshold", True, None)]
    assert not any(isinstance(e, CompactionEntry) for e in harness.session.get_entries())


def test_stream_option_patches() -> None:
    options = HarnessStreamOptions(headers={"a": "1"}, metadata={"m": 1}, cache_retention="long")
    patched = options.patched({"headers": {"b": "2", "a": None}, "cacheRetention": None})
    assert patched.headers == {"b": "2"} and patched.cache_retention is None
    assert options.patched({"headers": {"a": None}}).headers is None
    assert options.patched({"metadata": None}).metadata is None
    with pytest.raises(ValueError, match="unknown stream option"):
        options.patched({"nope": 1})
    with pytest.raises(ValueError, match="must be a mapping"):
        options.patched({"headers": "x"})
    request = StreamOptions(api_key="k", extra={"x": 1})
    built = HarnessStreamOptions(transport="websocket", timeout_ms=5).apply_to(request)
    assert (built.api_key, built.timeout_ms) == ("k", 5)
    assert built.extra == {"x": 1, "transport": "websocket"}
    assert built.max_retries == 2  # provider default when unset
    assert request.timeout_ms is None and request.extra == {"x": 1}  # a copy


async def test_a_listener_failing_on_a_failure_does_not_hide_it(faux: FauxProvider) -> None:
    def broken(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        raise RuntimeError("stream function broke")

    def refuses_failures(event: Any) -> None:
        message = getattr(event, "message", None)
        is_failure = isinstance(message, AssistantMessage) and message.stop_reason == "error"
        if is_failure and event.type == "message_end":
            raise ValueError("cannot show errors")

    harness = make(faux, stream_fn=broken)
    harness.subscribe(refuses_failures)
    reply = await harness.prompt("hi")  # the listener's failure is logged, not raised
    assert reply.stop_reason == "error" and reply.error_message is not None
    assert "stream function broke" in reply.error_message and harness.phase == "idle"
    # the failure reply was still written before the listener heard of it
    assert session_roles(harness.session) == ["user", "assistant"]


async def test_append_message_now_or_at_the_next_save_point(faux: FauxProvider) -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    harness: AgentHarness

    def note_during_the_turn(
        params: dict[str, Any], signal: AbortSignal | None, on_update: Any
    ) -> str:
        harness.append_message(CustomMessage(custom_type="note", content="added while busy"))
        return "ok"

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "x"})]),
            faux_assistant_message("done"),
        ]
    )
    harness = make(faux, tools=[echo_tool(note_during_the_turn)], stream_fn=spying(faux, calls))
    harness.append_message(CustomMessage(custom_type="note", content="added while idle"))
    assert session_roles(harness.session) == ["custom"]
    await harness.prompt("go")
    assert session_roles(harness.session) == [
        "custom",
        "user",
        "assistant",
        "toolResult",
        "custom",
        "assistant",
    ]
    second_call = calls[1][1]
    assert [m.role for m in second_call.messages][-2:] == ["toolResult", "user"]
    assert second_call.messages[-1].content[0].text == "added while busy"  # type: ignore[union-attr]


# --- pi 1.6: the finish_turn hook, thinking levels and tool durations in the session -------------


async def test_finish_turn_hook_ends_the_run_after_a_tool_turn(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "a"})]),
            faux_assistant_message("never asked"),
        ]
    )
    harness = make(faux, tools=[echo_tool()])
    seen: list[tuple[str, int]] = []
    recorder = Recorder()
    harness.subscribe(recorder)

    def finish(event: Any) -> dict[str, str]:
        seen.append((event.message.stop_reason, len(event.tool_results)))
        assert "turn_end" not in recorder.types  # decided before the turn is reported
        return {"action": "end"}

    harness.on("finish_turn", finish)
    reply = await harness.prompt("go")
    assert seen == [("toolUse", 1)] and reply.stop_reason == "toolUse"
    assert session_roles(harness.session) == ["user", "assistant", "toolResult"]
    assert faux.pending_response_count == 1 and harness.phase == "idle"
    assert recorder.types[-4:] == ["turn_end", "save_point", "agent_end", "settled"]


async def test_finish_turn_hook_continue_asks_once_more(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    harness = make(faux)
    harness.on("finish_turn", lambda event: None)
    harness.on(
        "finish_turn",
        lambda event: FinishTurnResult("continue") if event.message.text == "first" else None,
    )
    reply = await harness.prompt("go")
    assert reply.text == "second"
    assert texts(harness.session) == ["go", "first", "second"]


async def test_a_bad_finish_turn_result_fails_the_run_not_the_harness(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("ok")])
    harness = make(faux)
    harness.on("finish_turn", lambda event: {"action": "stop"})
    reply = await harness.prompt("hi")
    assert reply.stop_reason == "error"
    assert "finish_turn hook returned action must be 'end', 'continue' or None" in (
        reply.error_message or ""
    )
    assert harness.phase == "idle"


async def test_replies_and_tool_results_persist_thinking_level_and_duration(
    faux: FauxProvider, tmp_path: Path
) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"text": "a"})]),
            faux_assistant_message("done"),
        ]
    )
    path = tmp_path / "session.jsonl"
    session = Session.create(JsonlSessionStorage(path))
    harness = make(faux, session, tools=[echo_tool()], thinking_level="medium")
    await harness.prompt("go")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    messages = [r["message"] for r in records if r.get("type") == "message"]
    assert [m.get("thinkingLevel") for m in messages if m["role"] == "assistant"] == [
        "medium",
        "medium",
    ]
    (result,) = [m for m in messages if m["role"] == "toolResult"]
    assert isinstance(result["durationMs"], int) and result["durationMs"] >= 0
