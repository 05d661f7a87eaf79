"""Compaction sized for small windows: the part kept, the system prompt and tools, and the
summary fit under the threshold after one compaction, at 4k, 8k and 32k windows. (pi's
settings scaled by the window alone kept ~4,096 tokens plus ~2,000 of system prompt and tools
at 8k, over the 6,144-token line: a compaction on almost every turn.)"""

from __future__ import annotations

import pytest

from pi_notebook.ai import AssistantMessage, Model, TextContent, Tool, Usage, UserMessage
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.harness.compaction import CompactionSettings, prepare_compaction
from pi_notebook.harness.tokens import estimate_tokens
from pi_notebook.notebook.room import compaction_for, request_overhead

OVERHEAD = 2000  # the system prompt and tools of a notebook agent, roughly
TURN_TOKENS = 300
"""The size of each message of the conversation (five characters a word, four a token)."""


def _model(window: int) -> Model:
    return Model(
        id="m", api="faux", provider="p", context_window=window, max_tokens=min(2048, window // 4)
    )


def _long_session(turns: int) -> Session:
    session = Session.create(InMemorySessionStorage())
    for i in range(turns):
        session.append_message(
            UserMessage(content=f"question {i} " + "word " * (TURN_TOKENS * 4 // 5))
        )
        session.append_message(
            AssistantMessage(
                content=[TextContent(text=f"answer {i} " + "word " * (TURN_TOKENS * 4 // 5))],
                api="faux",
                provider="p",
                model="m",
                usage=Usage(input=10, output=10),
                stop_reason="stop",
            )
        )
    return session


def _after_compaction(
    settings: CompactionSettings, session: Session, summary: int, overhead: int = OVERHEAD
) -> int:
    """The context size once compacted: the kept messages, the summary and the overhead."""
    branch = session.get_branch()
    preparation = prepare_compaction(branch, settings, session.build_context().messages)
    assert preparation is not None
    ids = [entry.id for entry in branch]
    kept = branch[ids.index(preparation.first_kept_entry_id) :]
    kept_tokens = sum(estimate_tokens(entry.message) for entry in kept)  # type: ignore[attr-defined]
    return kept_tokens + summary + overhead


@pytest.mark.parametrize(
    ("window", "overhead"),
    # At 4k a model with the notebook's tools (~2,000 tokens) leaves ~250 tokens for the kept
    # part and no compaction can help; the answers-only embedded model carries ~600.
    [(4096, 600), (8192, OVERHEAD), (32768, OVERHEAD)],
)
def test_one_compaction_gets_under_the_threshold(window: int, overhead: int) -> None:
    model = _model(window)
    settings = compaction_for(model, overhead)
    threshold = window - settings.reserve_tokens
    summary = min(int(0.8 * settings.reserve_tokens), model.max_tokens)
    session = _long_session(turns=max(8, window // TURN_TOKENS))
    assert _after_compaction(settings, session, summary, overhead) < threshold


def test_the_window_alone_left_an_8k_context_over_the_line() -> None:
    model = _model(8192)
    # the settings before: scaled by the window alone (a quarter reserved, half kept)
    unaware = CompactionSettings(reserve_tokens=8192 // 4, keep_recent_tokens=8192 // 2)
    threshold = 8192 - unaware.reserve_tokens
    summary = min(int(0.8 * unaware.reserve_tokens), model.max_tokens)
    assert _after_compaction(unaware, _long_session(turns=30), summary) > threshold


def test_the_overhead_counts_the_prompt_and_the_tool_declarations() -> None:
    tool = Tool(
        name="run_python",
        description="Run Python code in the kernel. " * 10,
        parameters={"type": "object", "properties": {"code": {"type": "string"}}},
    )
    alone = request_overhead("x" * 400, [])
    assert alone == 100
    assert request_overhead("x" * 400, [tool]) > alone + len(tool.description) // 4
