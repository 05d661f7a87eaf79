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


def test_model_shows_the_base_url_without_its_password(tmp_path: Path) -> None:
    custom = (
        "from pi_notebook.ai import Model, faux_assistant_message, register_faux_provider\n"
        "url = 'http://reader:s3cr3t-pw@127.0.0.1:8080/v1'\n"
        "model = Model(id='faux-1', name='Faux', api='faux-url', provider='faux', base_url=url,\n"
        "              reasoning=False, input=['text'], context_window=8192, max_tokens=512)\n"
        "faux = register_faux_provider(api='faux-url', models=[model])"
    )
    nb = execute(
        [custom, "%load_ext pi_notebook", "%model faux/faux-1", "%model"], tmp_path, env=ENV
    )
    shown = outputs_text(nb.cells[3])
    assert "via faux-url at http://***@127.0.0.1:8080/v1" in shown, shown
    assert "s3cr3t-pw" not in shown and "reader" not in shown


def test_the_context_bar_has_a_size_while_the_first_reply_streams(tmp_path: Path) -> None:
    nb = execute(
        [
            FAUX_SETUP.format(tps=20)
            + "faux.set_responses([faux_assistant_message('slow words ' * 60)])",
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent\n" + "Tell me a long story about kernels. " * 20,
            "import asyncio, pi_notebook\n"
            "await asyncio.sleep(0.5)\n"
            "view = pi_notebook.current().last_run.view\n"
            "view.flush()\n"
            "header = view.header\n"
            "print('bar:', view.status, header['context_tokens'], header['context_window'])\n"
            "await pi_notebook.current().wait()",
        ],
        tmp_path,
        env=ENV,
    )
    line = next(t for t in outputs_text(nb.cells[3]).splitlines() if t.startswith("bar:"))
    status, used, window = line.split()[1:]
    assert status == "streaming", status
    # about the prompt's size (pi's estimate: 4 characters a token), not 0
    assert 150 <= int(used) <= 400 and int(window) > int(used), (used, window)
