"""Evaluating an agent on data-analysis tasks, through the real notebook path.

    python -m pi_notebook.eval TASKS.jsonl --model PROVIDER/ID [--workers N] [--out DIR]

Each task runs as an executed notebook in a fresh kernel (``%load_ext pi_notebook``, the task's
files in the working directory, the question in a ``%%agent --wait`` cell), next to two
baselines on the same model and prompt: a minimal ReAct loop and pydantic-ai, each with one
``python`` tool in a Jupyter kernel. Answers are scored in the closed form ``@name[value]``; the
project's own task set is ``pi_notebook/eval/dabench/dabench.jsonl``.

Python API: ``load_tasks``, ``run_eval``, ``summarise`` / ``markdown_table`` /
``write_report``, ``score_answers``.
"""

from pathlib import Path as _Path

from .models import ModelSpec, serve_model
from .report import markdown_table, summarise, write_report
from .run import BASELINE_SYSTEM_PROMPT, SYSTEMS, TaskResult, rescore, run_eval, run_task
from .scoring import AnswerCheck, normalise, parse_answers, score_answers, values_match
from .tasks import LEVELS, Task, TaskFormatError, load_tasks, task_prompt
from .transcript import (
    CATEGORIES,
    Step,
    Transcript,
    failure_category,
    invents_data,
    reports_exception,
)

__all__ = [
    "BASELINE_SYSTEM_PROMPT",
    "CATEGORIES",
    "LEVELS",
    "SYSTEMS",
    "TASK_SET",
    "AnswerCheck",
    "ModelSpec",
    "Step",
    "Task",
    "TaskFormatError",
    "TaskResult",
    "Transcript",
    "failure_category",
    "invents_data",
    "load_tasks",
    "markdown_table",
    "normalise",
    "parse_answers",
    "reports_exception",
    "rescore",
    "run_eval",
    "run_task",
    "score_answers",
    "serve_model",
    "summarise",
    "task_prompt",
    "values_match",
    "write_report",
]

TASK_SET = _Path(__file__).parent / "dabench" / "dabench.jsonl"
"""The project's task set."""
