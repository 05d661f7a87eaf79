"""``ChangeFeed`` on an in-process shell: each run's summary covers the cells run since the
previous one, the kernel's counts are found for a cell, and the summary can be switched off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_notebook.harness import Session
from pi_notebook.notebook.change_feed import ChangeFeed, kernel_count
from pi_notebook.notebook.workspace.document import NotebookDocument
from pi_notebook.notebook.workspace.history import ExecutionHistory
from pi_notebook.notebook.workspace.summary import CUSTOM_TYPE

from . import test_workspace_history

shell = test_workspace_history.shell  # the fixture: an in-process shell with a history installed


def feed_of(history: ExecutionHistory) -> ChangeFeed:
    return ChangeFeed(history, NotebookDocument(history), lambda: False)


def summaries(session: Session) -> list[str]:
    texts = []
    for entry in session.entries_of("custom_message"):
        assert getattr(entry, "custom_type", None) == CUSTOM_TYPE
        content = entry.content  # type: ignore[attr-defined]
        texts.append(content if isinstance(content, str) else content[0].text)
    return texts


async def test_each_summary_covers_what_ran_since_the_previous_turn(
    shell: tuple[Any, ExecutionHistory], tmp_path: Path
) -> None:
    ip, history = shell
    session, feed = Session.create(tmp_path / "s.pi.jsonl"), feed_of(history)
    ip.run_cell("first_value = 41", store_history=True, cell_id="c1")
    await feed.append(session, feed.take(), None)
    ip.run_cell("second_value = first_value + 1", store_history=True, cell_id="c2")
    await feed.append(session, feed.take(), None)
    await feed.append(session, feed.take(), None)  # nothing ran since: nothing written
    first, second = summaries(session)
    assert "first_value = 41" in first and "second_value" not in first
    assert "second_value = first_value + 1" in second and "first_value = 41" not in second


async def test_switched_off_it_writes_nothing_and_moves_its_mark_on(
    shell: tuple[Any, ExecutionHistory], tmp_path: Path
) -> None:
    ip, history = shell
    session, feed = Session.create(tmp_path / "s.pi.jsonl"), feed_of(history)
    feed.enabled = False
    ip.run_cell("hidden = 1", store_history=True, cell_id="c1")
    assert feed.take() is None
    feed.enabled = True
    ip.run_cell("shown = 2", store_history=True, cell_id="c2")
    await feed.append(session, feed.take(), None)
    (text,) = summaries(session)
    assert "shown = 2" in text and "hidden" not in text


def test_the_environment_can_start_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    history = ExecutionHistory()
    monkeypatch.setenv("PI_NOTEBOOK_CONTEXT", " OFF ")
    assert not feed_of(history).enabled
    monkeypatch.setenv("PI_NOTEBOOK_CONTEXT", "on")
    assert feed_of(history).enabled


def test_kernel_count_is_the_cells_latest(shell: tuple[Any, ExecutionHistory]) -> None:
    ip, history = shell
    ip.run_cell("1", store_history=True, cell_id="c1")
    ip.run_cell("2", store_history=True, cell_id="c2")
    ip.run_cell("3", store_history=True, cell_id="c1")
    counts = [r.execution_count for r in history.records()]
    assert kernel_count(history, "c1") == counts[-1]
    assert kernel_count(history, "c2") == counts[-2]
    assert kernel_count(history, "c9") is None and kernel_count(history, None) is None
