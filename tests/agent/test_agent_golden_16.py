"""Every scenario recorded with pi-agent-core 1.6.0 (golden/pi-1.6/agent/), replayed through our
``Agent``: the 28 scenarios first recorded with pi 0.73.1, re-run on 1.6, and the scenarios of the
1.6 loop hooks. Compared per scenario: the compact event sequence (with the hook calls and notes
in place), the final transcript as pi renders it (including the thinking level each reply was
requested with and whether each tool result is timed), the tool-result texts, each model call's
roles and reasoning level, the payload of every tool event and of every message_end, turn_end and
agent_end, and ``state.error_message``.

As in pi 1.6, the system prompt and tools are a leading ``system`` message of the transcript (no
event reports it): it is in the final roles and in what each model call sees. Tool validation
texts are pi-schema's, as in 1.6 ("missing", "expected >= 1").
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pi_notebook.agent.agent import Agent
from pi_notebook.agent.events import AgentEvent
from pi_notebook.agent.tools import AgentTool
from pi_notebook.agent.types import (
    AgentContext,
    AgentMessage,
    BeforeToolCallContext,
    RequestContext,
    RequestUpdate,
    StreamFn,
    TurnEndContext,
    TurnUpdate,
)
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    SystemMessage,
    Tool,
    ToolResultMessage,
    UserMessage,
    produce_stream,
)
from pi_notebook.ai.system_message import collapse_system_messages
from tests.agent import test_agent_golden as old
from tests.agent.test_agent_golden import (
    COUNT,
    ECHO,
    SLEEP,
    RecordedReply,
    compact,
    render_message,
    role_label,
    text_of,
)
from tests.paths import GOLDEN, read_jsonl

HERE = GOLDEN / "pi-1.6" / "agent"
COMPACT = {row["scenario"]: row for row in read_jsonl(HERE / "agent-events.compact.jsonl")}
FULL = read_jsonl(HERE / "agent-events.jsonl")


def rows_of(scenario: str, kind: str) -> list[dict[str, Any]]:
    return [r for r in FULL if r["scenario"] == scenario and r["kind"] == kind]


def recorded(scenario: str) -> list[RecordedReply]:
    """The replies pi 1.6 was given (the same deltas its scripted model streamed)."""
    return old.recorded(scenario, FULL)[0]


# --- rendering as the 1.6 recorder did -----------------------------------------------------------


def render(message: AgentMessage) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        out: dict[str, Any] = {"role": "system", "content": message.text}
        if message.sections:
            out["sections"] = message.sections
        if message.tools_added:
            out["toolsAdded"] = [tool.name for tool in message.tools_added]
        if message.tools_removed:
            out["toolsRemoved"] = [tool.name for tool in message.tools_removed]
        return out
    out = render_message(message)
    if isinstance(message, AssistantMessage) and message.thinking_level is not None:
        out["thinkingLevel"] = message.thinking_level
    if isinstance(message, ToolResultMessage):
        out["timed"] = message.duration_ms is not None
    return out


def tool_event_row(event: AgentEvent) -> dict[str, Any] | None:
    """A tool event as the recorder printed it (``None`` for other events)."""
    if event.type == "tool_execution_start":
        return {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "args": event.args,
        }
    if event.type == "tool_execution_update":
        return {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "partial": text_of(event.partial_result.content),
        }
    if event.type == "tool_execution_end":
        row: dict[str, Any] = {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "isError": event.is_error,
            "result": text_of(event.result.content),
            "timed": event.duration_ms is not None,
        }
        if event.result.terminate:
            row["terminate"] = True
        return row
    return None


def end_event_row(event: AgentEvent) -> dict[str, Any] | None:
    """``message_end``, ``turn_end`` and ``agent_end`` as the recorder printed them."""
    if event.type == "message_end":
        return {"type": event.type, "message": render(event.message)}
    if event.type == "turn_end":
        return {
            "type": event.type,
            "message": render(event.message),
            "toolResults": [r.tool_call_id for r in event.tool_results],
        }
    if event.type == "agent_end":
        return {
            "type": event.type,
            "messages": [
                f"assistant({m.stop_reason})" if isinstance(m, AssistantMessage) else m.role
                for m in event.messages
            ],
        }
    return None


@dataclass
class Recorder(old.Recorder):
    """The 0.73 recorder over the 1.6 recording, also noting each call's reasoning level and
    the hook calls, in place, as ``<hook:name:detail>``."""

    calls: list[tuple[list[str], str | None]] = field(default_factory=list)
    tools_sent: list[list[str]] = field(default_factory=list)

    def hook(self, name: str, detail: str) -> None:
        self.items.append(f"<hook:{name}:{detail}>")

    def stream_fn(self) -> StreamFn:
        replies = deque(recorded(self.scenario))

        def stream(
            model: Model, context: Context, options: StreamOptions
        ) -> AssistantMessageEventStream:
            self.items.append("<LLM>")
            self.seen_roles.append([m.role for m in context.messages])
            self.calls.append(([m.role for m in context.messages], options.reasoning))
            # the tools the provider is sent: the declarations the request replays to
            sent = collapse_system_messages(context).tools or ()
            self.tools_sent.append([tool.name for tool in sent])
            return produce_stream(model, options, replies.popleft().play)

        return stream


# --- the scenarios of the 1.6 hooks --------------------------------------------------------------

Scenario = Callable[[Recorder], Awaitable[Agent]]
NEW: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        NEW[name] = fn
        return fn

    return register


@scenario("prepare-request")
async def prepare_request(rec: Recorder) -> Agent:
    requests = 0

    def prepare(request: RequestContext, signal: AbortSignal | None) -> RequestUpdate | None:
        nonlocal requests
        requests += 1
        # the generator counts what is not a system message
        counted = sum(1 for m in request.context.messages if not isinstance(m, SystemMessage))
        rec.hook("prepare_request", f"{request.thinking_level}:{counted}")
        return RequestUpdate(thinking_level="high") if requests == 2 else None

    agent = rec.agent(tools=[ECHO], thinking_level="low", prepare_request=prepare)
    await agent.prompt("please echo hi")
    return agent


@scenario("finish-turn-end")
async def finish_turn_end(rec: Recorder) -> Agent:
    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str]:
        rec.hook("finish_turn", f"{turn.message.stop_reason}:{len(turn.tool_results)}")
        return {"action": "end"}

    agent = rec.agent(tools=[ECHO], finish_turn=finish)
    await agent.prompt("please echo hi")
    return agent


@scenario("finish-turn-continue")
async def finish_turn_continue(rec: Recorder) -> Agent:
    turns = 0

    async def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str] | None:
        nonlocal turns
        turns += 1
        rec.hook("finish_turn", f"{turn.message.stop_reason}:{turns}")
        return {"action": "continue"} if turns == 1 else None

    agent = rec.agent(finish_turn=finish)
    await agent.prompt("go on")
    return agent


@scenario("finish-turn-continue-with-tools")
async def finish_turn_continue_with_tools(rec: Recorder) -> Agent:
    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str] | None:
        rec.hook("finish_turn", turn.message.stop_reason)
        return {"action": "continue"} if turn.tool_results else None

    agent = rec.agent(tools=[ECHO], finish_turn=finish)
    await agent.prompt("please echo hi")
    return agent


@scenario("finish-turn-on-error")
async def finish_turn_on_error(rec: Recorder) -> Agent:
    def finish(turn: TurnEndContext, signal: AbortSignal | None) -> dict[str, str]:
        rec.hook("finish_turn", turn.message.stop_reason)
        return {"action": "continue"}  # ignored: a failed turn ends the run

    agent = rec.agent(finish_turn=finish)
    await agent.prompt("hi")
    return agent


@scenario("prepare-next-turn")
async def prepare_next_turn(rec: Recorder) -> Agent:
    def prepare(turn: TurnEndContext) -> TurnUpdate:
        rec.hook("prepare_next_turn", f"{turn.message.stop_reason}:{len(turn.tool_results)}")
        return TurnUpdate(messages=[UserMessage(content="note from prepare")])

    agent = rec.agent(tools=[ECHO], prepare_next_turn=prepare)
    await agent.prompt("please echo hi")
    return agent


@scenario("length-with-tool-calls")
async def length_with_tool_calls(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO])
    await agent.prompt("echo twice")
    return agent


@scenario("abort-before-later-calls-sequential")
async def abort_before_later_calls(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[SLEEP, ECHO], tool_execution="sequential")
    old.abort_on_first_tool_update(agent)
    await agent.prompt("sleep then echo")
    return agent


@scenario("abort-in-before-tool-call")
async def abort_in_before_tool_call(rec: Recorder) -> Agent:
    def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> None:
        rec.hook("before_tool_call", ctx.tool_call.id)
        agent.abort()

    agent = rec.agent(tools=[ECHO], before_tool_call=before)
    await agent.prompt("echo three")
    return agent


@scenario("peek-queued-messages")
async def peek_queued_messages(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO])

    def peek() -> str:
        return ",".join(text_of(m.content) for m in agent.peek_queued_messages())  # type: ignore[union-attr]

    def on_event(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            rec.note(f"peek:{peek()}")
            agent.follow_up(UserMessage(content="later"))
            rec.note(f"peek:{peek()}")
            agent.steer(UserMessage(content="now"))
            agent.steer(UserMessage(content="then"))
            rec.note(f"peek:{peek()}")
            agent.steering_mode = "all"
            rec.note(f"peek:{peek()}")
            rec.note(f"queued:{str(agent.has_queued_messages()).lower()}")

    agent.subscribe(on_event)
    await agent.prompt("start")
    return agent


@scenario("thinking-level-and-duration")
async def thinking_level_and_duration(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[SLEEP], thinking_level="max")
    await agent.prompt("rest")
    return agent


# --- tool changes declared before each request -------------------------------------------------

LOUD_ECHO = ECHO.model_copy(update={"description": "Echo the text back, loudly."})


def names(tools: Sequence[Tool]) -> str:
    return ",".join(tool.name for tool in tools) or "-"


def with_tools(context: AgentContext, tools: list[AgentTool]) -> AgentContext:
    """``context`` with another tool list (the same transcript), as pi's ``{...ctx, tools}``."""
    return AgentContext(context.system_prompt, context.messages, tools)


@scenario("tools-added-by-prepare-next-turn")
async def tools_added_by_prepare_next_turn(rec: Recorder) -> Agent:
    def prepare(turn: TurnEndContext) -> TurnUpdate | None:
        rec.hook("prepare_next_turn", names(turn.context.tools))
        if len(turn.context.tools) == 1:
            return TurnUpdate(context=with_tools(turn.context, [ECHO, COUNT]))
        return None

    agent = rec.agent(tools=[ECHO], prepare_next_turn=prepare)
    await agent.prompt("echo, then count")
    return agent


@scenario("tools-added-by-prepare-request")
async def tools_added_by_prepare_request(rec: Recorder) -> Agent:
    requests = 0

    def prepare(request: RequestContext, signal: AbortSignal | None) -> RequestUpdate | None:
        nonlocal requests
        requests += 1
        rec.hook("prepare_request", names(request.context.tools))
        if requests == 1:  # declared only before the next request
            return RequestUpdate(context=with_tools(request.context, [ECHO, COUNT]))
        return None

    agent = rec.agent(tools=[ECHO], prepare_request=prepare)
    await agent.prompt("count to three")
    return agent


@scenario("tool-removed-by-prepare-next-turn")
async def tool_removed_by_prepare_next_turn(rec: Recorder) -> Agent:
    def prepare(turn: TurnEndContext) -> TurnUpdate:
        rec.hook("prepare_next_turn", names(turn.context.tools))
        kept = [tool for tool in turn.context.tools if tool.name != "echo"]
        return TurnUpdate(context=with_tools(turn.context, kept))

    agent = rec.agent(tools=[ECHO, COUNT], prepare_next_turn=prepare)
    await agent.prompt("echo twice")
    return agent


@scenario("tool-added-in-before-tool-call")
async def tool_added_in_before_tool_call(rec: Recorder) -> Agent:
    def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> None:
        rec.hook("before_tool_call", names(ctx.context.tools))
        if not any(tool.name == "count" for tool in ctx.context.tools):
            ctx.context.tools.append(COUNT)  # the loop's own list, changed in place

    agent = rec.agent(tools=[ECHO], before_tool_call=before)
    await agent.prompt("echo, then count")
    return agent


@scenario("tools-changed-between-runs")
async def tools_changed_between_runs(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO])
    await agent.prompt("first")
    agent.state.tools = [LOUD_ECHO, COUNT]  # echo redefined (removed and added again), count new
    rec.note(f"tools:{names(agent.state.tools)}")
    await agent.prompt("second")
    return agent


@scenario("prompt-with-system-message")
async def prompt_with_system_message(rec: Recorder) -> Agent:
    agent = rec.agent(system_prompt="Be helpful.", tools=[ECHO])
    agent.state.tools = [ECHO, COUNT]
    await agent.prompt(
        [
            SystemMessage(content="", sections={"style": "Be brief."}, timestamp=0),
            UserMessage(content="hi", timestamp=0),
        ]
    )
    given = SystemMessage(content="Mind the units.", timestamp=0)
    await agent.prompt([given, UserMessage(content="again", timestamp=0)])
    last = [m for m in agent.state.messages if isinstance(m, SystemMessage)][-1]
    rec.note(f"same-object:{str(last is given).lower()}")
    return agent


@scenario("continue-with-changed-tools")
async def continue_with_changed_tools(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO], messages=[UserMessage(content="pending question")])
    agent.state.tools = [COUNT]
    await agent.continue_run()
    return agent


def runner(name: str) -> Scenario:
    if name in NEW:
        return NEW[name]
    return old.SCENARIOS[name]  # type: ignore[return-value]  # our Recorder is an old.Recorder


# --- the tests -----------------------------------------------------------------------------------


def test_every_16_scenario_is_replayed() -> None:
    origins = {row["origin"] for row in COMPACT.values()}
    assert origins == {"pi-0.73.1", "pi-1.6"}
    assert {n for n, r in COMPACT.items() if r["origin"] == "pi-0.73.1"} == set(old.COMPACT)
    assert {n for n, r in COMPACT.items() if r["origin"] == "pi-1.6"} == set(NEW)


@pytest.mark.parametrize("name", list(COMPACT))
async def test_scenario_matches_pi_16(name: str) -> None:
    golden = COMPACT[name]
    rec = Recorder(name)
    agent = await asyncio.wait_for(runner(name)(rec), 10)
    messages = agent.state.messages

    assert compact(rec.items) == golden["sequence"]
    assert [role_label(m) for m in messages] == golden["finalRoles"]
    assert agent.state.error_message == golden.get("errorMessage")
    final = rows_of(name, "final")[0]
    rendered = [render(m) for m in messages]
    pi_rendered = final["messages"]
    assert rendered == pi_rendered
    assert not agent.state.is_streaming and final["isStreaming"] is False
    assert agent.has_queued_messages() is final["queued"]

    tool_texts = [
        {"toolCallId": m.tool_call_id, "isError": m.is_error, "text": text_of(m.content)}
        for m in messages
        if isinstance(m, ToolResultMessage)
    ]
    ours_tool_events = [
        row for e in rec.items if not isinstance(e, str) and (row := tool_event_row(e)) is not None
    ]
    pi_tool_events = [
        {k: v for k, v in r.items() if k not in ("kind", "scenario", "i")}
        for r in rows_of(name, "event")
        if r["type"].startswith("tool_execution_")
    ]
    assert tool_texts == final["toolResultTexts"]
    assert ours_tool_events == pi_tool_events

    ours_ends = [
        row for e in rec.items if not isinstance(e, str) and (row := end_event_row(e)) is not None
    ]
    pi_ends = [
        {k: v for k, v in r.items() if k not in ("kind", "scenario", "i")}
        for r in rows_of(name, "event")
        if r["type"] in ("message_end", "turn_end", "agent_end")
    ]
    assert ours_ends == pi_ends

    if not name.startswith("faux-"):
        calls = rows_of(name, "llm_call")
        assert rec.calls == [(call["roles"], call["reasoning"]) for call in calls]
        assert rec.tools_sent == [call["tools"] for call in calls]
