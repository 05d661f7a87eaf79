"""What every pi magic family shares (``notebook/magics/base.py``), on its own: the parsing of a
magic's line into one UsageError, and the displays of queued magics, driven by the kernel's real
operation queue (outside a kernel ``display`` prints its data, so the first text of a display
is in the printed line). The magics themselves run in real kernels in the other tests here."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from IPython.core.error import UsageError

from pi_notebook.notebook.magics.base import Outcomes, fill_in, parse_args, reason_of
from pi_notebook.notebook.magics.core import PiMagics
from pi_notebook.notebook.operations import OperationQueue


class QueueAgent:
    """The part of ``NotebookAgent`` the displays use, over a real ``OperationQueue``."""

    def __init__(self) -> None:
        self.operations = OperationQueue()

    @property
    def busy(self) -> bool:
        return self.operations.busy

    def enqueue(self, operation: Any) -> asyncio.Future[Any]:
        return self.operations.enqueue(operation)

    def run_inline(self, future: asyncio.Future[Any]) -> None:
        self.operations.run_inline(future)


def outcomes_of(agent: QueueAgent) -> Outcomes:
    return Outcomes(cast(Any, agent))


def test_a_line_that_does_not_parse_is_one_usage_error_naming_the_help() -> None:
    with pytest.raises(UsageError) as caught:
        parse_args(PiMagics.compact, 'focus "on the plots')
    assert str(caught.value) == "No closing quotation. See %compact? for the usage."
    args = parse_args(PiMagics.compact, "--keep 2000 the plots")
    assert args.keep == 2000 and args.instructions == ["the", "plots"]


def test_reasons_and_filled_prompts() -> None:
    assert reason_of(KeyError("no model 'x'")) == "no model 'x'"  # not "\"no model 'x'\""
    assert reason_of(ValueError("bad")) == "bad"
    assert fill_in("rows: {n:,} {{literal}}", {"n": 12345}) == "rows: 12,345 {literal}"
    with pytest.raises(UsageError, match=r"no variable named 'missing'"):
        fill_in("look at {missing}", {})


async def test_an_operation_with_nothing_queued_starts_at_once_and_the_cell_waits_for_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = QueueAgent()
    outcomes = outcomes_of(agent)

    async def switch() -> str:
        return "Model: faux/one"

    outcomes.report("%model", switch)
    # a display with no shell prints its repr; after another test made one, the text itself
    assert "%model: …" in capsys.readouterr().out
    await agent.operations.settled()  # what the input rewrite awaits after the magic
    (shown,) = outcomes.shown
    assert shown.text == "Model: faux/one"
    outcomes.resync()  # re-sent once after the cell, then dropped
    assert outcomes.shown == []


async def test_behind_a_run_an_operation_waits_its_turn_and_a_failure_fills_the_display(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = QueueAgent()
    outcomes = outcomes_of(agent)
    release = asyncio.Event()
    order: list[str] = []

    async def run() -> None:
        await release.wait()
        order.append("run")

    running = agent.enqueue(run)

    async def switch() -> str:
        order.append("switch")
        raise KeyError("Unknown model 'faux/none'")

    outcomes.report("%model", switch)
    assert "%model: queued, runs when the run above ends" in capsys.readouterr().out
    (shown,) = outcomes.shown
    assert shown.text is None
    outcomes.resync()
    assert outcomes.shown == [shown]  # not final yet: kept for the next resync
    release.set()
    await running
    await agent.operations.wait()
    assert order == ["run", "switch"]
    assert shown.text == "%model failed: Unknown model 'faux/none'"


async def test_a_change_applies_at_once_when_idle_and_in_turn_behind_a_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = QueueAgent()
    outcomes = outcomes_of(agent)
    level = ["off"]

    def put() -> str:
        level[0] = "high"
        return "thinking: high"

    outcomes.now_or_queued("%thinking", put)
    assert level == ["high"] and capsys.readouterr().out == "thinking: high\n"
    assert outcomes.shown == []

    release = asyncio.Event()
    running = agent.enqueue(release.wait)
    level[0] = "off"
    outcomes.now_or_queued("%thinking", put)
    assert level == ["off"]  # not before the run above is done
    release.set()
    await running
    await agent.operations.wait()
    assert level == ["high"] and outcomes.shown[0].text == "thinking: high"
