"""Branch summaries: collecting the abandoned entries, the token budget, the request (byte-exact
against ``golden/branch-summary-prompt.txt``) and the summary pi wrote for it."""

from __future__ import annotations

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    FauxProvider,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.harness.branch_summary import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BranchSummaryError,
    collect_entries_for_branch_summary,
    generate_branch_summary,
    prepare_branch_entries,
)
from pi_notebook.harness.prompts import (
    BRANCH_SUMMARY_PROMPT,
    CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT,
)
from tests.harness.test_compaction import Captured, assistant, capturing, load, render_call
from tests.paths import GOLDEN

SAMPLE = GOLDEN / "sample-session.jsonl"
GOLDEN_REPLY = (
    "## Goal\nAdd structured logging.\n\n"
    "## Progress\n### Done\n- [x] Replaced console.log with logger.info"
)


def test_collect_the_abandoned_entries() -> None:
    session = load(SAMPLE)
    collected = collect_entries_for_branch_summary(session, "861c7e65", "fa74abb6")
    assert collected.common_ancestor_id == "fa74abb6"
    assert [e.id for e in collected.entries] == [
        "b90dc256",
        "1a47f42b",
        "83e081ad",
        "d5c38495",
        "80d39775",
        "861c7e65",
    ]
    assert collect_entries_for_branch_summary(session, None, "fa74abb6").entries == []
    # from one branch to a sibling branch: only the part below the fork point
    sibling = collect_entries_for_branch_summary(session, "861c7e65", "ded3406f")
    assert sibling.common_ancestor_id == "fa74abb6" and len(sibling.entries) == 6
    # to a descendant of the old leaf: nothing was abandoned
    assert collect_entries_for_branch_summary(session, "fa74abb6", "ded3406f").entries == []


async def test_golden_prompt_byte_for_byte_and_summary(faux: FauxProvider) -> None:
    session = load(SAMPLE)
    entries = collect_entries_for_branch_summary(session, "861c7e65", "fa74abb6").entries
    captured: Captured = []
    result = await generate_branch_summary(
        entries,
        faux.get_model(),
        stream_fn=capturing(faux, lambda _: GOLDEN_REPLY, captured),
        system_prompt=CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT,
    )
    ((system, prompt, options),) = captured
    golden = (GOLDEN / "branch-summary-prompt.txt").read_text(encoding="utf-8")
    assert render_call(system, prompt) == golden
    assert options.max_tokens == BRANCH_SUMMARY_MAX_TOKENS and options.reasoning is None

    written = session.get_entry("e278acc8")
    assert written is not None and written.type == "branch_summary"
    assert result.summary == written.summary
    assert result.details() == written.details == {"readFiles": [], "modifiedFiles": ["src/app.ts"]}


def _turns(session: Session, count: int, size: int) -> None:
    for i in range(count):
        session.append_message(UserMessage(content=f"q{i} " + "x" * size))
        call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.py"})
        session.append_message(assistant(call, stop_reason="toolUse"))
        result = ToolResultMessage(
            tool_call_id=f"c{i}", tool_name="read", content=[TextContent(text="r" * size)]
        )
        session.append_message(result)
        session.append_message(assistant(TextContent(text=f"a{i}")))


def test_budget_keeps_the_newest_messages_and_skips_tool_results() -> None:
    session = Session.create(InMemorySessionStorage())
    _turns(session, 3, 400)  # each user message ≈ 101 tokens
    entries = session.get_branch()
    everything = prepare_branch_entries(entries)
    assert [m.role for m in everything.messages] == ["user", "assistant", "assistant"] * 3
    limited = prepare_branch_entries(entries, token_budget=150)
    texts = [m.content for m in limited.messages if isinstance(m, UserMessage)]
    assert len(texts) == 1 and str(texts[0]).startswith("q2")
    assert limited.total_tokens <= 150
    # file operations of every message looked at, including the first one that did not fit
    assert limited.file_ops.file_lists() == (["f1.py", "f2.py"], [])


def test_summaries_may_exceed_the_budget_below_ninety_percent() -> None:
    session = Session.create(InMemorySessionStorage())
    first = session.append_message(UserMessage(content="start"))
    session.append_branch_summary(
        "s" * 400, details={"readFiles": ["old.py"], "modifiedFiles": ["m.py"]}
    )
    session.append_branch_summary("h" * 40, details={"readFiles": ["hook.py"]}, from_hook=True)
    session.append_message(UserMessage(content="x" * 200))  # 50 tokens
    entries = session.get_branch()
    preparation = prepare_branch_entries(entries, token_budget=100)
    roles = [m.role for m in preparation.messages]
    assert roles == ["branchSummary", "branchSummary", "user"]  # the big summary squeezed in
    assert preparation.total_tokens == 50 + 10 + 100
    # not when the budget is already 90% used
    tight = prepare_branch_entries(entries, token_budget=64)
    assert [m.role for m in tight.messages] == ["branchSummary", "user"]
    # pi-generated summaries pass their file lists on; hook-made ones do not
    assert preparation.file_ops.file_lists() == (["old.py"], ["m.py"])
    assert first.id == entries[0].id


async def test_custom_and_replaced_instructions(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    _turns(session, 1, 10)
    entries = session.get_branch()
    captured: Captured = []
    stream_fn = capturing(faux, lambda _: "summary", captured)
    await generate_branch_summary(
        entries, faux.get_model(), custom_instructions="tests", stream_fn=stream_fn
    )
    await generate_branch_summary(
        entries,
        faux.get_model(),
        custom_instructions="Only list the files.",
        replace_instructions=True,
        stream_fn=stream_fn,
    )
    assert captured[0][1].endswith(BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: tests")
    assert captured[1][1].endswith("</conversation>\n\nOnly list the files.")


async def test_empty_selection_and_failures(faux: FauxProvider) -> None:
    model = faux.get_model()
    empty = await generate_branch_summary([], model)
    assert empty.summary == "No content to summarize" and faux.call_count == 0

    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="hello"))
    entries = session.get_branch()
    faux.set_responses([faux_assistant_message("", stop_reason="error", error_message="down")])
    with pytest.raises(BranchSummaryError, match="down") as failed:
        await generate_branch_summary(entries, model, stream_fn=faux.stream)
    assert failed.value.code == "summarization_failed"

    controller = AbortController()
    controller.abort()
    faux.set_responses([faux_assistant_message("never")])
    with pytest.raises(BranchSummaryError) as aborted:
        await generate_branch_summary(
            entries, model, signal=controller.signal, stream_fn=faux.stream
        )
    assert aborted.value.code == "aborted"


async def test_summary_text_has_preamble_and_file_lists(faux: FauxProvider) -> None:
    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="edit it"))
    call = ToolCall(id="c", name="edit", arguments={"path": "b.py"})
    session.append_message(
        AssistantMessage(
            content=[call], api="faux", provider="faux", model="faux-1", stop_reason="toolUse"
        )
    )
    faux.set_responses([faux_assistant_message("## Goal\nEdit.")])
    result = await generate_branch_summary(
        session.get_branch(), faux.get_model(), stream_fn=faux.stream
    )
    assert result.summary == (
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\n## Goal\nEdit."
        "\n\n<modified-files>\nb.py\n</modified-files>"
    )
    assert (result.read_files, result.modified_files) == ([], ["b.py"])
