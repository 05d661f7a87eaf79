"""What a system under test did on one task, in one shape for all of them, and the failure
category read from it.

Categories, first match wins (a right task has none):

- ``time_limit``: the task ran out of time;
- ``context_overflow``: the model's context window was exceeded;
- ``invented_data``: code it ran draws random numbers or builds a table from literals while
  never reading the task's data file;
- ``tool_never_called``: no code was run at all;
- ``code_error``: the last code it ran failed (an error result, or output that is a traceback:
  an error not recovered from);
- ``no_answer``: the reply lacks an ``@name[...]`` the format asks for;
- ``wrong_answer``: every answer is there, and one is wrong.

``invented_data`` is also reported on its own for every task, right ones included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "CATEGORIES",
    "Step",
    "Transcript",
    "failure_category",
    "invents_data",
    "reports_exception",
]

CATEGORIES: tuple[str, ...] = (
    "time_limit",
    "context_overflow",
    "invented_data",
    "tool_never_called",
    "code_error",
    "no_answer",
    "wrong_answer",
)

_RANDOM = re.compile(
    r"\bnp\.random\b|\bnumpy\.random\b|\brandom\.(?:random|randint|uniform|gauss|choice|sample)\b"
    r"|\bdefault_rng\b|\bmake_(?:classification|regression|blobs)\b|\bfaker?\b",
    re.IGNORECASE,
)
_LITERAL_TABLE = re.compile(
    r"\b(?:pd\.)?DataFrame\s*\(\s*[\[{]|\bDataFrame\.from_(?:dict|records)\("
)
_OVERFLOW = re.compile(
    r"context (?:length|window|size)|exceeds? the (?:available )?context|too many tokens"
    r"|maximum context|prompt is too long|n_ctx",
    re.IGNORECASE,
)


def reports_exception(output: str) -> bool:
    """Whether a tool's output is a Python traceback: the notebook's ``run_python`` returns an
    exception as text (not as an error result), so the text is what tells."""
    return "Traceback (most recent call last)" in output


@dataclass
class Step:
    """One tool call and its result."""

    tool: str
    code: str
    """The code it ran (``run_python``/``python``), else its arguments as text."""
    result: str
    is_error: bool


@dataclass
class Transcript:
    """One task's run by one system."""

    reply: str = ""
    """The final assistant text (where the ``@name[value]`` answers are read)."""
    steps: list[Step] = field(default_factory=list)
    turns: int = 0
    """Model calls."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    timed_out: bool = False
    error: str = ""
    """The run's error, if it ended with one (a model error, a crash)."""

    @property
    def code_steps(self) -> list[Step]:
        return [s for s in self.steps if s.code]

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.steps if s.is_error)


def _reads(code: str, file_names: tuple[str, ...]) -> bool:
    return any(name in code or name.rsplit(".", 1)[0] in code for name in file_names)


def invents_data(transcript: Transcript, file_names: tuple[str, ...]) -> bool:
    """Whether code it ran generates random data, or builds a table from literals without any
    of its code ever reading the task's files (the files exist: every task has them)."""
    code = [s.code for s in transcript.code_steps]
    if any(_RANDOM.search(c) for c in code):
        return True
    reads = any(_reads(c, file_names) for c in code)
    return not reads and any(_LITERAL_TABLE.search(c) for c in code)


def failure_category(
    transcript: Transcript, file_names: tuple[str, ...], *, right: bool, answered: bool
) -> str | None:
    """The first category above that applies (None for a right task). ``answered``: the reply
    has every ``@name[...]`` the format asks for."""
    if right:
        return None
    if transcript.timed_out:
        return "time_limit"
    if _OVERFLOW.search(transcript.error):
        return "context_overflow"
    if invents_data(transcript, file_names):
        return "invented_data"
    if not transcript.steps:
        return "tool_never_called"
    if transcript.code_steps and transcript.code_steps[-1].is_error:
        return "code_error"
    if not answered:
        return "no_answer"
    return "wrong_answer"
