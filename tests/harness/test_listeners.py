"""``AgentHarness.subscribe``: a failing listener (sync or async, on agent events, harness events
and posted events) never fails the run, the listeners after it still get every event, and its
failure is logged once with the traceback (not once per streamed delta). The same contract as
``Agent.subscribe`` (test_agent_listeners.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pi_notebook.ai import FauxProvider, faux_assistant_message
from pi_notebook.harness import AgentHarness, InMemorySessionStorage, Session

LOGGER = "pi_notebook.harness.event_bus"


def harness_for(faux: FauxProvider) -> AgentHarness:
    return AgentHarness(Session.create(InMemorySessionStorage()), faux.get_model())


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_failing_listener_is_logged_once_and_the_run_completes(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    faux.set_responses([faux_assistant_message("a reply of several words " * 5)])
    harness = harness_for(faux)
    calls = 0

    def broken(event: Any) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("display broke")

    async def broken_async(event: Any) -> None:
        broken(event)

    harness.subscribe(broken if kind == "sync" else broken_async)
    later: list[str] = []
    harness.subscribe(lambda e: later.append(e.type))
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        reply = await harness.prompt("go")
    assert reply.stop_reason == "stop" and reply.error_message is None
    assert reply.text == "a reply of several words " * 5
    assert later[0] == "agent_start" and later[-1] == "settled"
    assert "message_update" in later and calls == len(later)  # it was called for every event
    roles = [getattr(e, "message", None) for e in harness.session.get_entries()]
    assert [m.role for m in roles if m is not None] == ["user", "assistant"]
    [logged] = errors(caplog)
    assert "display broke" in logged.getMessage() and "the run goes on" in logged.getMessage()
    assert logged.exc_info is not None  # with the traceback
    again = [r for r in caplog.records if r.levelno == logging.DEBUG and "again" in r.getMessage()]
    assert len(again) == calls - 1


async def test_posted_and_harness_events_are_delivered_past_a_failing_listener(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture
) -> None:
    harness = harness_for(faux)
    seen: list[str] = []

    def fails_on_harness_events(event: Any) -> None:
        if event.type in ("thinking_level_update", "model_update", "save_point", "settled"):
            raise RuntimeError(f"no {event.type}")

    harness.subscribe(fails_on_harness_events)
    harness.subscribe(lambda e: seen.append(e.type))
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        harness.set_thinking_level("low")  # posted: delivered by a drainer task
        harness.set_model(faux.get_model())
        faux.set_responses([faux_assistant_message("ok")])
        reply = await harness.prompt("go")
    assert reply.text == "ok"
    assert seen[:2] == ["thinking_level_update", "model_update"]
    assert "save_point" in seen and seen[-1] == "settled"
    assert len(errors(caplog)) == 1  # one listener, one report


async def test_unsubscribing_and_subscribing_again_reports_anew(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture
) -> None:
    harness = harness_for(faux)

    def broken(event: Any) -> None:
        raise ValueError("broken")

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        for _ in range(2):
            unsubscribe = harness.subscribe(broken)
            faux.set_responses([faux_assistant_message("ok")])
            assert (await harness.prompt("go")).text == "ok"
            unsubscribe()
    assert len(errors(caplog)) == 2
