"""``%unload_ext pi_notebook`` gives the kernel back its magics as they were, and the extension
loads again after it. Real kernels (nbclient).

pi_notebook's ``%system`` (the agent's system prompt) replaces IPython's line magic of that name
(run a shell command and return its output) while it is loaded; IPython's ``%%system`` cell magic
and ``%sx`` are left alone.
"""

from __future__ import annotations

from pathlib import Path

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb", "PI_NOTEBOOK_MODEL": ""}
SNAPSHOT = (
    "def magic_tables():\n"
    "    tables = get_ipython().magics_manager.magics\n"
    "    return {kind: dict(table) for kind, table in tables.items()}\n"
    "before = magic_tables()"
)
SAME_AS_BEFORE = (
    "after = magic_tables()\n"
    "changed = {kind: sorted(name for name in set(before[kind]) | set(after[kind])\n"
    "                        if before[kind].get(name) != after[kind].get(name))\n"
    "           for kind in before}\n"
    "assert changed == {'line': [], 'cell': []}, changed\n"
    "print('magics as before')"
)
REPLY = FAUX_SETUP.format(tps=None) + "faux.set_responses([faux_assistant_message('back again')])"


def test_unload_gives_back_ipythons_system_and_loads_again(tmp_path: Path) -> None:
    nb = execute(
        [
            SNAPSHOT,
            "%system echo before",  # 1: IPython's, before the extension
            "%load_ext pi_notebook",
            "%system",  # 3: pi's: the agent's system prompt
            "%unload_ext pi_notebook",
            SAME_AS_BEFORE,  # 5
            "%system echo hi",  # 6: IPython's shell magic again
            "%%system\necho from a cell",  # 7
            "%load_ext pi_notebook",  # 8: loads again
            REPLY + "\n%model faux/faux-1",
            "%%agent --wait\nstill there?",  # 10
            "import pi_notebook\nprint(pi_notebook.current().last_run.result.text)",  # 11
            "%system",  # 12: pi's again
            "%unload_ext pi_notebook",
            SAME_AS_BEFORE,  # 14
            "%system echo bye",  # 15
            "%steer hi",  # 16
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    text = [outputs_text(cell) for cell in nb.cells]
    assert text[1] == "['before']"
    assert "Error" not in text[3] and "before" not in text[3] and text[3].strip()
    assert text[5] == "magics as before\n"
    assert text[6] == "['hi']"
    assert text[7] == "['from a cell']"
    assert "pi_notebook: session test.pi.jsonl" in text[8], text[8]
    assert text[11] == "back again\n"
    # the prompt follows the model (this one takes images): its opening line is the same
    assert text[12].splitlines()[0] == text[3].splitlines()[0]
    assert text[14] == "magics as before\n"
    assert text[15] == "['bye']"
    assert "Line magic function `%steer` not found" in text[16]
