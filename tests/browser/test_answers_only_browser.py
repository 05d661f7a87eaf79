"""A model that cannot call tools, in a real JupyterLab and Chromium: its run view says so, and
the model is offered no tools. (The faux model calls tools; ``%model --tools no`` says it does
not, as a user would for a model the server does not describe.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = "\n".join(
    [
        FAUX_IMPORTS,
        "faux = register_faux_provider(tokens_per_second=200)",
        "offered = []",
        "def answer(context, options, state, model):",
        "    offered.append(len(context.tools or []))",
        "    return faux_assistant_message('An answer in text.')",
        "faux.set_responses([answer, answer])",
        "%model faux/faux-1",
    ]
)


def test_the_run_view_says_the_model_answers_only(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "answers_only.ipynb",
        [
            "%load_ext pi_notebook",
            SETUP,
            "%model --tools no",
            "%%agent --wait\nWhat is in df?",
            "print(offered)",
            "%model --tools auto",
            "%%agent --wait\nAnd now?",
        ],
    )
    nb.run_and_wait(0, 1, 2, 3, 4, 5, 6)
    notice = nb.cell(3).locator(".pi-run .pi-answers-only")
    notice.wait_for()
    assert notice.is_visible()
    assert notice.inner_text() == "this model cannot call tools: answers only"
    nb.screenshot(nb.cell(3).locator(".pi-run"), "run_view_answers_only.png")
    assert nb.output_text(4).strip() == "[0]"  # the first run was offered no tools
    second = nb.cell(6).locator(".pi-run")
    second.locator(".pi-status").wait_for()
    assert second.locator(".pi-answers-only").is_hidden()
    nb.run_and_wait(4)
    offered = nb.output_text(4).strip()
    assert offered.startswith("[0, ") and offered != "[0, 0]", offered  # tools again
