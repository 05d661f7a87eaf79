"""The workspace in real kernels (nbclient, so no frontend): the change summary in the session,
``%agent_context``, ``%fix``, ``{In[n]}``/``{Out[n]}``/``{_}`` and the read tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

LOAD = "%load_ext pi_notebook\n%model faux/faux-1"
ENV = {"JPY_SESSION_NAME": "test.ipynb"}
CAPTURE = FAUX_SETUP.format(tps=None) + (
    "seen = []\n"
    "def answer(text):\n"
    "    def step(context, options, state, model):\n"
    "        seen.append(context)\n"
    "        return faux_assistant_message(text)\n"
    "    return step\n"
    "def texts(context):\n"
    "    out = []\n"
    "    for m in context.messages:\n"
    "        c = m.content\n"
    "        out.append((m.role, c if isinstance(c, str) else ''.join(getattr(p, 'text', '') "
    "for p in c)))\n"
    "    return out\n"
)


def session_lines(directory: Path, name: str = "test") -> list[dict[str, Any]]:
    path = directory / f"{name}.pi.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_change_summary_reaches_the_model_and_the_session(tmp_path: Path) -> None:
    nb = execute(
        [
            CAPTURE + "faux.set_responses([answer('one'), answer('two'), answer('three')])",
            LOAD,
            "prices = [3, 4]\nsum(prices)",
            "{}['price']",
            "%%agent --wait\nWhat went wrong?",
            "print('between turns')",
            "%%agent --wait\nAnd now?",
            "%agent_context off",
            "x = 1",
            "%%agent --wait\nQuiet turn",
            "%agent_context",
            "import json\nprint(json.dumps([texts(c) for c in seen]))",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    first, second, third = json.loads(outputs_text(nb.cells[11]))
    roles = [role for role, _ in first]
    assert roles == ["user", "user"]  # the summary (a custom message, sent as user) + prompt
    summary = first[0][1]
    assert "[notebook] Cells the user ran in the kernel so far" in summary
    assert "prices = [3, 4]" in summary and "[result] 7" in summary
    assert "KeyError: 'price'" in summary
    assert "%%agent" not in summary
    assert "read_last_error" in summary
    assert first[1] == ["user", "What went wrong?"]
    summary_two = second[-2][1]
    assert "since your last turn" in summary_two and "between turns" in summary_two
    assert "prices" not in summary_two
    # context off: no summary between "And now?"'s reply and the third prompt
    assert third[-1] == ["user", "Quiet turn"] and third[-2][0] == "assistant"
    assert "agent context: off" in outputs_text(nb.cells[7])
    assert "agent context: off" in outputs_text(nb.cells[10])
    entries = [e for e in session_lines(tmp_path) if e["type"] == "custom_message"]
    assert [e["customType"] for e in entries] == ["notebook_changes", "notebook_changes"]
    assert entries[0]["display"] is True
    assert entries[0]["details"]["executionCounts"] == [
        nb.cells[2].execution_count,
        nb.cells[3].execution_count,
    ]


def test_fix_sends_the_failing_cell_and_says_what_it_would_write(tmp_path: Path) -> None:
    nb = execute(
        [
            CAPTURE + "faux.set_responses([answer('Use the right key:\\n```python\\nx\\n```')])",
            LOAD,
            "%fix",
            "data = {'price': 3}\ndef total(d):\n    return d['prices']\ntotal(data)",
            "%fix keep it short",
            "import pi_notebook\nawait pi_notebook.current().wait()\n"
            "import json\nprint(json.dumps(texts(seen[0])))",
            "%tree",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    assert "nothing to fix" in outputs_text(nb.cells[2])
    messages = json.loads(outputs_text(nb.cells[5]))
    prompt = messages[-1][1]
    count = nb.cells[3].execution_count
    assert prompt.startswith(f"The cell In[{count}] failed.")
    assert "return d['prices']" in prompt and "KeyError: 'prices'" in prompt
    assert "Traceback (most recent call last):" in prompt and "in total" in prompt
    assert "```python code block" in prompt  # no write tools in nbclient: show the fix
    assert "The user adds: keep it short" in prompt
    assert "notebook_changes" in outputs_text(nb.cells[6]) or "custom" in json.dumps(
        nb.cells[6].outputs
    )


def test_in_out_and_underscore_interpolation(tmp_path: Path) -> None:
    nb = execute(
        [
            CAPTURE + "faux.set_responses([answer('ok')])",
            LOAD,
            "6 * 7",
            "%%agent --wait\nSource: {In[3]} result: {Out[3]} last: {_}",
            "%%agent\nMissing: {Out[99]}",
            "%%agent\nMissing: {In[99]}",
            "import json\nprint(json.dumps(texts(seen[0])[-1]))",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    assert nb.cells[2].execution_count == 3
    assert json.loads(outputs_text(nb.cells[6])) == ["user", "Source: 6 * 7 result: 42 last: 42"]
    assert "that cell has no result in Out (cells with a result: 3)" in outputs_text(nb.cells[4])
    assert "no such cell in In" in outputs_text(nb.cells[5])
    for cell in nb.cells[4:6]:
        assert "Traceback" not in json.dumps(cell.outputs)


def test_read_tools_without_a_frontend(tmp_path: Path) -> None:
    """The model calls every read tool; results come from the kernel history."""
    calls = (
        "faux.set_responses([\n"
        "    faux_assistant_message([faux_tool_call('list_cells', {}),\n"
        "                            faux_tool_call('read_cell', {'cell': 'In[3]'}),\n"
        "                            faux_tool_call('read_history', {'last': 2}),\n"
        "                            faux_tool_call('read_last_error', {}),\n"
        "                            faux_tool_call('read_cell', {'cell': '99'}),\n"
        "                            faux_tool_call('list_variables', {})]),\n"
        "    answer('done')])"
    )
    nb = execute(
        [
            CAPTURE + calls,
            LOAD,
            "numbers = list(range(5))\nprint('made numbers')\nnumbers",
            "1 / 0",
            "%%agent --wait\nLook around",
            "%tools list",
            "import json\n"
            "results = [m for m in seen[-1].messages if m.role == 'toolResult']\n"
            "print(json.dumps([[r.tool_name, r.is_error, r.content[0].text] for r in results]))",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    listing = outputs_text(nb.cells[5])
    for name in ("list_cells", "read_cell", "read_history", "read_last_error", "list_variables"):
        assert f"[on ] {name} (built-in)" in listing
    assert "[off] run_python (built-in)" in listing
    results = {i: r for i, r in enumerate(json.loads(outputs_text(nb.cells[6])))}
    listed = results[0][2]
    assert "No notebook frontend is connected" in listed
    assert "In[3] ok: numbers = list(range(5))" in listed and "In[4] error: 1 / 0" in listed
    cell = results[1][2]
    assert "[stdout] made numbers" in cell and "[result] [0, 1, 2, 3, 4]" in cell
    history = results[2][2]
    assert "In[4] failed" in history and "In[5]" not in history.split("In[4]")[0]
    assert "ZeroDivisionError: division by zero" in results[3][2]
    assert results[4][1] is True and "No cell '99' has run" in results[4][2]
    assert "numbers: list (len 5)" in results[5][2]
