"""``RoomGuard`` alone: after a compaction that leaves the context over the line the live run is
stopped with words saying what to do, the next run is refused while its request would still be
over, and a change of model or tools lifts the hold. The harness here is a stand-in holding a
real session, a real model and real compaction settings (what the guard reads of a harness)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pi_notebook.ai.models import get_model
from pi_notebook.ai.types import Model
from pi_notebook.harness import Session
from pi_notebook.harness.compaction import CompactionSettings
from pi_notebook.notebook.room import RoomGuard, compaction_for

WINDOW = 4000


@dataclass
class Harness:
    session: Session
    model: Model
    compaction_settings: CompactionSettings


def harness(tmp_path: Path, window: int = WINDOW) -> Any:
    model = get_model("openai", "gpt-5.1").model_copy(update={"context_window": window})
    return Harness(Session.create(tmp_path / "s.pi.jsonl"), model, compaction_for(model))


def compacted(tokens_after: int, reason: str = "threshold") -> object:
    return SimpleNamespace(
        type="compaction_end", result=object(), tokens_after=tokens_after, reason=reason
    )


def test_a_compaction_over_the_line_stops_the_run_and_holds_the_next(tmp_path: Path) -> None:
    overhead = {"tokens": 500}
    guard = RoomGuard(lambda _h: overhead["tokens"])
    h = harness(tmp_path)
    guard.fit(h)
    line = WINDOW - h.compaction_settings.reserve_tokens
    assert guard.after_compaction(h, compacted(line - 600)) is None  # under the line
    assert guard.refusal(h, "next") is None

    words = guard.after_compaction(h, compacted(line))
    assert words is not None and "%compact --keep 0" in words and "%session new" in words
    refused = guard.refusal(h, "x" * 4 * line)  # the session is empty: the prompt alone is over
    assert refused is not None and refused.startswith("The context is still about")
    assert guard.refusal(h, "a short prompt") is None  # fits: the hold is lifted
    assert guard.refusal(h, "x" * 4 * line) is None


def test_another_model_or_other_tools_lift_the_hold(tmp_path: Path) -> None:
    overhead = {"tokens": 500}
    guard = RoomGuard(lambda _h: overhead["tokens"])
    h = harness(tmp_path)
    line = WINDOW - h.compaction_settings.reserve_tokens
    too_long = "x" * 4 * line
    assert guard.after_compaction(h, compacted(line)) is not None
    overhead["tokens"] = 400  # a tool removed: the line moved
    assert guard.refusal(h, too_long) is None

    overhead["tokens"] = 500
    assert guard.after_compaction(h, compacted(line)) is not None
    h.model = get_model("openai", "gpt-5.1")  # a large window
    assert guard.refusal(h, too_long) is None


def test_compact_by_hand_is_not_stopped_but_holds_the_next_run(tmp_path: Path) -> None:
    guard = RoomGuard(lambda _h: 500)
    h = harness(tmp_path)
    line = WINDOW - h.compaction_settings.reserve_tokens
    assert guard.after_compaction(h, compacted(line, reason="manual")) is None
    assert guard.refusal(h, "x" * 4 * line) is not None
    assert guard.after_compaction(h, SimpleNamespace(type="agent_end")) is None


def test_fit_sizes_the_compaction_for_the_overhead(tmp_path: Path) -> None:
    h = harness(tmp_path)
    RoomGuard(lambda _h: 1000).fit(h)
    assert h.compaction_settings == compaction_for(h.model, 1000)
