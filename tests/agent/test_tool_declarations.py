"""Tool-list changes declared before each request (pi 1.6's ``declareToolChanges``): the edge
cases of ``declare_tool_changes`` and how the loop and the ``Agent`` use it. The recorded pi 1.6
behaviour is replayed in ``test_agent_golden_16.py`` (the ``tools-*`` scenarios)."""

from __future__ import annotations

from typing import Any

from pi_notebook.agent import Agent
from pi_notebook.agent.events import AgentEvent
from pi_notebook.agent.loop import run_agent_loop
from pi_notebook.agent.tool_declarations import declare_tool_changes, tool_declaration
from pi_notebook.agent.types import AgentContext, AgentLoopConfig, AgentMessage
from pi_notebook.ai import (
    Context,
    FauxProvider,
    Message,
    Model,
    StreamOptions,
    SystemMessage,
    Tool,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.ai.system_message import collapse_system_messages
from tests.agent.test_agent_loop import make_tool

ECHO = make_tool("echo", lambda p, s, u: "ok")
COUNT = make_tool("count", lambda p, s, u: "ok")


def declared(*tools: Tool) -> SystemMessage:
    return SystemMessage(content="", tools_added=[tool_declaration(t) for t in tools], timestamp=0)


def tool_fields(message: AgentMessage) -> tuple[list[str], list[str]]:
    assert isinstance(message, SystemMessage)
    added = [t.name for t in message.tools_added or ()]
    removed = [t.name for t in message.tools_removed or ()]
    return added, removed


def test_nothing_changes_when_the_declarations_match() -> None:
    prompt = UserMessage(content="hi")
    context = AgentContext("", [declared(ECHO)], [ECHO])
    out = declare_tool_changes(context, [prompt])
    assert out == [prompt] and out[0] is prompt
    assert declare_tool_changes(AgentContext(), [prompt])[0] is prompt  # no tools, none declared
    assert declare_tool_changes(context, []) == []


def test_a_change_becomes_a_system_message_before_the_first_other_message() -> None:
    context = AgentContext("", [declared(ECHO)], [ECHO, COUNT])
    first, second = UserMessage(content="a"), UserMessage(content="b")
    out = declare_tool_changes(context, [first, second])
    assert [m.role for m in out] == ["system", "user", "user"] and out[1] is first
    assert tool_fields(out[0]) == (["count"], [])
    assert tool_fields(declare_tool_changes(context, [])[0]) == (["count"], [])  # continue


def test_a_redefined_tool_is_removed_and_added_again() -> None:
    loud = ECHO.model_copy(update={"description": "Echo, loudly."})
    context = AgentContext("", [declared(ECHO, COUNT)], [loud])
    (patch,) = declare_tool_changes(context, [])
    assert tool_fields(patch) == (["echo"], ["echo", "count"])
    assert type(patch.tools_added[0]) is Tool  # type: ignore[union-attr]  # a declaration only


def test_a_pending_system_message_carries_the_changes() -> None:
    context = AgentContext("", [declared(ECHO)], [ECHO, COUNT])
    given = SystemMessage(content="", sections={"style": "Be brief."}, timestamp=0)
    out = declare_tool_changes(context, [given, UserMessage(content="hi")])
    assert [m.role for m in out] == ["system", "user"]
    assert tool_fields(out[0]) == (["count"], []) and out[0].sections == {"style": "Be brief."}  # type: ignore[union-attr]
    assert given.tools_added is None  # the caller's message is copied, not changed


def test_the_tool_fields_of_a_pending_system_message_are_recomputed() -> None:
    """They state the caller's intent; the delta to what runs replaces them (pi keeps replay
    equal to ``context.tools``)."""
    context = AgentContext("", [declared(ECHO)], [ECHO])
    claims = declared(ECHO, COUNT)  # count is not runnable
    out = declare_tool_changes(context, [claims])
    assert tool_fields(out[0]) == ([], [])  # nothing to declare: both fields dropped
    untouched = SystemMessage(content="Mind the units.", timestamp=0)
    assert declare_tool_changes(context, [untouched])[0] is untouched


def test_the_last_of_several_pending_system_messages_carries_them() -> None:
    context = AgentContext("", [], [ECHO])
    one, two = SystemMessage(content="one"), SystemMessage(content="two")
    out = declare_tool_changes(context, [one, two, UserMessage(content="hi")])
    assert out[0] is one and tool_fields(out[1]) == (["echo"], [])


async def test_the_loop_declares_nothing_unless_asked(faux: FauxProvider) -> None:
    """The harness leaves ``declare_tools`` off: its tools go beside the transcript."""
    seen: list[Context] = []

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        seen.append(context)
        return faux.stream(model, context, options)

    events: list[AgentEvent] = []
    faux.set_responses([faux_assistant_message("one")])
    config = AgentLoopConfig(model=faux.get_model())
    context = AgentContext("be brief", [], [ECHO])
    await run_agent_loop([UserMessage(content="hi")], context, config, events.append, None, stream)
    assert not any(getattr(e, "message", None) and e.message.role == "system" for e in events)  # type: ignore[attr-defined]
    assert [t.name for t in seen[0].tools or ()] == ["echo"]


async def test_tools_stay_declared_when_a_conversion_drops_system_messages(
    faux: FauxProvider,
) -> None:
    """A 0.79-era ``convert_to_llm`` that keeps only user/assistant/tool results: the declared
    tools travel beside the messages, so the model still gets them."""
    seen: list[Context] = []

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        seen.append(context)
        return faux.stream(model, context, options)

    def old_convert(messages: list[AgentMessage]) -> list[Message]:
        return [m for m in messages if m.role in ("user", "assistant", "toolResult")]  # type: ignore[misc]

    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    agent = Agent(
        model=faux.get_model(), tools=[ECHO], stream_fn=stream, convert_to_llm=old_convert
    )
    await agent.prompt("first")
    agent.state.tools = [ECHO, COUNT]
    await agent.prompt("second")
    assert [[t.name for t in c.tools or ()] for c in seen] == [["echo"], ["echo", "count"]]
    # with pi's default conversion the transcript carries them instead
    faux.set_responses([faux_assistant_message("three")])
    agent.convert_to_llm = Agent(model=faux.get_model()).convert_to_llm
    await agent.prompt("third")
    assert seen[-1].tools is None
    assert [t.name for t in collapse_system_messages(seen[-1]).tools or ()] == ["echo", "count"]
