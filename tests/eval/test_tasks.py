"""The task loader and the project's task set."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pi_notebook.eval import TASK_SET, TaskFormatError, load_tasks, task_prompt


def _write(tmp_path: Path, *rows: object) -> Path:
    (tmp_path / "t.csv").write_text("a\n1\n")
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


GOOD = {
    "id": "t1",
    "question": "How many rows?",
    "constraints": "Count rows.",
    "format": "@rows[number]",
    "files": ["t.csv"],
    "level": "easy",
    "answers": "@rows[1]",
}


def test_a_good_task_loads_with_its_files_resolved(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD, "", {**GOOD, "id": "t2", "level": "hard"})
    tasks = load_tasks(path)
    assert [t.id for t in tasks] == ["t1", "t2"]
    assert tasks[0].files == ((tmp_path / "t.csv").resolve(),)
    assert tasks[0].answers == {"rows": "1"}
    assert [t.id for t in load_tasks(path, ids=["t2", "t1"])] == ["t2", "t1"]
    prompt = task_prompt(tasks[0])
    assert "How many rows?" in prompt and "t.csv" in prompt and "@rows[number]" in prompt


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "tasks.jsonl:1: not JSON"),
        ("[1, 2]", "a task is a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "format"}, "missing field(s) format"),
        ({**GOOD, "level": "trivial"}, "level must be one of easy, medium, hard"),
        ({**GOOD, "files": "t.csv"}, "'files' must be a list"),
        ({**GOOD, "files": ["nope.csv"]}, "data file not found"),
        ({**GOOD, "answers": "42"}, "'answers' holds no @name[value]"),
        ({**GOOD, "format": "@count[n]"}, "'format' names ['count'] but 'answers' names ['rows']"),
        ({**GOOD, "id": 7}, "'id' must be a string"),
    ],
)
def test_bad_tasks_name_the_line_and_the_problem(tmp_path: Path, row: object, message: str) -> None:
    path = _write(tmp_path, row)
    with pytest.raises(TaskFormatError) as caught:
        load_tasks(path)
    assert message in str(caught.value)
    assert ":1:" in str(caught.value)


def test_repeated_ids_unknown_ids_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match=r"tasks\.jsonl:2: the id 't1' is used twice"):
        load_tasks(_write(tmp_path, GOOD, GOOD))
    with pytest.raises(TaskFormatError, match="no task with id zz"):
        load_tasks(_write(tmp_path, GOOD), ids=["zz"])
    with pytest.raises(TaskFormatError, match="No such file"):
        load_tasks(tmp_path / "absent.jsonl")


def test_the_project_task_set_loads_balanced() -> None:
    tasks = load_tasks(TASK_SET)
    assert len(tasks) >= 60
    levels = Counter(t.level for t in tasks)
    assert min(levels.values()) >= 20, levels
    for task in tasks:  # questions are an analyst's words, never the tools' names
        assert "run_python" not in task.question and "tool" not in task.question.lower()


def test_the_answers_are_what_the_reference_code_computes() -> None:
    # the reference script, run as anyone would run it
    script = TASK_SET.parent / "reference.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "answers as computed" in done.stdout
