"""The repeat guard: a model calling one tool with the same arguments again and again, or two
calls in turn whose results repeat, is refused with a nudge, then stopped — in unit tests, and in
a real kernel (nbclient) with scripted models that loop the way Qwen2.5-Coder-1.5B did at
temperature 0 (notebooks/workspace.ipynb's recording, the evaluation's transcripts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.notebook.repeat_guard import RepeatGuard, RepeatVerdict

from .kernel_notebook import execute, outputs_text


def test_identical_calls_are_refused_then_stopped() -> None:
    guard = RepeatGuard(allowed=2, stop_after=4)
    args = {"name": "orders"}
    verdicts = [guard.check("describe_variable", args) for _ in range(4)]
    assert verdicts[:2] == [RepeatVerdict(), RepeatVerdict()]
    assert verdicts[2].reason is not None and not verdicts[2].stop
    assert "already called 2 times" in verdicts[2].reason
    assert "Do not call it again" in verdicts[2].reason
    assert verdicts[3].stop and "called 4 times" in (verdicts[3].reason or "")


def test_any_other_call_in_between_or_another_run_starts_the_count_again() -> None:
    guard = RepeatGuard(allowed=1, stop_after=3)
    assert guard.check("read_cell", {"cell": "In[1]"}).reason is None
    assert guard.check("read_cell", {"cell": "In[2]"}).reason is None
    assert guard.check("read_history", {"cell": "In[2]"}).reason is None
    # run, edit, run again: the second run is not a repeat
    assert guard.check("run_cell", {"cell_id": "c"}).reason is None
    assert guard.check("edit_cell", {"cell_id": "c", "source": "x = 2"}).reason is None
    assert guard.check("run_cell", {"cell_id": "c"}).reason is None
    # the same arguments in another key order are the same call
    assert guard.check("f", {"a": 1, "b": 2}).reason is None
    assert guard.check("f", {"b": 2, "a": 1}).reason is not None
    guard.begin_run()
    assert guard.check("f", {"a": 1, "b": 2}).reason is None


def _ran(
    guard: RepeatGuard,
    name: str,
    args: dict[str, object],
    result: str,
    n: int,
    *,
    failed: bool = False,
) -> str | None:
    verdict = guard.check(name, dict(args), f"c{n}")
    if verdict.reason is None:
        guard.record(f"c{n}", result, failed=failed)
    return verdict.reason


def test_two_calls_in_turn_with_the_same_results_are_nudged_then_stopped() -> None:
    guard = RepeatGuard()
    a = ("describe_variable", {"name": "pi"}, "No variable named 'pi' in the notebook")
    b = ("list_cells", {}, "(no cells have run since pi_notebook was loaded)")
    reasons = [_ran(guard, *(a if n % 2 == 0 else b), n) for n in range(6)]
    last = guard.check("describe_variable", {"name": "pi"})
    reasons.append(last.reason)
    assert reasons[:4] == [None] * 4  # the cycle goes round twice
    nudge = reasons[4]
    assert nudge is not None and "describe_variable and list_cells in turn" in nudge
    assert "It gave: No variable named 'pi' in the notebook" in nudge  # what it already got
    assert "Do not call them again" in nudge
    assert reasons[5] is not None and "list_cells and describe_variable" in reasons[5]
    assert reasons[6] is not None and "the run was stopped" in reasons[6]
    assert last.stop


def test_a_cycle_whose_results_change_is_not_refused() -> None:
    guard = RepeatGuard()
    for n in range(8):  # edit, run, edit, run ... each run's output differs
        if n % 2 == 0:
            assert _ran(guard, "edit_cell", {"cell_id": "c"}, "edited", n) is None
        else:
            assert _ran(guard, "run_cell", {"cell_id": "c"}, f"output {n}", n) is None


def test_a_cycle_of_three_is_caught() -> None:
    guard = RepeatGuard()
    calls = [("a", {}, "1"), ("b", {}, "2"), ("c", {"x": 1}, "3")]
    reasons = [_ran(guard, *calls[n % 3], n) for n in range(7)]
    assert reasons[:6] == [None] * 6
    assert reasons[6] is not None and "a and b and c in turn" in reasons[6]


def test_the_same_call_nudge_says_what_it_gave() -> None:
    guard = RepeatGuard()
    reasons = [_ran(guard, "list_variables", {}, "df: DataFrame (150×5)", n) for n in range(3)]
    assert reasons[2] is not None and "It gave: df: DataFrame (150×5)" in reasons[2]
    failed = "warning\n" * 100 + "NameError: name 'np' is not defined"
    guard.begin_run()
    code = {"code": "np.polyfit()"}
    reasons = [_ran(guard, "run_python", code, failed, n, failed=True) for n in range(2)]
    # the same code right after it failed is refused at once, quoted by its end (the error)
    assert reasons[0] is None and reasons[1] is not None
    assert "already called once" in reasons[1]
    assert "It gave: [...] " in reasons[1] and "NameError: name 'np'" in reasons[1]
    assert "fix the code if it failed" in reasons[1]
    assert _ran(guard, "run_python", {"code": "import numpy as np"}, "", 2) is None


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError):
        RepeatGuard(allowed=3, stop_after=3)
    with pytest.raises(ValueError):
        RepeatGuard(allowed=0)


LOOPING = """
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
faux.set_responses([
    faux_assistant_message([faux_tool_call("describe_variable", {"name": "orders"}, id=f"d{i}")])
    for i in range(8)
] + [faux_assistant_message("never reached")])
orders = [1, 2, 3]
%model faux/faux-1
"""

REPORT = """
import json, pi_notebook
pi = pi_notebook.current()
results = [e.message for e in pi.session.get_entries()
           if getattr(getattr(e, "message", None), "role", None) == "toolResult"]
print(json.dumps({"results": [[r.is_error, r.content[0].text] for r in results],
                  "state": pi.last_run.state, "notice": pi.last_run.view.notice}))
"""


def _report(script: str, prompt: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """The tool results and end of a run of ``script``'s model, and the run cell's output."""
    nb = execute(["%load_ext pi_notebook", script, f"%%agent --wait\n{prompt}", REPORT], tmp_path)
    return json.loads(outputs_text(nb.cells[3])), outputs_text(nb.cells[2])


def test_a_looping_model_is_refused_then_stopped_in_a_real_kernel(tmp_path: Path) -> None:
    report, shown = _report(LOOPING, "Describe orders.", tmp_path)
    results = report["results"]
    assert len(results) == 5  # two ran, two refused, the fifth stopped the run
    assert [is_error for is_error, _text in results[:2]] == [False, False]
    assert "list" in results[0][1]  # a real description of the variable
    assert all(is_error for is_error, _text in results[2:])
    assert "already called 2 times" in results[2][1]
    # the fifth call's result is the loop's own "aborted" one; the run view says why
    assert report["state"] == "aborted", report
    assert report["notice"].startswith("Stopped: describe_variable was called 5 times")
    assert "never reached" not in shown


ALTERNATING = """
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
calls = [("describe_variable", {"name": "pi"}), ("list_variables", {})]
faux.set_responses([
    faux_assistant_message([faux_tool_call(*calls[i % 2], id=f"t{i}")]) for i in range(5)
] + [faux_assistant_message("orders has 3 items.")])
orders = [1, 2, 3]
%model faux/faux-1
"""


def test_an_alternating_model_is_nudged_and_answers_in_a_real_kernel(tmp_path: Path) -> None:
    report, shown = _report(ALTERNATING, "How many orders?", tmp_path)
    results = report["results"]
    assert len(results) == 5
    assert results[0][0] and "No variable named 'pi' in the notebook" in results[0][1]
    assert "orders: list (len 3)" in results[1][1]
    assert results[2:4] == results[:2]  # the second round ran: it could have changed
    is_error, nudge = results[4]
    assert is_error and "describe_variable and list_variables in turn" in nudge
    assert "It gave: \"No variable named 'pi' in the notebook\"" in nudge
    assert report["state"] == "done", report
    assert "orders has 3 items." in shown


def test_a_refused_repeat_of_a_call_that_succeeded_says_the_answer_is_due() -> None:
    guard = RepeatGuard(allowed=2, stop_after=5)
    code = {"code": "print(26.376)"}
    for number in (1, 2):
        assert guard.check("run_python", code, f"c{number}") == RepeatVerdict()
        guard.record(f"c{number}", "26.376\n")
    refused = guard.check("run_python", code, "c3")
    assert refused.reason is not None and refused.answer_due and not refused.stop
    failing = {"code": "df['BMI']"}
    guard.begin_run()
    assert guard.check("run_python", failing, "f1") == RepeatVerdict()
    guard.record("f1", "KeyError: 'BMI'", failed=True)
    again = guard.check("run_python", failing, "f2")
    assert again.reason is not None and not again.answer_due  # nothing to answer with


REPEATING = """
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
offered = []
def answer(context, options, state, model):
    offered.append(sorted(t.name for t in context.tools or ()))
    return faux_assistant_message("The mean is 2.0.")
faux.set_responses([
    faux_assistant_message([faux_tool_call("run_python", {"code": "print(sum(orders) / 3)"},
                                           id=f"r{i}")])
    for i in range(3)
] + [answer])
orders = [1, 2, 3]
%approve run_python allow
%tools add run_python
%model faux/faux-1
"""

OFFERED = """
print(json.dumps({"offered": offered, "active": pi.harness_if_made.active_tool_names}))
"""


def test_a_model_repeating_code_that_ran_answers_without_tools_in_a_real_kernel(
    tmp_path: Path,
) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            REPEATING,
            "%%agent --wait\nWhat is the mean of orders?",
            REPORT,
            OFFERED,
        ],
        tmp_path,
    )
    report = json.loads(outputs_text(nb.cells[3]))
    after = json.loads(outputs_text(nb.cells[4]))
    results = report["results"]
    assert [text for _error, text in results[:2]] == ["2.0\n", "2.0\n"]
    assert results[2][0] and "already called 2 times" in results[2][1]
    assert report["state"] == "done", report
    assert after["offered"] == [[]]  # the answer was asked for without tools
    assert "run_python" in after["active"]  # and they are back after the run
    assert "The mean is 2.0." in outputs_text(nb.cells[2])
