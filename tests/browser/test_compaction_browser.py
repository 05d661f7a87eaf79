"""A compaction in the run view, in a real JupyterLab and Chromium: a faux model with a
2,000-token window fills it in two turns; the harness compacts after the second, and its run
view says so with the sizes before and after."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = "\n".join(
    [
        FAUX_IMPORTS,
        "from pi_notebook.ai import Model",
        "small = Model(id='small', api='x', provider='x', context_window=2000, max_tokens=200)",
        "faux = register_faux_provider(provider='tiny', models=[small], tokens_per_second=12)",
        "summary = '## Goal\\nRead the report.\\n## Progress\\n' + ' '.join(['noted'] * 30)",
        "faux.set_responses([faux_assistant_message('First answer.'),",
        "                    faux_assistant_message('Second answer.'),",
        "                    faux_assistant_message(summary)])",
        "%model tiny/small",
        "long_text = ' '.join(f'line{i}' for i in range(900))",
    ]
)


def test_the_run_view_shows_a_compaction(open_notebook: Callable[..., LabNotebook]) -> None:
    nb = open_notebook(
        "compaction.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",
            SETUP,
            "%%agent --wait\nRead this: {long_text}",
            "%%agent\nAnd this: {long_text}",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    line = nb.cell(3).locator(".pi-run .pi-compaction")
    line.wait_for()
    nb.wait_until(lambda: line.inner_text().startswith("compacting: "), "the compaction to start")
    nb.screenshot(nb.cell(3).locator(".pi-run .pi-header"), "run_view_compacting.png")
    nb.wait_until(lambda: line.inner_text().startswith("compacted: "), "the compaction to end")
    text = line.inner_text()
    before, after = text.removeprefix("compacted: ").removesuffix(" tokens").split(" → ")
    assert int(after.replace(",", "")) < int(before.replace(",", "")), text
    context = nb.cell(3).locator(".pi-run .pi-context").inner_text()
    assert context.split("/")[0].strip() == after, context  # the bar shows the compacted size
    nb.screenshot(nb.cell(3).locator(".pi-run .pi-header"), "run_view_compacted.png")
