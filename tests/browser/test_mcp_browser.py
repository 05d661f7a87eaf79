"""An MCP tool in a real JupyterLab and Chromium: the server (tests/mcp/demo_server.py, stdio)
is marked "ask before every call"; its tool card waits for Allow, then shows the server's
progress notifications while the call runs, then the result. A running card has its own Stop:
clicking it ends that call alone ("aborted by the user") and the run goes on."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

DEMO = Path(__file__).resolve().parents[1] / "mcp" / "demo_server.py"

REPLIES = """[
    faux_assistant_message(faux_tool_call("mcp__demo__slow", {"steps": 12, "delay": 0.5},
                                          id="call_slow")),
    faux_assistant_message("Counted to 12 on the MCP server."),
]"""


def test_mcp_tool_card_asks_then_shows_progress(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "mcp_tool.ipynb",
        [
            "%load_ext pi_notebook",
            f"%mcp add demo --ask -- {sys.executable} {DEMO} stdio",
            "\n".join(
                [
                    FAUX_IMPORTS,
                    "faux = register_faux_provider(tokens_per_second=40)",
                    f"faux.set_responses({REPLIES})",
                    "%model faux/faux-1",
                ]
            ),
            "%%agent\nCount to twelve on the demo server.",
            "%mcp list",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    assert "asks before every call" in nb.output_text(1)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")

    card = run.locator('.pi-tool[data-tool-call-id="call_slow"]')
    card.locator(".pi-allow").wait_for()
    assert "mcp__demo__slow" in card.inner_text()
    assert "Run this tool call?" in card.locator(".pi-tool-approval").inner_text()
    nb.screenshot(run, "mcp_tool_card_approval.png")
    card.locator(".pi-allow").click()

    progress = card.locator(".pi-tool-progress")
    progress.locator("text=/step [3-9] — [3-9]\\/12/").wait_for()
    assert re.search(r"step \d+ — \d+/12 \(\d+%\)", progress.inner_text())
    shot = nb.screenshot(run, "mcp_tool_card_progress.png")

    card.locator(".pi-tool-result", has_text="counted to 12").wait_for()
    assert "pi-tool-ok" in (card.get_attribute("class") or "")
    assert card.locator(".pi-approval-allowed").inner_text().startswith("Allowed.")
    run.locator(".pi-status.pi-status-done").wait_for()
    nb.screenshot(run, "mcp_tool_card_done.png")

    nb.run_and_wait(4)
    assert "demo [ready]" in nb.output_text(4)
    assert shot.is_file()  # docs/mcp-tool-card.png is a copy of this one


STOP_REPLIES = """[
    faux_assistant_message([
        faux_tool_call("mcp__demo__slow", {"steps": 400, "delay": 0.1}, id="call_count"),
        faux_tool_call("mcp__demo__echo", {"text": "still here"}, id="call_echo"),
    ]),
    faux_assistant_message("The count was stopped; the echo came back."),
]"""


def test_mcp_tool_card_stop_ends_that_call_and_the_run_goes_on(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "mcp_stop.ipynb",
        [
            "%load_ext pi_notebook",
            f"%mcp add demo -- {sys.executable} {DEMO} stdio",
            "\n".join(
                [
                    FAUX_IMPORTS,
                    "faux = register_faux_provider(tokens_per_second=40)",
                    f"faux.set_responses({STOP_REPLIES})",
                    "%model faux/faux-1",
                ]
            ),
            "%%agent\nCount to 400 and echo.",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")
    card = run.locator('.pi-tool[data-tool-call-id="call_count"]')
    card.locator(".pi-tool-progress").locator("text=/step [2-9] — [2-9]\\/400/").wait_for()
    stop = card.locator(".pi-tool-stop")
    assert stop.is_enabled()
    nb.screenshot(run, "mcp_tool_card_stop.png")
    stop.click()

    card.locator(".pi-tool-result", has_text="Tool call aborted by the user").wait_for()
    assert "pi-tool-error" in (card.get_attribute("class") or "")
    assert card.locator(".pi-tool-stop").count() == 0
    echo = run.locator('.pi-tool[data-tool-call-id="call_echo"]')
    echo.locator(".pi-tool-result", has_text="still here").wait_for()
    assert "pi-tool-ok" in (echo.get_attribute("class") or "")
    run.locator(".pi-status.pi-status-done").wait_for()
    assert "The count was stopped; the echo came back." in run.inner_text()
    assert run.locator(".pi-tool-stop").count() == 0
    nb.screenshot(run, "mcp_tool_card_stopped.png")
