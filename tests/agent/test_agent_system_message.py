"""The leading system message of ``Agent.state.messages`` (pi-agent-core 1.6): built from the
system prompt and tools, replayed into ``state.system_prompt``, kept by ``reset()``,
and patched (a reported system message) before the next request when the tools change."""

from __future__ import annotations

from typing import Any

from pi_notebook.agent import Agent
from pi_notebook.ai import (
    Context,
    FauxProvider,
    Model,
    StreamOptions,
    SystemMessage,
    faux_assistant_message,
)
from pi_notebook.ai.system_message import collapse_system_messages
from tests.agent.test_agent_loop import make_tool


def test_a_prompt_or_tools_start_the_transcript_with_a_system_message(faux: FauxProvider) -> None:
    echo = make_tool("echo", lambda p, s, u: "ok")
    agent = Agent(system_prompt="Be brief.", model=faux.get_model(), tools=[echo])
    first = agent.state.messages[0]
    assert isinstance(first, SystemMessage) and first.text == "Be brief."
    assert [t.name for t in first.tools_added or ()] == ["echo"]
    assert type(first.tools_added[0]).__name__ == "Tool"  # a declaration, no implementation
    assert agent.state.system_prompt == "Be brief."
    assert Agent(model=faux.get_model()).state.messages == []  # neither: none
    agent.state.system_prompt = "Be thorough."
    assert agent.state.system_prompt == "Be thorough." and len(agent.state.messages) == 1
    given = Agent(system_prompt="ignored", messages=[SystemMessage(content="mine", timestamp=1)])
    assert [m.text for m in given.state.messages] == ["mine"]  # an own leading one is kept


async def test_tools_assigned_later_are_declared_by_a_reported_patch_before_the_next_request(
    faux: FauxProvider,
) -> None:
    seen: list[tuple[list[str], list[str]]] = []

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        declared = collapse_system_messages(context).tools or ()  # what the provider is sent
        seen.append(([m.role for m in context.messages], [t.name for t in declared]))
        return faux.stream(model, context, options)

    agent = Agent(system_prompt="Be brief.", model=faux.get_model(), stream_fn=stream)
    reported: list[str] = []

    def report(event: Any) -> None:
        message = getattr(event, "message", None)
        reported.append(event.type if message is None else f"{event.type}({message.role})")

    agent.subscribe(report)
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    await agent.prompt("first")
    agent.state.tools = [make_tool("echo", lambda p, s, u: "ok")]
    reported.clear()
    await agent.prompt("second")
    roles = [m.role for m in agent.state.messages]
    assert roles == ["system", "user", "assistant", "system", "user", "assistant"]
    patch = agent.state.messages[3]
    assert isinstance(patch, SystemMessage) and [t.name for t in patch.tools_added or ()] == [
        "echo"
    ]
    # pi 1.6: the patch is a message of the run, reported before the prompt
    assert reported[:6] == [
        "agent_start",
        "turn_start",
        "message_start(system)",
        "message_end(system)",
        "message_start(user)",
        "message_end(user)",
    ]
    assert seen == [
        (["system", "user"], []),
        (["system", "user", "assistant", "system", "user"], ["echo"]),
    ]
    agent.reset()
    baseline = agent.state.messages
    assert len(baseline) == 1 and isinstance(baseline[0], SystemMessage)
    assert baseline[0].text == "Be brief." and [t.name for t in baseline[0].tools_added or ()] == [
        "echo"
    ]
