"""Running a task set: every (system, task) pair in its own worker process, bounded in time,
scored and categorised; results written as JSON and a Markdown table."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TextIO

from ..ai.redaction import request_redactor
from .models import ModelSpec
from .pi_system import CassetteMode, run_pi_notebook, transcript_from_session
from .scoring import score_answers
from .tasks import Task, task_prompt
from .transcript import Step, Transcript, failure_category, invents_data

__all__ = ["BASELINE_SYSTEM_PROMPT", "SYSTEMS", "TaskResult", "rescore", "run_eval", "run_task"]

SYSTEMS: tuple[str, ...] = ("pi_notebook", "minimal", "pydantic_ai")
BASELINE_SYSTEM_PROMPT = "You are a helpful assistant."
"""The baselines' system prompt, fixed here so that they do not move when pi_notebook's does."""
"""pi_notebook, the minimal ReAct baseline, the pydantic-ai baseline."""


@dataclass
class TaskResult:
    """One task run by one system."""

    system: str
    task_id: str
    level: str
    right: bool
    answers: dict[str, dict[str, Any]]
    """Per answer name: ``expected``, ``given`` (None when missing) and ``right``."""
    turns: int
    tool_calls: int
    tool_errors: int
    tokens_in: int
    tokens_out: int
    cost: float
    seconds: float
    category: str | None
    invented_data: bool
    answered: bool = False
    """The reply has every ``@name[...]`` the format asks for (right or wrong)."""
    error: str = ""
    reply: str = ""
    transcript: str = ""
    """Where the run's record is kept (a session file, or the baseline's JSON)."""
    code: list[str] = field(default_factory=list)
    """The code it ran, in order."""


def _score(system: str, task: Task, transcript: Transcript, record: Path) -> TaskResult:
    checks = score_answers(task.answers, transcript.reply)
    right = all(c.right for c in checks)
    answered = all(c.given is not None for c in checks)
    return TaskResult(
        system=system,
        task_id=task.id,
        level=task.level,
        right=right,
        answers={
            c.name: {"expected": c.expected, "given": c.given, "right": c.right} for c in checks
        },
        turns=transcript.turns,
        tool_calls=len(transcript.steps),
        tool_errors=transcript.tool_errors,
        tokens_in=transcript.tokens_in,
        tokens_out=transcript.tokens_out,
        cost=transcript.cost,
        seconds=round(transcript.seconds, 2),
        category=failure_category(transcript, task.file_names, right=right, answered=answered),
        invented_data=invents_data(transcript, task.file_names),
        answered=answered,
        error=transcript.error,
        reply=transcript.reply,
        transcript=str(record),
        code=[s.code for s in transcript.code_steps],
    )


def run_task(
    system: str,
    task: Task,
    spec: ModelSpec,
    out: Path,
    *,
    time_limit: float,
    cassettes: Path | None = None,
    mode: CassetteMode | None = None,
) -> TaskResult:
    """Run one task with one system (in this process) and score it. Its record goes to
    ``out/<system>/<task id>/``."""
    workdir = out / system / task.id
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    started = time.monotonic()
    if system == "pi_notebook":
        cassette = cassettes / f"{task.id}.jsonl" if cassettes is not None else None
        transcript = run_pi_notebook(
            task, spec, workdir, time_limit=time_limit, cassette=cassette, mode=mode
        )
        record = workdir / "run" / f"{task.id}.pi.jsonl"
    else:
        for file in task.files:
            shutil.copyfile(file, workdir / file.name)
        base_url, model_id, key = spec.chat_endpoint()
        runner = _baseline(system)
        transcript = runner(
            base_url,
            model_id,
            key,
            BASELINE_SYSTEM_PROMPT,
            task_prompt(task),
            workdir,
            max_tokens=spec.resolved().max_tokens,
            time_limit=time_limit,
        )
        # a baseline's error text (an HTTP error naming its URL) must not carry the key or a
        # URL password into the kept transcript or the report
        scrub = request_redactor(spec.resolved()).scrub
        transcript.error, transcript.reply = scrub(transcript.error), scrub(transcript.reply)
        record = workdir / "transcript.json"
        record.write_text(json.dumps(asdict(transcript), indent=1), encoding="utf-8")
    transcript.seconds = time.monotonic() - started
    return _score(system, task, transcript, record)


def _baseline(system: str) -> Callable[..., Transcript]:
    if system == "minimal":
        from .baseline_react import run_react

        return run_react
    if system == "pydantic_ai":
        from .baseline_pydantic_ai import run_pydantic_ai

        return run_pydantic_ai
    raise ValueError(f"Unknown system {system!r}; choose from {', '.join(SYSTEMS)}")


def _crashed(system: str, task: Task, exc: BaseException) -> TaskResult:
    transcript = Transcript(error=f"the harness failed: {type(exc).__name__}: {exc}")
    return _score(system, task, transcript, Path())


class _Progress:
    """tqdm when it is installed, else one line rewritten in place."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.done, self.right, self.stream = total, 0, 0, stream
        self._bar: Any = None
        if stream is None:
            return
        try:
            tqdm = importlib.import_module("tqdm").tqdm
        except ImportError:
            self._draw()
        else:
            self._bar = tqdm(total=total, file=stream, unit="task")

    def update(self, result: TaskResult) -> None:
        self.done += 1
        self.right += result.right
        if self._bar is not None:
            self._bar.set_postfix_str(f"right {self.right}")
            self._bar.update(1)
        elif self.stream is not None:
            self._draw()

    def _draw(self) -> None:
        assert self.stream is not None
        width = 30
        filled = width * self.done // max(1, self.total)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"right {self.right}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.stream is not None:
            self.stream.write("\n")


def run_eval(
    tasks: Sequence[Task],
    spec: ModelSpec,
    out: Path,
    *,
    systems: Sequence[str] = SYSTEMS,
    workers: int = 1,
    time_limit: float = 300.0,
    cassettes: Path | None = None,
    mode: CassetteMode | None = None,
    progress: TextIO | None = sys.stderr,
    stop_after: float | None = None,
) -> list[TaskResult]:
    """Run every task with every system in ``workers`` processes; results in task order, then
    system order. A task whose run crashes the harness is scored wrong, with the error. Each
    result is also appended to ``out/results.jsonl`` as it comes. ``stop_after`` (seconds):
    start nothing new after that long; tasks that not every system finished are left out, so
    the systems are compared on the same tasks."""
    for system in systems:  # an unknown name fails before anything starts
        if system != "pi_notebook":
            _baseline(system)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(system, task) for task in tasks for system in systems]
    bar = _Progress(len(jobs), progress)
    results: dict[tuple[str, str], TaskResult] = {}
    deadline = None if stop_after is None else time.monotonic() + stop_after
    log = (out / "results.jsonl").open("a", encoding="utf-8")
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = {
            pool.submit(
                run_task,
                system,
                task,
                spec,
                out,
                time_limit=time_limit,
                cassettes=cassettes,
                mode=mode,
            ): (system, task)
            for system, task in jobs
        }
        for future in as_completed(futures):
            system, task = futures[future]
            if future.cancelled():
                continue
            try:
                result = future.result()
            except Exception as exc:
                result = _crashed(system, task, exc)
            results[(system, task.id)] = result
            log.write(json.dumps(asdict(result), default=str) + "\n")
            log.flush()
            bar.update(result)
            if deadline is not None and time.monotonic() > deadline:
                for pending in futures:
                    pending.cancel()
    bar.close()
    log.close()
    return _complete(tasks, systems, results)


def _complete(
    tasks: Sequence[Task], systems: Sequence[str], results: dict[tuple[str, str], TaskResult]
) -> list[TaskResult]:
    done = [t for t in tasks if all((s, t.id) in results for s in systems)]
    return [results[(system, task.id)] for task in done for system in systems]


def rescore(tasks: Sequence[Task], out: Path) -> list[TaskResult]:
    """Score a finished run in ``out`` again, from the records it kept (session files, the
    baselines' transcripts), with the current scorer and categories; seconds and time limits
    as they were recorded. Only tasks every system finished are returned."""
    by_id = {t.id: t for t in tasks}
    results: dict[tuple[str, str], TaskResult] = {}
    systems: list[str] = []
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    for row in (json.loads(line) for line in lines if line.strip()):
        task = by_id.get(row["task_id"])
        if task is None:
            continue
        record = Path(row["transcript"])
        if not record.is_file():
            transcript = Transcript(error=row["error"])
        elif row["system"] == "pi_notebook":
            transcript = transcript_from_session(record)
        else:
            data = json.loads(record.read_text(encoding="utf-8"))
            steps = [Step(**s) for s in data.pop("steps")]
            transcript = Transcript(**data, steps=steps)
        transcript.seconds = row["seconds"]
        transcript.timed_out = transcript.timed_out or row["category"] == "time_limit"
        transcript.error = transcript.error or row["error"]
        results[(row["system"], task.id)] = _score(row["system"], task, transcript, record)
        if row["system"] not in systems:
            systems.append(row["system"])
    return _complete(tasks, systems, results)
