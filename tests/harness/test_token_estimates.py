"""The harness sizes its context before every request from remembered per-message estimates
(``TokenEstimates``): the figures must be the ones a full recomputation gives, whatever happened
to the session in between (appends, compactions, context edits, branch switches), since they
decide when compaction runs."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pi_notebook.ai import ImageContent, TextContent, Tool, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.types import SystemMessage
from pi_notebook.harness import InMemorySessionStorage, Session, auto_compaction
from pi_notebook.harness.auto_compaction import check_compaction, exceeds_threshold
from pi_notebook.harness.entries import CompactionEntry
from pi_notebook.harness.token_estimates import TokenEstimates
from pi_notebook.harness.tokens import (
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
)
from tests.harness.test_auto_compaction import MODEL, SETTINGS, Step, echo_harness, reply


def assert_same_figures(session: Session, cache: TokenEstimates) -> None:
    """Every figure the compaction decisions read, cached and recomputed, at the leaf."""
    messages = session.build_context().messages
    branch = session.get_branch()
    assert [cache(m) for m in messages] == [estimate_tokens(m) for m in messages]
    assert cache.context(messages) == estimate_context_tokens(messages)
    assert cache.projected(messages, branch) == estimate_projected_context_tokens(messages, branch)
    assert exceeds_threshold(session, MODEL, SETTINGS, None, cache) == exceeds_threshold(
        session, MODEL, SETTINGS
    )
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is not None:
        cached = check_compaction(
            last, session, MODEL, SETTINGS, recovery_attempted=False, estimates=cache
        )
        assert cached == check_compaction(last, session, MODEL, SETTINGS, recovery_attempted=False)


def test_cached_figures_equal_the_recomputation_across_a_sessions_life() -> None:
    session = Session.create(InMemorySessionStorage())
    cache = TokenEstimates()
    tool = Tool(name="look", description="Looks — at things 🔍", parameters={"type": "object"})
    steps: list[Any] = [
        SystemMessage(content="You help.", tools_added=[tool], timestamp=1),
        UserMessage(content="a question with ünïcode and 🐍 " * 5),
        reply("toolUse").model_copy(
            update={
                "content": [
                    TextContent(text="let me look"),
                    ToolCall(id="c1", name="look", arguments={"x": 1.0, "y": [0.5, 1e-7]}),
                ]
            }
        ),
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="look",
            content=[TextContent(text="found it " * 20), ImageContent(data="AA", mime_type="x")],
            is_error=False,
            timestamp=2,
        ),
        reply(total_tokens=300),
        UserMessage(content="and then? " * 30),
        reply(),  # no usage: everything after the last usable usage is estimated
    ]
    ids: list[str] = []
    for message in steps:
        ids.append(session.append_message(message).id)
        assert_same_figures(session, cache)

    session.append_context_edit(ids[3], [TextContent(text="shorter")])  # a replacement
    assert_same_figures(session, cache)
    session.append_context_edit(ids[5], None)  # hidden
    assert_same_figures(session, cache)

    session.append_compaction("## Goal\nsummary", ids[4], tokens_before=900)
    assert isinstance(session.leaf_entry, CompactionEntry)
    assert_same_figures(session, cache)
    session.append_message(UserMessage(content="after the compaction " * 10))
    session.append_message(reply(total_tokens=120))
    assert_same_figures(session, cache)
    session.append_system_message(sections={"style": "brief"})  # the replayed state changes
    session.append_message(reply())
    assert_same_figures(session, cache)

    session.set_leaf(ids[2])  # back before the compaction: another branch
    assert_same_figures(session, cache)
    session.append_message(ToolResultMessage(tool_call_id="c1", tool_name="look", timestamp=3))
    session.append_message(reply())
    assert_same_figures(session, cache)
    session.set_leaf(None)
    assert_same_figures(session, cache)


def test_a_figure_is_forgotten_with_its_message() -> None:
    cache = TokenEstimates()
    message = UserMessage(content="x" * 40)
    assert cache(message) == 10 and len(cache) == 1
    del message
    gc.collect()
    assert len(cache) == 0
    # an object that cannot be weakly referenced is recomputed every time, never remembered
    odd: list[Any] = [UserMessage(content="y" * 8), {"role": "user"}]
    assert cache.context(odd) == estimate_context_tokens(odd)
    assert cache.projected(odd, []) == estimate_projected_context_tokens(odd, [])
    assert cache({"role": "user"}) == 0 and len(cache) <= 1


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, bool]]:
    """Each projected estimate the harness makes: (its figure, the recomputed one, whether it
    came through a ``TokenEstimates``)."""
    calls: list[tuple[int, int, bool]] = []
    real = auto_compaction._projected

    def spy(messages: Any, branch: Any, estimates: Any = None) -> Any:
        result = real(messages, branch, estimates)
        full = real(messages, branch, None)
        calls.append((result.tokens, full.tokens, isinstance(estimates, TokenEstimates)))
        return result

    monkeypatch.setattr(auto_compaction, "_projected", spy)
    return calls


async def test_the_harness_figures_equal_the_recomputation(
    spied: list[tuple[int, int, bool]],
) -> None:
    call = ToolCall(id="c1", name="echo", arguments={"text": "x" * 800})
    tool_turn = reply("toolUse").model_copy(update={"content": [call]})  # no usage
    steps: list[Step] = [tool_turn, tool_turn, tool_turn, tool_turn, reply(total_tokens=100)]
    harness = echo_harness(steps)
    compactions: list[Any] = []
    harness.subscribe(lambda e: compactions.append(e) if e.type == "compaction_end" else None)
    await harness.prompt("first question " * 60)
    assert not steps
    assert any(e.result is not None for e in compactions)  # the figures made it compact

    first_user = next(
        e for e in harness.session.get_entries() if getattr(e, "message", None) is not None
    )
    await harness.navigate_tree(first_user.id)  # another branch
    steps += [tool_turn, reply(total_tokens=50)]
    await harness.prompt("again " * 100)
    assert not steps
    assert len(spied) >= 5
    assert all(cached for _, _, cached in spied)
    assert [figure for figure, _, _ in spied] == [full for _, full, _ in spied]
