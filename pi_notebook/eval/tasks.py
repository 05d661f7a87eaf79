"""The task format: one JSON object a line (JSONL), in the shape of InfiAgent-DABench.

Each task has an ``id``, a ``question`` (written as an analyst would ask it), ``constraints``
(how to compute it: which test, which rounding), ``format`` (the answer lines it must end with,
``@name[description]``), ``files`` (data files, relative to the JSONL file, copied into the
working directory of the run), a ``level`` (``easy``, ``medium`` or ``hard``) and ``answers``,
the expected answers in the same closed form: ``@mean_age[38.25] @n_rows[150]``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .scoring import parse_answers

__all__ = ["LEVELS", "Task", "TaskFormatError", "load_tasks", "task_prompt"]

LEVELS: tuple[str, ...] = ("easy", "medium", "hard")
_FIELDS = ("id", "question", "constraints", "format", "files", "level", "answers")


class TaskFormatError(ValueError):
    """A task file that cannot be read: names the file, the line and what is wrong."""


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    question: str
    constraints: str
    format: str
    files: tuple[Path, ...]
    """Absolute paths of the data files."""
    level: str
    answers: dict[str, str]
    """Expected value per answer name, as written in the task file."""

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.files)


def _task(raw: object, base: Path, where: str) -> Task:
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: a task is a JSON object, got {type(raw).__name__}")
    missing = [f for f in _FIELDS if f not in raw]
    if missing:
        raise TaskFormatError(f"{where}: missing field(s) {', '.join(missing)}")
    for name in ("id", "question", "constraints", "format", "level", "answers"):
        if not isinstance(raw[name], str):
            raise TaskFormatError(f"{where}: {name!r} must be a string")
    if raw["level"] not in LEVELS:
        raise TaskFormatError(f"{where}: level must be one of {', '.join(LEVELS)}")
    files = raw["files"]
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise TaskFormatError(f"{where}: 'files' must be a list of paths")
    paths = tuple((base / f).resolve() for f in files)
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        raise TaskFormatError(f"{where}: data file not found: {', '.join(absent)}")
    answers = parse_answers(raw["answers"])
    if not answers:
        raise TaskFormatError(f"{where}: 'answers' holds no @name[value]")
    formatted = parse_answers(raw["format"])
    if set(formatted) != set(answers):
        raise TaskFormatError(
            f"{where}: 'format' names {sorted(formatted)} but 'answers' names {sorted(answers)}"
        )
    return Task(
        id=raw["id"],
        question=raw["question"],
        constraints=raw["constraints"],
        format=raw["format"],
        files=paths,
        level=raw["level"],
        answers=answers,
    )


def load_tasks(path: str | os.PathLike[str], *, ids: list[str] | None = None) -> list[Task]:
    """Read a JSONL task file (blank lines skipped); ``ids`` keeps those tasks, in that order.
    Raises ``TaskFormatError`` naming the line of the first bad task or a repeated id."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TaskFormatError(f"{source}: {exc.strerror or exc}") from None
    tasks: list[Task] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFormatError(f"{where}: not JSON ({exc.msg})") from None
        task = _task(raw, source.parent, where)
        if task.id in seen:
            raise TaskFormatError(f"{where}: the id {task.id!r} is used twice")
        seen.add(task.id)
        tasks.append(task)
    if ids is not None:
        unknown = sorted(set(ids) - seen)
        if unknown:
            raise TaskFormatError(f"{source}: no task with id {', '.join(unknown)}")
        by_id = {t.id: t for t in tasks}
        tasks = [by_id[i] for i in dict.fromkeys(ids)]
    return tasks


def task_prompt(task: Task) -> str:
    """What every system under test is asked (the same words for each)."""
    files = ", ".join(task.file_names)
    return (
        f"{task.question}\n\n"
        f"The data is in {files} in the current working directory.\n"
        f"Constraints: {task.constraints}\n"
        "End your reply with the answer in exactly this format, one per line, "
        f"with your values in the brackets:\n{task.format}"
    )
