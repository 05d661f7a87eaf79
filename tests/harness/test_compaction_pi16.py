"""Compaction's context estimate against pi 1.6: for every committed pi 1.6 session file (pi's
and ours) with the leaf at every entry in turn, ``estimate_projected_context_tokens`` gives
pi-coding-agent 1.6.0's ``estimateProjectedContextTokens`` (recorded by
``tests/golden/pi-1.6/sessions/compaction.mjs``), and ``should_compact`` flips where pi's does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import FauxProvider, faux_assistant_message
from pi_notebook.harness import (
    AgentHarness,
    CompactionEntry,
    CompactionSettings,
    InMemorySessionStorage,
    LeafEntry,
    Session,
)
from pi_notebook.harness.compaction import should_compact
from pi_notebook.harness.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
)
from tests.paths import GOLDEN

PI16 = GOLDEN / "pi-1.6" / "sessions"
ESTIMATES: dict[str, Any] = json.loads(
    (PI16 / "compaction-estimates.json").read_text(encoding="utf-8")
)


def _as_pi(estimate: Any) -> dict[str, Any]:
    return {
        "tokens": estimate.tokens,
        "usageTokens": estimate.usage_tokens,
        "trailingTokens": estimate.trailing_tokens,
        "lastUsageIndex": estimate.last_usage_index,
    }


def test_the_recording_covers_stale_usage_and_trailing_estimates() -> None:
    readings = [r for f in ESTIMATES.values() for r in f["readings"].values()]
    stale = [
        r
        for r in readings
        if r["projected"]["lastUsageIndex"] is None and r["plain"]["lastUsageIndex"] is not None
    ]
    trailing = [
        r for r in readings if r["projected"]["usageTokens"] and r["projected"]["trailingTokens"]
    ]
    assert len(readings) > 100 and len(stale) >= 10 and len(trailing) >= 10


@pytest.mark.parametrize("name", sorted(ESTIMATES), ids=lambda n: n.replace("/", "-"))
def test_projected_estimate_is_pis_at_every_leaf(name: str, tmp_path: Path) -> None:
    recorded = ESTIMATES[name]
    copy = tmp_path / Path(name).name
    shutil.copy(PI16 / name, copy)
    session = Session.open(copy)
    pi_settings = recorded["settings"]
    settings = CompactionSettings(
        enabled=pi_settings["enabled"],
        reserve_tokens=pi_settings["reserveTokens"],
        keep_recent_tokens=pi_settings["keepRecentTokens"],
    )
    for leaf_id, pi in recorded["readings"].items():
        entry = session.get_entry(leaf_id)
        session.set_leaf(entry.target_id if isinstance(entry, LeafEntry) else leaf_id)
        messages = session.build_context().messages
        projected = estimate_projected_context_tokens(messages, session.get_branch())
        assert _as_pi(projected) == pi["projected"], leaf_id
        assert _as_pi(estimate_context_tokens(messages)) == pi["plain"], leaf_id
        window = projected.tokens + settings.reserve_tokens
        assert should_compact(projected.tokens, window, settings) is pi["compactAtWindow"]
        assert (
            should_compact(projected.tokens, window - 1, settings) is pi["compactAtWindowMinusOne"]
        )


async def _run_with_window(faux: FauxProvider, window: int | None) -> tuple[int, bool]:
    """One prompt through a real harness (faux model, in-memory session); the reply's context
    tokens and whether the harness compacted after it."""
    model = faux.get_model()
    if window is not None:
        model = model.model_copy(update={"context_window": window})
    settings = CompactionSettings(reserve_tokens=100, keep_recent_tokens=10)
    harness = AgentHarness(Session.create(InMemorySessionStorage()), model, compaction=settings)
    faux.set_responses(
        [faux_assistant_message("an answer " * 30), faux_assistant_message("## Goal\nsummary")]
    )
    reply = await harness.prompt("a question " * 30)
    compacted = any(isinstance(e, CompactionEntry) for e in harness.session.get_entries())
    return calculate_context_tokens(reply.usage), compacted


async def test_the_harness_compacts_above_the_threshold_as_pi_does(faux: FauxProvider) -> None:
    """After a run, pi 1.6 compares the reply's own usage with ``context_window -
    reserve_tokens`` (no context edit, a reply with usage): equal does not compact, one more
    token does."""
    tokens, compacted = await _run_with_window(faux, None)
    assert tokens > 0 and not compacted
    assert await _run_with_window(faux, tokens + 100) == (tokens, False)
    assert await _run_with_window(faux, tokens + 99) == (tokens, True)


async def test_a_cached_prompt_is_counted_once_against_the_threshold(faux: FauxProvider) -> None:
    """The harness sends its session id, so the faux model simulates a prompt cache: its prompt
    tokens are cache reads and writes, not input as well (as pi 1.6's faux reports them), and
    the threshold sees the context's real size."""
    settings = CompactionSettings(reserve_tokens=100, keep_recent_tokens=10)

    async def run(model: Any) -> tuple[Any, bool]:
        harness = AgentHarness(Session.create(InMemorySessionStorage()), model, compaction=settings)
        faux.set_responses(
            [faux_assistant_message("an answer " * 30), faux_assistant_message("## Goal\nsummary")]
        )
        reply = await harness.prompt("a question " * 30)
        compacted = any(isinstance(e, CompactionEntry) for e in harness.session.get_entries())
        return reply.usage, compacted

    usage, _ = await run(faux.get_model())
    prompt = usage.cache_read + usage.cache_write
    assert usage.input == 0 and prompt > 0
    assert calculate_context_tokens(usage) == prompt + usage.output
    # a window whose threshold lies above the real size, below the prompt counted twice
    window = settings.reserve_tokens + prompt + usage.output + prompt // 2
    _, compacted = await run(faux.get_model().model_copy(update={"context_window": window}))
    assert not compacted
