"""Magics called from code (``run_line_magic``) in real kernels (nbclient): with nothing
running they act before the call returns, as a typed magic does."""

from __future__ import annotations

from pathlib import Path

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}


def test_model_and_label_from_code_act_at_once(tmp_path: Path) -> None:
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + "faux.set_responses([faux_assistant_message('Hi.')])",
            "%load_ext pi_notebook",
            "import pi_notebook\n"
            "ip = get_ipython()\n"
            "ip.run_line_magic('model', 'faux/faux-1')\n"
            "harness = pi_notebook.current().harness  # NoModelError before\n"
            "assert (harness.model.provider, harness.model.id) == ('faux', 'faux-1')",
            "%%agent --wait\nhello",
            "agent = pi_notebook.current()\n"
            "reply = agent.session.leaf_id\n"
            "ip.run_line_magic('label', 'greeting')\n"
            "assert agent.session.get_label(reply) == 'greeting'",
        ],
        tmp_path,
        env=ENV,
    )
    assert "Model: faux/faux-1" in outputs_text(nb.cells[2])
    assert "%model: …" not in outputs_text(nb.cells[2])
    assert "Labelled" in outputs_text(nb.cells[4])
