"""``%session`` in a real kernel (nbclient) shows the session's usage totals: replies, tool
results, summaries and pi 1.6 ``usage`` entries, as pi's session stats count them."""

from __future__ import annotations

from pathlib import Path

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}


def test_session_info_shows_usage_totals(tmp_path: Path) -> None:
    nb = execute(
        [
            FAUX_SETUP.format(tps=None) + "faux.set_responses([faux_assistant_message('hi')])",
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent --wait\nSay hi",
            "import pi_notebook\n"
            "from pi_notebook.ai import Cost, Usage\n"
            "session = pi_notebook.current().session\n"
            "before = session.usage_totals()\n"
            "session.append_usage('cache_warm', 'faux', 'faux-1',\n"
            "    Usage(input=1000, cache_write=2000, cost=Cost(total=0.5)))",
            "%session",
            "after = session.usage_totals()\n"
            "assert after.input == before.input + 1000, (before, after)\n"
            "assert after.cache_write == before.cache_write + 2000\n"
            "assert abs(after.cost - before.cost - 0.5) < 1e-9\n"
            "print(f'tokens: {after.total_tokens:,} (input {after.input:,}, output "
            "{after.output:,}, cache read {after.cache_read:,}, "
            "cache write {after.cache_write:,})')",
        ],
        tmp_path,
        env=ENV,
    )
    text = outputs_text(nb.cells[4])
    expected = outputs_text(nb.cells[5]).strip()
    assert expected.startswith("tokens: ") and expected in text, (expected, text)
    assert "cost so far: $0.5" in text, text
