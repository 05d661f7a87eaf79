"""The summary table and the JSON written at the end of a run."""

from __future__ import annotations

import json
from pathlib import Path

from pi_notebook.eval import TaskResult, markdown_table, summarise, write_report


def result(system: str, task: str, level: str, right: bool, **fields: object) -> TaskResult:
    values: dict[str, object] = {
        "answers": {},
        "turns": 2,
        "tool_calls": 1,
        "tool_errors": 0,
        "tokens_in": 100,
        "tokens_out": 10,
        "cost": 0.0,
        "seconds": 4.0,
        "category": None if right else "wrong_answer",
        "invented_data": False,
        "answered": True,
        "code": ["print(1)"],
    }
    values.update(fields)
    return TaskResult(system=system, task_id=task, level=level, right=right, **values)  # type: ignore[arg-type]


RESULTS = [
    result("pi_notebook", "a", "easy", True, tokens_in=300),
    result("minimal", "a", "easy", True),
    result("pi_notebook", "b", "hard", True, tokens_in=300),
    result("minimal", "b", "hard", False, category="tool_never_called", code=[], answered=False),
]


def test_summary_by_system_and_level() -> None:
    summary = summarise(RESULTS)
    assert list(summary) == ["pi_notebook", "minimal"]
    assert summary["pi_notebook"]["accuracy"] == 1.0 and summary["minimal"]["accuracy"] == 0.5
    assert summary["minimal"]["by_level"]["hard"] == {"right": 0, "tasks": 1}
    assert summary["minimal"]["failures"] == {"tool_never_called": 1}
    assert summary["minimal"]["answered"] == 1 and summary["minimal"]["ran_code"] == 1


def test_the_table_has_the_ratio_to_the_minimal_baseline() -> None:
    table = markdown_table(summarise(RESULTS))
    assert table.splitlines()[0] == "|  | pi_notebook | minimal | pi_notebook ÷ minimal |"
    assert "| accuracy | 2/2 (100%) | 1/2 (50%) | 2.00 |" in table
    assert "| mean tokens in | 300.0 | 100.0 | 3.00 |" in table
    assert "| failure: tool_never_called | 0 | 1 |  |" in table
    assert "|   medium | – | – |  |" in table  # no task of that level


def test_write_report(tmp_path: Path) -> None:
    as_json, as_md = write_report(RESULTS, tmp_path, {"model": "local"})
    data = json.loads(as_json.read_text())
    assert data["meta"] == {"model": "local"} and len(data["results"]) == 4
    assert as_md.read_text().startswith("- model: local\n\n|  |")
