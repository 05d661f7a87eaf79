"""The repeat guard: a model calling one tool with the same arguments again and again is refused,
then stopped — in a unit test, and in a real kernel (nbclient) with a scripted model that loops
the way Qwen2.5-Coder-1.5B did at temperature 0 while notebooks/workspace.ipynb was recorded."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_looping_model_is_refused_then_stopped_in_a_real_kernel(tmp_path: Path) -> None:
    nb = execute(
        ["%load_ext pi_notebook", LOOPING, "%%agent --wait\nDescribe orders.", REPORT],
        tmp_path,
    )
    report = json.loads(outputs_text(nb.cells[3]))
    results = report["results"]
    assert len(results) == 5  # two ran, two refused, the fifth stopped the run
    assert [is_error for is_error, _text in results[:2]] == [False, False]
    assert "list" in results[0][1]  # a real description of the variable
    assert all(is_error for is_error, _text in results[2:])
    assert "already called 2 times" in results[2][1]
    # the fifth call's result is the loop's own "aborted" one; the run view says why
    assert report["state"] == "aborted", report
    assert report["notice"].startswith("Stopped: describe_variable was called 5 times")
    assert "never reached" not in outputs_text(nb.cells[2])
