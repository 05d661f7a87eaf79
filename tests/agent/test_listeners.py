"""``Agent.subscribe``: the abort signal goes only to listeners that ask for it, and a failing
listener (sync or async) never fails the run. Golden event orders are checked in
tests/agent/test_agent_golden.py; here, what each listener received."""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest

from pi_notebook.agent import Agent
from pi_notebook.agent.listeners import takes_signal
from pi_notebook.ai import AbortSignal, FauxProvider, faux_assistant_message


def test_the_signal_goes_only_to_listeners_that_ask_for_it() -> None:
    def named(event: Any, signal: Any) -> None: ...
    def positional_only(event: Any, sig: Any, /) -> None: ...
    def star(*args: Any) -> None: ...
    def event_then_star(event: Any, *rest: Any) -> None: ...
    def other_name(event: Any, index: Any) -> None: ...
    def positional_only_default(event: Any, sig: Any = None, /) -> None: ...
    def keyword_only(event: Any, *, signal: Any = None) -> None: ...

    class Handler:
        def handle(self, event: Any, signal: Any) -> None: ...
        def plain(self, event: Any) -> None: ...

    assert takes_signal(named) and takes_signal(positional_only) and takes_signal(star)
    assert takes_signal(event_then_star) and takes_signal(Handler().handle)
    assert not takes_signal(other_name)
    assert not takes_signal(positional_only_default)
    assert not takes_signal(keyword_only)
    assert not takes_signal(Handler().plain)
    assert not takes_signal(lambda e, i=1: None)
    assert not takes_signal(functools.partial(named, "x"))  # (signal) alone is the event slot


async def test_a_default_argument_is_kept_and_named_signals_arrive(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("hi")])
    agent = Agent(model=faux.get_model())
    got: dict[int, list[Any]] = {0: [], 1: []}
    for i in range(2):
        agent.subscribe(lambda e, i=i: got[i].append(e.type))
    signals: list[Any] = []
    agent.subscribe(lambda e, signal: signals.append(signal))
    await agent.prompt("go")
    assert got[0] == got[1] and got[0][0] == "agent_start"
    assert signals and all(isinstance(s, AbortSignal) for s in signals)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_failing_listener_is_reported_and_the_run_completes(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    faux.set_responses([faux_assistant_message("answer")])
    agent = Agent(model=faux.get_model())

    def broken(event: Any) -> None:
        raise ValueError("display broke")

    async def broken_async(event: Any) -> None:
        raise ValueError("display broke")

    agent.subscribe(broken if kind == "sync" else broken_async)
    later: list[str] = []
    agent.subscribe(lambda e: later.append(e.type))
    with caplog.at_level(logging.DEBUG, logger="pi_notebook.agent.agent"):
        await agent.prompt("go")
    assert agent.state.messages[-1].text == "answer"  # type: ignore[union-attr]
    assert agent.state.error_message is None
    assert later[0] == "agent_start" and later[-1] == "agent_end"
    # the harness's rule too (one implementation): the traceback once, then a debug line per event
    [logged] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "display broke" in logged.getMessage() and logged.exc_info is not None
    again = [r for r in caplog.records if r.levelno == logging.DEBUG and "again" in r.getMessage()]
    assert len(again) == len(later) - 1
