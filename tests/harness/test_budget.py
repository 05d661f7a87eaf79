"""Spending caps in ``AgentHarness``: each cap stops a run before the request that would pass
it, the partial work stays in the session with the reason after it, the output limit shrinks
to fit, and the caps are stored in the session. Against the faux provider (with prices)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    FauxProvider,
    ModelCost,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.harness import (
    AgentHarness,
    AgentHarnessError,
    CustomMessageEntry,
    InMemorySessionStorage,
    MessageEntry,
    Session,
)
from pi_notebook.harness.budget import (
    BUDGET_STOP_TYPE,
    MIN_REPLY_TOKENS,
    BudgetCaps,
    BudgetSettings,
    Spend,
    check_request,
)
from tests.agent.test_agent_loop import make_tool

ECHO = make_tool(
    "echo", lambda p, s, u: f"echo:{p['text']}", properties={"text": {"type": "string"}}
)


@pytest.fixture
def priced() -> Any:
    """A faux model at $3 / $15 per million tokens (input / output), 4096 output tokens."""
    base = register_faux_provider()
    model = base.get_model().model_copy(
        update={"cost": ModelCost(input=3.0, output=15.0), "max_tokens": 4096}
    )
    base.unregister()
    provider = register_faux_provider(models=[model])
    yield provider
    provider.unregister()


def tool_turns(n: int) -> list[AssistantMessage]:
    return [
        faux_assistant_message([faux_tool_call("echo", {"text": f"t{i}"})], stop_reason="toolUse")
        for i in range(n)
    ]


def harness(faux: FauxProvider, session: Session | None = None) -> AgentHarness:
    return AgentHarness(
        session if session is not None else Session.create(InMemorySessionStorage()),
        faux.get_model(),
        tools=[ECHO],
    )


def stop_notes(session: Session) -> list[str]:
    return [
        str(e.content)
        for e in session.get_branch()
        if isinstance(e, CustomMessageEntry) and e.custom_type == BUDGET_STOP_TYPE
    ]


def replies(session: Session) -> list[AssistantMessage]:
    return [
        e.message
        for e in session.get_branch()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    ]


async def test_turn_cap_stops_before_the_next_request(priced: FauxProvider) -> None:
    priced.set_responses([*tool_turns(5), faux_assistant_message("done")])
    h = harness(priced)
    events: list[Any] = []
    h.subscribe(events.append)
    reply = await h.prompt("go", budget=BudgetCaps(max_turns=2))
    assert priced.call_count == 2  # the third request was never sent
    assert reply.stop_reason == "aborted"
    assert reply.error_message is not None and "2 turns" in reply.error_message
    sent = replies(h.session)
    assert [r.stop_reason for r in sent] == ["toolUse", "toolUse", "aborted"]
    # the partial work is kept: both tool results are in the session
    results = [
        e
        for e in h.session.get_branch()
        if isinstance(e, MessageEntry) and e.message.role == "toolResult"
    ]
    assert len(results) == 2
    assert stop_notes(h.session) == [reply.error_message]
    budget_events = [e for e in events if e.type == "budget_update"]
    assert budget_events[-1].stopped == reply.error_message
    assert budget_events[-1].run_spent["turns"] == 2
    assert budget_events[-1].run_caps == {"maxTurns": 2}


async def test_cost_cap_uses_the_projected_cost_and_keeps_the_spend_below(
    priced: FauxProvider,
) -> None:
    priced.set_responses([*tool_turns(50), faux_assistant_message("done")])
    h = harness(priced)
    reply = await h.prompt("go " * 200, budget=BudgetCaps(max_cost=0.02))
    assert reply.stop_reason == "aborted"
    assert reply.error_message is not None and "$0.0200 would be passed" in reply.error_message
    spent = sum(r.usage.cost.total for r in replies(h.session))
    assert 0 < spent <= 0.02
    assert priced.call_count >= 1


async def test_token_cap_without_prices(faux: FauxProvider) -> None:
    """A local model has no prices: the token cap still stops it (the cost cap cannot)."""
    faux.set_responses([*tool_turns(50), faux_assistant_message("done")])
    h = harness(faux)
    reply = await h.prompt("go", budget=BudgetCaps(max_tokens=40_000, max_cost=0.01))
    assert reply.stop_reason == "aborted"
    assert reply.error_message is not None and "40,000 tokens" in reply.error_message
    used = sum(r.usage.total_tokens for r in replies(h.session))
    assert 0 < used <= 40_000


async def test_output_limit_shrinks_to_fit(priced: FauxProvider) -> None:
    seen: list[int | None] = []

    def step(context: Any, options: Any, state: Any, model: Any) -> AssistantMessage:
        seen.append(options.max_tokens)
        return faux_assistant_message("ok")

    priced.set_responses([step])
    h = harness(priced)
    # 4096 output tokens at $15/M is $0.061: a $0.04 cap leaves room for ~2600 of them
    reply = await h.prompt("hi", budget=BudgetCaps(max_cost=0.04))
    assert reply.stop_reason == "stop"
    assert seen[0] is not None and MIN_REPLY_TOKENS <= seen[0] < 4096
    assert seen[0] * 15 / 1e6 <= 0.04


async def test_session_caps_are_stored_and_count_earlier_runs(
    priced: FauxProvider, tmp_path: Any
) -> None:
    path = tmp_path / "s.jsonl"
    from pi_notebook.harness import JsonlSessionStorage

    session = Session.create(JsonlSessionStorage(path))
    h = harness(priced, session)
    h.set_budget(BudgetSettings(session=BudgetCaps(max_turns=3), run=BudgetCaps(max_turns=10)))
    priced.set_responses(
        [*tool_turns(1), faux_assistant_message("one"), faux_assistant_message("two")]
    )
    assert (await h.prompt("a")).stop_reason == "stop"  # two requests
    reply = await h.prompt("b")
    assert reply.stop_reason == "stop"  # the third
    reply = await h.prompt("c")
    assert reply.stop_reason == "aborted"
    assert "the session's cap of 3 turns" in (reply.error_message or "")
    reopened = AgentHarness(Session.open(path), priced.get_model())
    assert reopened.budget == BudgetSettings(
        session=BudgetCaps(max_turns=3), run=BudgetCaps(max_turns=10)
    )
    reopened.set_budget(BudgetSettings())
    assert AgentHarness(Session.open(path), priced.get_model()).budget == BudgetSettings()


async def test_bad_budget_is_refused(faux: FauxProvider) -> None:
    h = harness(faux)
    with pytest.raises(AgentHarnessError):
        await h.prompt("x", budget={"max_turns": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        BudgetCaps(max_turns=0)
    with pytest.raises(ValueError):
        BudgetCaps(max_tokens=1.5)
    assert BudgetCaps.from_data({"maxCost": "a lot", "maxTurns": -1}) == BudgetCaps()


def test_check_request_names_the_cap() -> None:
    register = register_faux_provider()
    try:
        model = register.get_model().model_copy(update={"cost": ModelCost(input=1.0, output=2.0)})
        caps = BudgetCaps(max_tokens=10_000)
        ok = check_request(model, 1000, 4000, [("run", caps, Spend())])
        assert ok.allowed and ok.max_tokens is None
        shrunk = check_request(model, 1000, 4000, [("run", caps, Spend(tokens=6000))])
        assert shrunk.allowed and shrunk.max_tokens == 3000
        stop = check_request(model, 1000, 4000, [("session", caps, Spend(tokens=8500))])
        assert not stop.allowed and stop.scope == "session" and stop.cap == "tokens"
    finally:
        register.unregister()
