"""Failure categories read from transcripts, one test per category, and their order."""

from __future__ import annotations

from pi_notebook.eval import Step, Transcript, failure_category, invents_data, reports_exception

FILES = ("cars.csv",)
READ = "import pandas as pd\ncars = pd.read_csv('cars.csv')\nprint(cars.shape)"


def category(transcript: Transcript, *, right: bool = False, answered: bool = True) -> str | None:
    return failure_category(transcript, FILES, right=right, answered=answered)


def ok(code: str = READ) -> Step:
    return Step("run_python", code, "(406, 9)", False)


def test_a_right_task_has_no_category() -> None:
    assert category(Transcript(steps=[ok()]), right=True) is None


def test_time_limit_comes_first() -> None:
    assert category(Transcript(timed_out=True, error="context length exceeded")) == "time_limit"


def test_context_overflow() -> None:
    error = "400: the request exceeds the available context size (4096 tokens)"
    assert category(Transcript(error=error, steps=[ok()])) == "context_overflow"


def test_invented_data_random_numbers() -> None:
    code = "import numpy as np\nrevenue = np.random.rand(10)"
    assert category(Transcript(steps=[ok(), ok(code)])) == "invented_data"


def test_invented_data_a_literal_table_when_the_file_was_never_read() -> None:
    code = "import pandas as pd\ndf = pd.DataFrame({'mpg': [18, 15, 18]})\ndf.mpg.mean()"
    transcript = Transcript(steps=[ok(code)])
    assert invents_data(transcript, FILES)
    assert category(transcript) == "invented_data"
    # the same table built after reading the file is a lookup, not invention
    assert not invents_data(Transcript(steps=[ok(), ok(code)]), FILES)


def test_invented_data_is_reported_for_a_right_task_too() -> None:
    transcript = Transcript(steps=[ok("import random\nx = random.random()")])
    assert invents_data(transcript, FILES)
    assert category(transcript, right=True) is None


def test_tool_never_called() -> None:
    assert category(Transcript(reply="There are 324 cars.")) == "tool_never_called"


def test_code_error_not_recovered() -> None:
    failed = Step("run_python", "cars['mpg'].mean()", "KeyError: 'mpg'", True)
    assert category(Transcript(steps=[ok(), failed])) == "code_error"
    # an error followed by code that worked was recovered from
    assert category(Transcript(steps=[failed, ok()])) == "wrong_answer"


def test_no_answer_in_the_format() -> None:
    assert category(Transcript(steps=[ok()]), answered=False) == "no_answer"


def test_wrong_answer() -> None:
    assert category(Transcript(steps=[ok()]), answered=True) == "wrong_answer"


def test_a_traceback_in_the_output_is_an_error() -> None:
    output = "Traceback (most recent call last):\n  File \"<agent>\", line 5\nKeyError: 'mpg'\n"
    assert reports_exception(output)
    assert not reports_exception("(406, 9)")
