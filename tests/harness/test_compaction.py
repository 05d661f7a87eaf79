"""Compaction: token estimates, cut points, the summarisation requests (byte-exact against
``golden/compaction-prompt.txt``), split turns, updates of an earlier summary, file lists, and
the golden example of ``golden/sample-session.tree.txt`` reproduced exactly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    FauxProvider,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.harness import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    InMemorySessionStorage,
    JsonlSessionStorage,
    Session,
)
from pi_notebook.harness.compaction import (
    CompactionError,
    CompactionSettings,
    FileOperations,
    build_context_messages,
    compact,
    find_cut_point,
    format_file_operations,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from pi_notebook.harness.prompts import (
    CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pi_notebook.harness.tokens import (
    estimate_context_tokens,
    estimate_tokens,
    js_json_stringify,
    js_length,
)
from tests.paths import GOLDEN

SAMPLE = GOLDEN / "sample-session.jsonl"
A3B = "8281aa80"  # the branch the golden compaction was made on ends here
HISTORY_REPLY = (
    "## Goal\nWrite tests for src/app.ts.\n\n## Progress\n### Done\n- [x] Read src/app.ts"
)
PREFIX_REPLY = "## Original Request\nWrite tests.\n\n## Early Progress\n- Planned test file"


def load(path: Path) -> Session:
    """A golden session file, in memory (appends must not touch the golden file)."""
    header, entries = JsonlSessionStorage(path).load()
    storage = InMemorySessionStorage()
    storage.create(header, entries)
    return Session.open(storage)


def render_call(system_prompt: str, user_text: str) -> str:
    """One captured request as ``golden/compaction-prompt.txt`` writes it."""
    return f"=== systemPrompt ===\n{system_prompt}\n\n=== user message ===\n{user_text}\n"


Captured = list[tuple[str, str, StreamOptions]]


def capturing(
    faux: FauxProvider, reply: Callable[[str], str], captured: Captured
) -> Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]:
    """A stream function answering with ``reply(prompt)`` through the faux provider and
    recording every request's system prompt, user text and options."""

    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        message = context.messages[-1]
        assert isinstance(message, UserMessage) and not isinstance(message.content, str)
        block = message.content[0]
        assert isinstance(block, TextContent)
        captured.append((context.system_prompt or "", block.text, options))
        faux.append_responses([faux_assistant_message(reply(block.text))])
        return faux.stream(model, context, options)

    return stream_fn


def golden_reply(prompt: str) -> str:
    return PREFIX_REPLY if "This is the PREFIX of a turn" in prompt else HISTORY_REPLY


# --- token estimates -----------------------------------------------------------------------------


def assistant(
    *blocks: TextContent | ThinkingContent | ToolCall, **fields: object
) -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks), api="faux", provider="faux", model="faux-1", **fields
    )


def test_estimate_tokens_per_role() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    assert estimate_tokens(UserMessage(content="12345")) == 2
    assert estimate_tokens(UserMessage(content=[TextContent(text="1234"), image])) == 1201
    call = ToolCall(id="c", name="read", arguments={"path": "a.py", "n": 1.0})
    # "read" + '{"path":"a.py","n":1}' = 4 + 21 chars
    assert (
        estimate_tokens(assistant(TextContent(text="abc"), ThinkingContent(thinking="d"), call))
        == 8
    )
    result = ToolResultMessage(tool_call_id="c", tool_name="read", content=[image])
    assert estimate_tokens(result) == 1200
    assert estimate_tokens(BashExecutionMessage(command="ls", output="a b")) == 2
    assert estimate_tokens(CustomMessage(custom_type="x", content="12345678")) == 2
    assert estimate_tokens(BranchSummaryMessage(summary="s" * 9, from_id="root")) == 3
    assert estimate_tokens(CompactionSummaryMessage(summary="", tokens_before=1)) == 0
    assert estimate_tokens(object()) == 0


def test_lengths_and_json_as_javascript_writes_them() -> None:
    assert js_length("abc") == 3
    assert js_length("é") == 1 and js_length("😀") == 2
    assert js_json_stringify({"a": [1.0, 2.5, "ü"], "b": None}) == '{"a":[1,2.5,"ü"],"b":null}'
    assert js_json_stringify(float("nan")) == "null"


def test_context_tokens_use_the_last_trustworthy_usage() -> None:
    ok = assistant(TextContent(text="x"), usage=Usage(total_tokens=100))
    failed = assistant(
        TextContent(text="y" * 40), usage=Usage(total_tokens=999), stop_reason="error"
    )
    aborted = assistant(usage=Usage(input=500), stop_reason="aborted")
    user = UserMessage(content="z" * 8)
    estimate = estimate_context_tokens([user, ok, user, failed, aborted])
    assert estimate.last_usage_index == 1
    assert (estimate.usage_tokens, estimate.trailing_tokens) == (100, 2 + 10)
    assert estimate.tokens == 112
    # the sum of the parts when total_tokens is missing; no usable usage at all: all estimated
    parts = assistant(usage=Usage(input=3, output=4, cache_read=5, cache_write=6))
    assert estimate_context_tokens([parts]).tokens == 18
    only_estimates = estimate_context_tokens([user, aborted])
    assert only_estimates.last_usage_index is None and only_estimates.tokens == 2


def test_should_compact_and_settings_validation() -> None:
    settings = CompactionSettings()
    assert (settings.enabled, settings.reserve_tokens, settings.keep_recent_tokens) == (
        True,
        16384,
        20000,
    )
    assert should_compact(100_000, 116_384, settings) is False
    assert should_compact(100_001, 116_384, settings) is True
    assert should_compact(10**9, 1000, CompactionSettings(enabled=False)) is False
    with pytest.raises(ValueError, match="keep_recent_tokens"):
        CompactionSettings(keep_recent_tokens=-1)


# --- serialisation and file lists ----------------------------------------------------------------


def test_serialize_conversation_blocks_and_truncation() -> None:
    call = ToolCall(id="c", name="edit", arguments={"path": "a.py", "edits": [{"old": "x"}]})
    messages = [
        UserMessage(
            content=[TextContent(text="hi"), ImageContent(data="AA", mime_type="image/png")]
        ),
        assistant(ThinkingContent(thinking="plan"), TextContent(text="ok"), call),
        ToolResultMessage(
            tool_call_id="c", tool_name="edit", content=[TextContent(text="r" * 2005)]
        ),
        UserMessage(content=[ImageContent(data="AA", mime_type="image/png")]),  # no text: left out
    ]
    assert serialize_conversation(messages) == (
        "[User]: hi\n\n[Assistant thinking]: plan\n\n[Assistant]: ok\n\n"
        '[Assistant tool calls]: edit(path="a.py", edits=[{"old":"x"}])\n\n'
        f"[Tool result]: {'r' * 2000}\n\n[... 5 more characters truncated]"
    )


def test_file_operations_lists() -> None:
    ops = FileOperations()
    for name, path in [("read", "b.py"), ("read", "a.py"), ("write", "a.py"), ("edit", "c.py")]:
        ops.add_message(assistant(ToolCall(id=name, name=name, arguments={"path": path})))
    ops.add_message(assistant(ToolCall(id="x", name="read", arguments={"path": 3})))
    ops.add_message(UserMessage(content="read a.py"))
    ops.add_details({"readFiles": ["d.py"], "modifiedFiles": ["e.py"]})
    ops.add_details("not a details dict")
    assert ops.file_lists() == (["b.py", "d.py"], ["a.py", "c.py", "e.py"])
    assert format_file_operations(*ops.file_lists()) == (
        "\n\n<read-files>\nb.py\nd.py\n</read-files>\n\n<modified-files>\na.py\nc.py\ne.py\n</modified-files>"
    )
    assert format_file_operations([], []) == ""


# --- cut points ----------------------------------------------------------------------------------


def chain(session: Session, texts: Sequence[str]) -> list[str]:
    """user/assistant pairs (with a tool call and result in odd turns); returns their ids."""
    ids = []
    for i, text in enumerate(texts):
        ids.append(session.append_message(UserMessage(content=text)).id)
        if i % 2:
            call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.py"})
            ids.append(session.append_message(assistant(call, stop_reason="toolUse")).id)
            result = ToolResultMessage(
                tool_call_id=f"c{i}", tool_name="read", content=[TextContent(text="x" * 400)]
            )
            ids.append(session.append_message(result).id)
        ids.append(session.append_message(assistant(TextContent(text=text * 10))).id)
    return ids


def test_cut_never_lands_on_a_tool_result() -> None:
    session = Session.create(InMemorySessionStorage())
    ids = chain(session, ["a", "b"])  # u, a | u, a(tool), toolResult(100 tokens), a
    path = session.get_branch()
    # the budget is reached at the tool result: the cut moves forward to the next valid point
    cut = find_cut_point(path, 0, len(path), keep_recent_tokens=50)
    assert path[cut.first_kept_entry_index].id == ids[5]
    assert cut.is_split_turn and path[cut.turn_start_index].id == ids[2]
    # never reached: keep everything from the first message
    whole = find_cut_point(path, 0, len(path), keep_recent_tokens=10**6)
    assert (whole.first_kept_entry_index, whole.is_split_turn) == (0, False)


def test_cut_moves_back_over_settings_entries() -> None:
    session = Session.create(InMemorySessionStorage())
    first = session.append_message(UserMessage(content="x" * 400)).id
    session.append_message(assistant(TextContent(text="y" * 400)))
    change = session.append_thinking_level_change("high").id
    session.append_model_change("faux", "faux-2")
    user = session.append_message(UserMessage(content="z" * 400)).id
    session.append_message(assistant(TextContent(text="w" * 40)))
    path = session.get_branch()
    cut = find_cut_point(path, 0, len(path), keep_recent_tokens=50)
    assert path[cut.first_kept_entry_index].id == change  # the settings stay with the kept part
    assert user in [e.id for e in path[cut.first_kept_entry_index :]]
    # pi's quirk: the kept part now starts with a settings entry, so the cut counts as splitting
    # the turn that began at the previous user message
    assert cut.is_split_turn and path[cut.turn_start_index].id == first


def test_nothing_to_compact() -> None:
    settings = CompactionSettings()
    assert prepare_compaction([], settings) is None
    session = Session.create(InMemorySessionStorage())
    entry = session.append_message(UserMessage(content="hi"))
    session.append_compaction("s", entry.id, 1)
    assert prepare_compaction(session.get_branch(), settings) is None


# --- the golden example --------------------------------------------------------------------------


def test_golden_cut_point_split_turn_and_tokens_before() -> None:
    session = load(SAMPLE)
    path = session.get_branch(A3B)
    preparation = prepare_compaction(path, CompactionSettings(keep_recent_tokens=30))
    assert preparation is not None
    assert preparation.first_kept_entry_id == "faebee61"
    assert preparation.is_split_turn is True
    assert len(preparation.messages_to_summarize) == 5
    assert [m.role for m in preparation.messages_to_summarize] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "branchSummary",
    ]
    assert [m.role for m in preparation.turn_prefix_messages] == ["user"]
    assert preparation.tokens_before == 2715
    assert preparation.previous_summary is None
    assert preparation.file_ops.file_lists() == (["src/app.ts"], [])


async def test_golden_prompts_byte_for_byte_and_summary(faux: FauxProvider) -> None:
    session = load(SAMPLE)
    path = session.get_branch(A3B)
    preparation = prepare_compaction(path, CompactionSettings(keep_recent_tokens=30))
    assert preparation is not None
    captured: Captured = []
    result = await compact(
        preparation,
        faux.get_model(),
        stream_fn=capturing(faux, golden_reply, captured),
        system_prompt=CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT,
        thinking_level="medium",
    )
    history, prefix = (render_call(system, text) for system, text, _ in captured)
    golden = (GOLDEN / "compaction-prompt.txt").read_text(encoding="utf-8")
    assert history + "\n\n######## second call (split turn) ########\n" + prefix == golden

    # the entry pi wrote for it
    written = session.get_entry("9df221ad")
    assert written is not None and written.type == "compaction"
    assert result.summary == written.summary
    assert result.first_kept_entry_id == written.first_kept_entry_id == "faebee61"
    assert result.tokens_before == written.tokens_before == 2715
    assert result.details == written.details

    # output budgets (0.8 / 0.5 of reserve_tokens) and the thinking level of a reasoning model
    budgets = sorted(options.max_tokens or 0 for *_, options in captured)
    assert budgets == [8192, 13107]
    assert {options.reasoning for *_, options in captured} == {"medium"}


async def test_golden_context_after_compaction(faux: FauxProvider) -> None:
    session = load(SAMPLE)
    session.set_leaf(A3B)
    preparation = prepare_compaction(
        session.get_branch(), CompactionSettings(keep_recent_tokens=30)
    )
    assert preparation is not None
    result = await compact(
        preparation, faux.get_model(), stream_fn=capturing(faux, golden_reply, [])
    )
    session.append_compaction(
        result.summary, result.first_kept_entry_id, result.tokens_before, result.details
    )
    pi_leaf = session.get_entry("ded3406f")
    user4 = session.get_entry("d5757066")
    assert pi_leaf is not None and user4 is not None
    session.append_message(user4.message)  # type: ignore[union-attr]
    session.append_message(pi_leaf.message)  # type: ignore[union-attr]
    roles = [m.role for m in session.build_context().messages]
    assert roles == [
        "compactionSummary",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    assert build_context_messages(session.get_branch())[1:] == session.build_context().messages[1:]


async def test_split_turn_summaries_run_in_parallel(faux: FauxProvider) -> None:
    session = load(SAMPLE)
    preparation = prepare_compaction(
        session.get_branch(A3B), CompactionSettings(keep_recent_tokens=30)
    )
    assert preparation is not None
    both_started = asyncio.Event()
    started = 0
    inner = capturing(faux, golden_reply, [])

    async def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        nonlocal started
        started += 1
        if started == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=5)  # sequential calls would hang here
        return inner(model, context, options)

    result = await compact(preparation, faux.get_model(), stream_fn=stream_fn)
    assert started == 2 and "**Turn Context (split turn):**" in result.summary


async def test_split_turn_with_no_history_and_a_failing_call(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="do it"))
    call = ToolCall(id="c", name="write", arguments={"path": "out.txt", "content": "x" * 400})
    session.append_message(assistant(call, stop_reason="toolUse"))
    session.append_message(ToolResultMessage(tool_call_id="c", tool_name="write", content=[]))
    session.append_message(assistant(TextContent(text="done " * 40)))
    preparation = prepare_compaction(
        session.get_branch(), CompactionSettings(keep_recent_tokens=40)
    )
    assert preparation is not None and preparation.is_split_turn
    assert preparation.messages_to_summarize == []
    captured: Captured = []
    result = await compact(
        preparation, faux.get_model(), stream_fn=capturing(faux, golden_reply, captured)
    )
    assert len(captured) == 1  # only the prefix is summarised
    assert result.summary.startswith("No prior history.\n\n---\n\n**Turn Context (split turn):**")
    assert result.summary.endswith("<modified-files>\nout.txt\n</modified-files>")

    def failing(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        faux.append_responses(
            [faux_assistant_message("", stop_reason="error", error_message="boom")]
        )
        return faux.stream(model, context, options)

    with pytest.raises(CompactionError, match="Turn prefix summarization failed: boom") as info:
        await compact(preparation, faux.get_model(), stream_fn=failing)
    assert info.value.code == "summarization_failed"


async def test_update_of_a_previous_summary_and_custom_instructions(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    ids = chain(session, ["one", "two"])
    session.append_compaction(
        "## Goal\nold summary",
        ids[2],
        500,
        {"readFiles": ["old.py"], "modifiedFiles": ["gone.py"]},
    )
    chain(session, ["three", "four"])
    preparation = prepare_compaction(
        session.get_branch(), CompactionSettings(keep_recent_tokens=20)
    )
    assert preparation is not None
    assert preparation.previous_summary == "## Goal\nold summary"
    # only what was kept by the previous compaction (from ids[2] on) is summarised again
    assert preparation.messages_to_summarize[0] == session.get_entry(ids[2]).message  # type: ignore[union-attr]
    captured: Captured = []
    result = await compact(
        preparation,
        faux.get_model(),
        custom_instructions="the file names",
        stream_fn=capturing(faux, lambda _: "## Goal\nnew", captured),
    )
    system, prompt, _ = captured[0]
    assert system == SUMMARIZATION_SYSTEM_PROMPT
    assert prompt.startswith("<conversation>\n[User]: two")
    assert (
        "\n</conversation>\n\n<previous-summary>\n## Goal\nold summary\n</previous-summary>\n\n"
        in prompt
    )
    assert prompt.endswith(UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: the file names")
    read, modified = result.details["readFiles"], result.details["modifiedFiles"]
    assert "old.py" in read and modified == ["gone.py"]
    assert result.summary.startswith("## Goal\nnew")
    assert result.summary.endswith("<modified-files>\ngone.py\n</modified-files>")


async def test_first_compaction_prompt_and_abort(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    chain(session, ["a", "b", "c"])
    preparation = prepare_compaction(session.get_branch(), CompactionSettings(keep_recent_tokens=5))
    assert preparation is not None and preparation.previous_summary is None
    captured: Captured = []
    await compact(preparation, faux.get_model(), stream_fn=capturing(faux, lambda _: "s", captured))
    assert captured[0][1].endswith(SUMMARIZATION_PROMPT)
    assert captured[0][2].reasoning is None  # thinking level not given

    controller = AbortController()
    controller.abort()
    with pytest.raises(CompactionError) as info:
        await compact(
            preparation,
            faux.get_model(),
            signal=controller.signal,
            stream_fn=capturing(faux, lambda _: "s", []),
        )
    assert info.value.code == "aborted"


async def test_thinking_level_only_for_reasoning_models(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    chain(session, ["a", "b"])
    preparation = prepare_compaction(session.get_branch(), CompactionSettings(keep_recent_tokens=5))
    assert preparation is not None
    plain = faux.get_model().model_copy(update={"reasoning": False, "max_tokens": 1000})
    captured: Captured = []
    await compact(
        preparation,
        plain,
        thinking_level="high",
        stream_fn=capturing(faux, lambda _: "s", captured),
    )
    assert captured[0][2].reasoning is None
    assert captured[0][2].max_tokens == 1000  # capped by the model's output limit


async def test_a_summary_the_models_window_cannot_hold_is_refused(faux: FauxProvider) -> None:
    """A model whose window cannot hold even the summary instructions and the reply (the
    conversation is cut to fit first) would write nonsense over the conversation: the request
    is refused before it is sent."""
    session = Session.create(InMemorySessionStorage())
    chain(session, ["word " * 400, "more " * 400, "last"])
    preparation = prepare_compaction(session.get_branch(), CompactionSettings(keep_recent_tokens=5))
    assert preparation is not None
    small = faux.get_model().model_copy(update={"context_window": 150, "max_tokens": 100})
    captured: Captured = []
    with pytest.raises(CompactionError, match="150-token window") as info:
        await compact(preparation, small, stream_fn=capturing(faux, lambda _: "s", captured))
    assert info.value.code == "summarization_failed"
    assert captured == []  # nothing was sent
    roomy = small.model_copy(update={"context_window": 50_000})
    result = await compact(preparation, roomy, stream_fn=capturing(faux, lambda _: "s", captured))
    assert result.summary.startswith("s") and len(captured) == 2  # a split turn: two requests


def test_a_summary_request_fits_the_summarising_models_window() -> None:
    """A small model's window may hold less than the history it summarises: the oldest part is
    left out, said so, and the request (instructions, conversation, reply) fits."""
    from pi_notebook.harness.compaction import fit_to_window

    short = "[User]: hi"
    assert fit_to_window(short, 4096, 800, 2000) == short
    history = "".join(f"[User]: question {i}\n[Assistant]: answer {i}\n" for i in range(2000))
    fitted = fit_to_window(history, 4096, 800, 2000)
    assert fitted.startswith("[... the ") and "characters before this are left out]\n" in fitted
    assert history.endswith(fitted.split("\n", 1)[1])  # the most recent part is kept
    assert (len(fitted) + 2000) // 4 + 800 <= 4096


async def test_a_small_models_summary_request_is_cut_to_its_window(faux: FauxProvider) -> None:
    session = load(SAMPLE)
    preparation = prepare_compaction(
        session.get_branch(A3B), CompactionSettings(reserve_tokens=128, keep_recent_tokens=30)
    )
    assert preparation is not None
    small = faux.get_model().model_copy(update={"context_window": 600, "max_tokens": 100})
    captured: Captured = []
    await compact(preparation, small, stream_fn=capturing(faux, golden_reply, captured))
    for system, text, options in captured:
        assert (len(system) + len(text)) // 4 + (options.max_tokens or 0) <= small.context_window
    assert any("characters before this are left out]" in text for _, text, _ in captured)
