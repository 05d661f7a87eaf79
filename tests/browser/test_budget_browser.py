"""The budget display in a real JupyterLab and Chromium: an ``%%agent --max-turns 3 --max-cost``
run with a priced faux model shows each cap's meter in the run view's header, the meters grow
while the run goes on, and the run ends before the request that would pass the turn cap, with
the reason in the view's notice."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = f"""\
{FAUX_IMPORTS}
from pi_notebook.ai import ModelCost
import pi_notebook
plain = register_faux_provider()
priced = plain.get_model().model_copy(
    update={{"cost": ModelCost(input=3.0, output=15.0), "max_tokens": 4096}}
)
plain.unregister()
faux = register_faux_provider(models=[priced], tokens_per_second=30)
faux.set_responses([
    faux_assistant_message(
        [faux_text(f"Step {{i}}: checking the next file."), faux_tool_call("step", {{"i": i}})],
        stop_reason="toolUse",
    )
    for i in range(10)
])

@pi_notebook.tool
def step(i: int) -> str:
    "Do step i."
    return f"step {{i}} done"
"""


def test_the_run_view_shows_spend_against_caps_and_the_stop(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "budget.ipynb",
        [
            "%load_ext pi_notebook",
            SETUP,
            "%model faux/faux-1\n%budget --max-tokens 200000",
            "%%agent --max-turns 3 --max-cost 0.50\nWork through the files.",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")
    meters = run.locator(".pi-budget-meter")
    seen: list[str] = []

    def turns_text() -> str:
        texts = meters.all_inner_texts() if meters.count() else []
        turns = next((t for t in texts if "turns" in t), "")
        if turns and (not seen or seen[-1] != turns):
            seen.append(turns)
        return turns

    nb.wait_until(lambda: turns_text() == "run 3/3 turns", "the turn meter to reach its cap")
    assert seen[0] in ("run 0/3 turns", "run 1/3 turns")  # it moved while the run went on
    assert len(seen) >= 2
    notice = run.locator(".pi-notice")
    nb.wait_until(lambda: "Budget: stopped" in notice.inner_text(), "the budget notice")
    assert "this run's cap of 3 turns reached" in notice.inner_text()
    texts = meters.all_inner_texts()
    assert any(t.startswith("run $") and t.endswith("/$0.500") for t in texts), texts
    assert any(t.startswith("session ") and t.endswith("/200k tokens") for t in texts), texts
    nb.wait_until(lambda: not nb.cell(3).locator(".pi-live .pi-text").count(), "the run to end")
    nb.screenshot(run, "budget_run_view.png")
    entries = nb.session_entries()
    stops = [e for e in entries if e.get("customType") == "pi_notebook.budget_stop"]
    assert len(stops) == 1
