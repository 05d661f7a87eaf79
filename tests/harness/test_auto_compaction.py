"""Edge cases of automatic compaction (pi-coding-agent 1.6's ``_checkCompaction``, the check
before the next request of a running turn, the projected cut point) and of thinking levels
clamped to the model. The recorded pi 1.6 runs are replayed in ``test_harness_scenarios_pi16``;
these pin the conditions one at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    FauxProvider,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.ai.events import DoneEvent, ErrorEvent, StartEvent
from pi_notebook.harness import (
    AgentHarness,
    CompactionSettings,
    InMemorySessionStorage,
    JsonlSessionStorage,
    Session,
)
from pi_notebook.harness.auto_compaction import (
    RECOVERY_FAILED_LENGTH,
    RECOVERY_FAILED_OVERFLOW,
    CompactionCheck,
    check_compaction,
    exceeds_threshold,
)
from pi_notebook.harness.compaction import find_cut_point, prepare_compaction
from pi_notebook.harness.entries import LeafEntry, ThinkingLevelChangeEntry
from pi_notebook.harness.projection import project_branch
from tests.agent.test_agent_loop import make_tool
from tests.paths import GOLDEN

MODEL = Model(id="m", api="faux", provider="p", reasoning=True, context_window=1000, max_tokens=100)
SETTINGS = CompactionSettings(reserve_tokens=200, keep_recent_tokens=20)
OVERFLOW = "prompt is too long: 1200 tokens > 1000 maximum"


def reply(stop: str = "stop", error: str | None = None, **usage: int) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="an answer " * 10)],
        api="faux",
        provider="p",
        model="m",
        stop_reason=stop,  # type: ignore[arg-type]
        error_message=error,
        usage=Usage(**usage),
    )


def session_with(*messages: Any) -> Session:
    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="a first question " * 10))
    session.append_message(reply(input=50, output=10))
    for message in messages:
        session.append_message(message)
    return session


def check(message: AssistantMessage, session: Session, **options: Any) -> CompactionCheck | None:
    options.setdefault("recovery_attempted", False)
    return check_compaction(message, session, options.pop("model", MODEL), SETTINGS, **options)


# --- _checkCompaction ----------------------------------------------------------------------------


def test_an_overflow_error_is_retried_once() -> None:
    failed = reply("error", OVERFLOW)
    session = session_with(UserMessage(content="q"), failed)
    assert check(failed, session) == CompactionCheck("overflow", will_retry=True)
    again = check(failed, session, recovery_attempted=True)
    assert again == CompactionCheck("overflow", recovery_failed=RECOVERY_FAILED_OVERFLOW)


def test_a_successful_overflowed_reply_is_compacted_not_retried() -> None:
    silent = reply(input=900, cache_read=200)  # the prompt did not fit: 1100 > 1000
    session = session_with(UserMessage(content="q"), silent)
    assert check(silent, session) == CompactionCheck("overflow")
    # retried or not, a completed reply never reports a failed recovery
    assert check(silent, session, recovery_attempted=True) == CompactionCheck("overflow")


def test_a_length_stop_below_the_output_limit_is_recovered() -> None:
    cut = reply("length", output=60)
    session = session_with(UserMessage(content="q"), cut)
    assert check(cut, session) == CompactionCheck("overflow", will_retry=True)
    failed = check(cut, session, recovery_attempted=True)
    assert failed == CompactionCheck("overflow", recovery_failed=RECOVERY_FAILED_LENGTH)
    at_limit = reply("length", output=100)  # the output limit itself: not the context's doing
    session = session_with(UserMessage(content="q"), at_limit)
    assert check(at_limit, session) is None
    unlimited = MODEL.model_copy(update={"max_tokens": 0})
    assert check(cut, session_with(UserMessage(content="q"), cut), model=unlimited) is None


def test_only_replies_of_the_current_model_count_as_overflow() -> None:
    failed = reply("error", OVERFLOW).model_copy(update={"model": "other"})
    assert check(failed, session_with(UserMessage(content="q"), failed)) is None


def test_aborted_replies_are_checked_before_a_prompt_only() -> None:
    aborted = reply("aborted", "Request was aborted", input=900)
    session = session_with(UserMessage(content="q"), aborted)
    assert check(aborted, session) is None  # after its run
    assert check(aborted, session, skip_aborted=False) == CompactionCheck("threshold")


def test_disabled_compaction_checks_nothing() -> None:
    failed = reply("error", OVERFLOW)
    session = session_with(UserMessage(content="q"), failed)
    off = CompactionSettings(enabled=False)
    assert check_compaction(failed, session, MODEL, off, recovery_attempted=False) is None


def test_a_reply_older_than_the_latest_compaction_is_skipped() -> None:
    big = reply(input=900)
    session = session_with(UserMessage(content="q"), big)
    first = session.get_branch()[0].id
    session.append_compaction("summary", first, 900)
    assert check(big, session) is None  # its usage measured the context before compacting


def test_a_hidden_overflow_is_not_recovered_again() -> None:
    """A context edit that hid the failed attempt (pi's recovery) means it was dealt with."""
    failed = reply("error", OVERFLOW)
    session = session_with(UserMessage(content="q"), failed)
    session.append_context_edit(session.get_branch()[-1].id, None)
    assert check(failed, session) is None  # and the estimate of what is left is small


def test_the_threshold_is_exclusive() -> None:
    at = reply(total_tokens=800)  # 1000 - 200
    assert check(at, session_with(UserMessage(content="q"), at)) is None
    over = reply(total_tokens=801)
    assert check(over, session_with(UserMessage(content="q"), over)) == CompactionCheck("threshold")


def test_a_failed_reply_is_measured_by_the_last_usable_usage() -> None:
    failed = reply("error", "HTTP 500: oops")  # not an overflow, no usage of its own
    session = session_with(UserMessage(content="q " * 3500), failed)
    assert check(failed, session) == CompactionCheck("threshold")  # 60 + ~1750 estimated
    small = session_with(UserMessage(content="q"), failed)
    assert check(failed, small) is None


def test_the_check_before_the_next_request() -> None:
    session = session_with(UserMessage(content="q"))
    assert not exceeds_threshold(session, MODEL, SETTINGS)
    session.append_message(reply(total_tokens=801))
    assert exceeds_threshold(session, MODEL, SETTINGS)
    assert not exceeds_threshold(session, MODEL.model_copy(update={"context_window": 0}), SETTINGS)
    off = CompactionSettings(enabled=False)
    assert not exceeds_threshold(session, MODEL, off)


# --- the projected cut point ---------------------------------------------------------------------


def test_a_hidden_entry_is_no_cut_point_and_counts_nothing() -> None:
    session = session_with()
    question = session.append_message(UserMessage(content="a second question " * 10)).id
    hidden = session.append_message(reply("error", OVERFLOW))
    session.append_context_edit(hidden.id, None)
    path = session.get_branch()
    projected = project_branch(path)
    assert [bool(p.messages) for p in projected] == [True, True, True, False, False]
    cut = find_cut_point(projected, 0, len(projected), keep_recent_tokens=20)
    # the budget is reached at the question; everything after it was the hidden attempt, so
    # the cut moves past it (pi 1.6's recovery rule) and the question is summarised as the
    # start of a split turn
    assert projected[cut.first_kept_entry_index].entry.id == hidden.id
    assert cut.is_split_turn and projected[cut.turn_start_index].entry.id == question


def test_nothing_to_summarise_is_nothing_to_compact() -> None:
    """pi 1.6 has no compaction when everything on the branch would be kept; an explicit
    ``compact()`` still plans one, as pi 0.79's harness did."""
    session = session_with()
    path = session.get_branch()
    huge = CompactionSettings(keep_recent_tokens=10**6)
    assert prepare_compaction(path, huge) is None
    planned = prepare_compaction(path, huge, allow_empty=True)
    assert planned is not None and planned.messages_to_summarize == []


@pytest.mark.parametrize("folder", ["pi", "ours"])
def test_the_projection_is_the_context(folder: str) -> None:
    """The projection's messages are ``build_context``'s, at every entry of every pi 1.6 file
    (pi's and ours: system messages, context edits, compactions, retain-none, branches)."""
    for path in sorted((GOLDEN / "pi-1.6" / "sessions" / folder).glob("*.jsonl")):
        header, entries = JsonlSessionStorage(path).load()
        storage = InMemorySessionStorage()  # a copy: moving the leaf must not touch the file
        storage.create(header, entries)
        session = Session.open(storage)
        for entry in entries:
            if isinstance(entry, LeafEntry):
                continue
            session.set_leaf(entry.id)
            projected = [m for p in project_branch(session.get_branch()) for m in p.messages]
            assert projected == session.build_context().messages, (path.name, entry.id)


# --- the harness ---------------------------------------------------------------------------------


def make(faux: FauxProvider, **options: Any) -> AgentHarness:
    model = options.pop("model", faux.get_model())
    return AgentHarness(Session.create(InMemorySessionStorage()), model, **options)


Step = AssistantMessage | Callable[[], AssistantMessage]


def scripted(steps: list[Step]) -> Callable[..., AssistantMessageEventStream]:
    """A stream function answering with ``steps`` in order, usage as given (the faux provider
    would estimate it); summary requests of a compaction get a fixed summary."""
    queue = steps  # the caller may add steps later

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        if (context.system_prompt or "").startswith("You are a context summarization"):
            message = reply(input=40, output=10).model_copy(
                update={"content": [TextContent(text="## Goal\nsummary")]}
            )
        else:
            step = queue.pop(0)
            message = step() if callable(step) else step
        message = message.model_copy(update={"provider": model.provider, "model": model.id})
        start = StartEvent(partial=message.model_copy(update={"content": []}))
        if message.stop_reason == "error":
            end: Any = ErrorEvent(reason="error", error=message)
        else:
            end = DoneEvent(reason=message.stop_reason, message=message)  # type: ignore[arg-type]
        return AssistantMessageEventStream.of([start, end])

    return stream


def tool_call_reply(tokens: int) -> AssistantMessage:
    call = ToolCall(id="c1", name="echo", arguments={"text": "x"})
    return reply("toolUse", total_tokens=tokens).model_copy(update={"content": [call]})


ECHO = make_tool("echo", lambda p, s, u: "echoed", properties={"text": {"type": "string"}})


def echo_harness(steps: list[Step]) -> AgentHarness:
    """A harness over a new in-memory session with the echo tool, the model scripted by
    ``steps``."""
    return AgentHarness(
        Session.create(InMemorySessionStorage()),
        MODEL,
        tools=[ECHO],
        compaction=SETTINGS,
        stream_fn=scripted(steps),
    )


async def harness_before_a_compaction() -> tuple[AgentHarness, list[Step]]:
    """A harness after one short run: the next run's tool call (``tool_call_reply(900)``)
    fills the context, so the harness compacts before the request that follows it."""
    steps: list[Step] = [reply(total_tokens=100)]
    harness = echo_harness(steps)
    await harness.prompt("first question " * 20)
    return harness, steps


async def test_compaction_before_the_next_request_runs_in_the_compaction_phase() -> None:
    harness, steps = await harness_before_a_compaction()
    phases: list[str] = []

    def before_compact(event: Any) -> None:
        phases.append(harness.phase)
        harness.steer("queued while compacting")

    harness.on("session_before_compact", before_compact)
    steps += [tool_call_reply(900), reply(total_tokens=300)]
    types: list[str] = []
    harness.subscribe(lambda e: types.append(e.type))
    await harness.prompt("echo please")
    assert phases == ["compaction"] and harness.phase == "idle"
    # between the tool's turn and the next request; the steering queued meanwhile goes with it
    start = types.index("compaction_start")
    assert types[start - 2 : start] == ["turn_end", "save_point"]
    after = types[start:]
    assert after.index("compaction_end") < after.index("turn_start")
    messages = harness.session.build_context().messages
    assert [m.role for m in messages][-3:] == ["toolResult", "user", "assistant"]
    assert messages[-2].content[0].text == "queued while compacting"  # type: ignore[union-attr]


async def test_a_failed_compaction_before_the_next_request_does_not_stop_the_turn() -> None:
    steps: list[Step] = [reply(total_tokens=100)]
    harness = echo_harness(steps)
    await harness.prompt("first question " * 20)

    def broken(event: Any) -> None:
        raise RuntimeError("the summary service is down")

    harness.on("session_before_compact", broken)
    steps += [tool_call_reply(900), reply(total_tokens=300)]
    ends: list[Any] = []
    harness.subscribe(lambda e: ends.append(e) if e.type == "compaction_end" else None)
    answer = await harness.prompt("echo please")
    assert answer.stop_reason == "stop" and not steps  # the turn went on and finished
    assert ends[0].reason == "threshold" and ends[0].result is None
    assert ends[0].aborted is False
    assert (ends[0].error_message or "").startswith("Auto-compaction failed: ")


# --- thinking levels -----------------------------------------------------------------------------


def thinking_entries(session: Session) -> list[str]:
    return [
        e.thinking_level for e in session.get_entries() if isinstance(e, ThinkingLevelChangeEntry)
    ]


async def test_thinking_levels_are_clamped_before_they_are_compared(faux: FauxProvider) -> None:
    thinker = faux.get_model()  # reasons, no xhigh/max in its map
    plain = thinker.model_copy(update={"id": "plain", "reasoning": False})
    harness = make(faux, model=thinker, thinking_level="xhigh")
    assert harness.thinking_level == "high"
    updates: list[tuple[str, str]] = []
    harness.subscribe(
        lambda e: (
            updates.append((e.previous_level, e.level))
            if e.type == "thinking_level_update"
            else None
        )
    )
    harness.set_thinking_level("max")  # still high: nothing recorded
    await harness.wait_for_idle()
    assert thinking_entries(harness.session) == [] and updates == []
    seen: list[str | None] = []

    def look(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        seen.append(options.reasoning)
        return faux_assistant_message("ok")

    faux.set_responses([look, look, look])
    await harness.prompt("one")
    reply_level = harness.session.build_context().messages[-1].thinking_level  # type: ignore[union-attr]
    assert seen == ["high"] and reply_level == "high"
    harness.set_model(plain)  # the level asked for (max) clamps to off on a plain model
    assert harness.thinking_level == "off"
    harness.set_thinking_level("low")  # still off there
    await harness.prompt("two")
    harness.set_model(thinker)  # low, as last asked
    await harness.prompt("three")
    await harness.wait_for_idle()
    assert harness.thinking_level == "low" and seen == ["high", None, "low"]
    assert thinking_entries(harness.session) == ["off", "low"]
    assert updates == [("high", "off"), ("off", "low")]


async def test_a_recorded_level_is_compared_clamped(faux: FauxProvider) -> None:
    harness = make(faux, thinking_level="high")
    harness.session.append_thinking_level_change("xhigh")  # runs as high on this model
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    await harness.prompt("one")
    assert thinking_entries(harness.session) == ["xhigh"]
    harness.session.append_thinking_level_change("minimal")
    await harness.prompt("two")
    assert thinking_entries(harness.session) == ["xhigh", "minimal", "high"]


def test_a_bad_thinking_level_is_refused_clearly(faux: FauxProvider) -> None:
    harness = make(faux)
    with pytest.raises(Exception, match="thinking level must be one of"):
        harness.set_thinking_level("extreme")  # type: ignore[arg-type]
    assert harness.thinking_level == "off"
