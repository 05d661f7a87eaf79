"""Every scenario pi 0.73.1 was recorded in (golden/agent-events*.jsonl), replayed through our
``Agent`` and compared event by event in the golden compact notation, together with the final
transcript, the tool-result texts, what each model call saw, and ``state.error_message``.

The model side is replayed from the recording: each model call streams exactly the deltas pi's
scripted model streamed (so ``message_update xN`` counts carry over). The two ``faux-*``
scenarios use our faux provider instead. Where pi 0.73.1 behaves badly (a throwing stream
function), we follow pi 0.79 and assert the difference in a test of its own.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pi_notebook.agent.agent import Agent
from pi_notebook.agent.events import AgentEvent
from pi_notebook.agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from pi_notebook.agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    StreamFn,
)
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ImageContent,
    MessageBuilder,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    produce_stream,
    register_faux_provider,
)
from tests.paths import GOLDEN, read_jsonl

COMPACT = {row["scenario"]: row for row in read_jsonl(GOLDEN / "agent-events.compact.jsonl")}
FULL = read_jsonl(GOLDEN / "agent-events.jsonl")
SCRIPTED_MODEL = Model(id="scripted", name="Scripted", api="scripted", provider="scripted")


# --- the recorded model side ---------------------------------------------------------------------


@dataclass
class RecordedReply:
    """One model call as pi's scripted model streamed it."""

    deltas: list[tuple[str, int, str]]  # (event type, content index, delta text)
    stop_reason: str
    error_message: str | None
    blocks: list[str]  # rendered content blocks of the final message

    def tool_block(self, index: int) -> tuple[str, str]:
        match = re.fullmatch(r"\[toolCall:([^:]+):([^\]]+)\]", self.blocks[index])
        assert match, f"content block {index} is not a tool call: {self.blocks[index]}"
        return match.group(1), match.group(2)

    async def play(self, out: MessageBuilder) -> None:
        """Stream the reply; one that pi aborted streams its deltas, then waits for the abort."""
        if not self.deltas and self.stop_reason == "error":
            out.fail(self.error_message or "error")  # failed before anything arrived
            return
        out.start()
        indices: dict[int, int] = {}
        for kind, index, delta in self.deltas:
            await asyncio.sleep(0)  # a chunk boundary: listeners run before the next delta
            if kind == "text_start":
                indices[index] = out.text_start()
            elif kind == "thinking_start":
                indices[index] = out.thinking_start()
            elif kind == "toolcall_start":
                name, call_id = self.tool_block(index)
                indices[index] = out.toolcall_start(call_id, name)
            elif kind == "text_delta":
                out.text_delta(indices[index], delta)
            elif kind == "thinking_delta":
                out.thinking_delta(indices[index], delta)
            elif kind == "toolcall_delta":
                out.toolcall_delta(indices[index], delta)
            elif kind == "text_end":
                out.text_end(indices[index])
            elif kind == "thinking_end":
                out.thinking_end(indices[index])
            elif kind == "toolcall_end":
                out.toolcall_end(indices[index])
        if self.stop_reason == "aborted":
            await asyncio.Event().wait()  # the model keeps going until the abort cancels it
        elif self.stop_reason == "error":
            out.fail(self.error_message or "error")
        else:
            out.done(self.stop_reason)  # type: ignore[arg-type]


def recorded(
    scenario: str, rows: list[dict[str, Any]] | None = None
) -> tuple[list[RecordedReply], list[list[str]]]:
    """The replies of ``scenario``'s model calls, and the roles each call was shown, from
    ``rows`` (a recording in this file's format; pi 0.73's by default)."""
    replies: list[RecordedReply] = []
    roles: list[list[str]] = []
    current: list[tuple[str, int, str]] | None = None
    for row in FULL if rows is None else rows:
        if row["scenario"] != scenario:
            continue
        if row["kind"] == "llm_call":
            roles.append(row["roles"])
            current = []
        elif row["kind"] == "event" and current is not None:
            if row["type"] == "message_update":
                current.append(
                    (row["assistantMessageEvent"], row["contentIndex"], row.get("delta", ""))
                )
            elif row["type"] == "message_end" and row["message"]["role"] == "assistant":
                message = row["message"]
                replies.append(
                    RecordedReply(
                        current,
                        message["stopReason"],
                        message.get("errorMessage"),
                        message["content"].split("|") if message["content"] else [],
                    )
                )
                current = None
    return replies, roles


def final_record(scenario: str) -> dict[str, Any]:
    return next(r for r in FULL if r["scenario"] == scenario and r["kind"] == "final")


# --- rendering our run in the golden notation ----------------------------------------------------


RECORDED_CONTENT_CHARS = 80
"""The recorder kept this much of each message's flattened content."""


def render_message(message: AgentMessage) -> dict[str, Any]:
    """A message as the recorder printed it (content flattened to text, cut to 80 characters)."""
    if isinstance(message, AssistantMessage):
        parts: list[str] = []
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append(block.text)
            elif isinstance(block, ThinkingContent):
                parts.append(f"[thinking:{block.thinking}]")
            elif isinstance(block, ToolCall):
                parts.append(f"[toolCall:{block.name}:{block.id}]")
        out: dict[str, Any] = {"role": "assistant", "stopReason": message.stop_reason}
        if message.error_message:
            out["errorMessage"] = message.error_message
        out["content"] = "|".join(parts)[:RECORDED_CONTENT_CHARS]
        return out
    if isinstance(message, ToolResultMessage):
        return {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "isError": message.is_error,
            "content": text_of(message.content)[:RECORDED_CONTENT_CHARS],
        }
    assert isinstance(message, UserMessage)
    return {"role": "user", "content": text_of(message.content)[:RECORDED_CONTENT_CHARS]}


def text_of(content: str | list[TextContent | ImageContent]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


def role_label(message: AgentMessage) -> str:
    if isinstance(message, AssistantMessage):
        return f"assistant:{message.stop_reason}"
    return message.role


def token(event: AgentEvent) -> str:
    if event.type in ("message_start", "message_end"):
        message = event.message
        if isinstance(message, AssistantMessage):
            label = role_label(message) if event.type == "message_end" else "assistant"
        elif isinstance(message, ToolResultMessage):
            label = f"toolResult:{message.tool_call_id}"
        else:
            label = message.role
        return f"{event.type}({label})"
    if event.type in ("tool_execution_start", "tool_execution_update"):
        return f"{event.type}({event.tool_call_id})"
    if event.type == "tool_execution_end":
        return f"tool_execution_end({event.tool_call_id}{':error' if event.is_error else ''})"
    return event.type


def compact(items: list[AgentEvent | str]) -> str:
    """Our events and markers in the golden notation (runs of updates collapsed)."""
    out: list[str] = []
    updates = 0
    for item in items:
        if not isinstance(item, str) and item.type == "message_update":
            updates += 1
            continue
        if updates:
            out.append(f"message_update x{updates}")
            updates = 0
        out.append(item if isinstance(item, str) else token(item))
    if updates:
        out.append(f"message_update x{updates}")
    return " > ".join(out)


@dataclass
class Recorder:
    """Collects events and markers, and replays the recorded model for ``scenario``."""

    scenario: str
    items: list[AgentEvent | str] = field(default_factory=list)
    seen_roles: list[list[str]] = field(default_factory=list)

    def listener(self, event: AgentEvent) -> None:
        self.items.append(event)

    def note(self, text: str) -> None:
        self.items.append(f"<note:{text}>")

    def stream_fn(self) -> StreamFn:
        replies = deque(recorded(self.scenario)[0])

        def stream(
            model: Model, context: Context, options: StreamOptions
        ) -> AssistantMessageEventStream:
            self.items.append("<LLM>")
            self.seen_roles.append([m.role for m in context.messages])
            reply = replies.popleft()
            return produce_stream(model, options, reply.play)

        return stream

    def agent(self, **options: Any) -> Agent:
        options.setdefault("model", SCRIPTED_MODEL)
        options.setdefault("stream_fn", self.stream_fn())
        agent = Agent(**options)
        agent.subscribe(self.listener)
        return agent


# --- tools of the recorded scenarios -------------------------------------------------------------


def text_result(text: str, terminate: bool = False) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], terminate=terminate)


async def _echo(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdateCallback
) -> AgentToolResult:
    return text_result(f"echo:{params['text']}")


async def _count(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdateCallback
) -> AgentToolResult:
    n = params["n"]
    kind = "number" if isinstance(n, int | float) and not isinstance(n, bool) else "string"
    return text_result(f"counted to {n} ({kind})")


async def _sleep(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdateCallback
) -> AgentToolResult:
    ms = params["ms"]
    on_update(text_result(f"sleeping {ms}"))
    if signal is None:
        await asyncio.sleep(ms / 1000)
    else:
        try:
            await asyncio.wait_for(signal.wait(), ms / 1000)
        except TimeoutError:
            pass
        else:
            raise RuntimeError("sleep aborted")
    return text_result(f"slept {ms}", terminate=bool(params.get("terminate")))


async def _boom(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdateCallback
) -> AgentToolResult:
    raise RuntimeError("boom: tool failed")


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


ECHO = AgentTool(
    name="echo",
    description="Echo the text back.",
    parameters=_schema({"text": {"type": "string"}}, ["text"]),
    execute=_echo,
)
COUNT = AgentTool(
    name="count",
    description="Count to n.",
    parameters=_schema({"n": {"type": "integer", "minimum": 1}}, ["n"]),
    execute=_count,
)
SLEEP = AgentTool(
    name="sleep",
    description="Sleep for ms milliseconds.",
    parameters=_schema({"ms": {"type": "integer"}, "terminate": {"type": "boolean"}}, ["ms"]),
    execute=_sleep,
)
BOOM = AgentTool(
    name="boom", description="Always fails.", parameters=_schema({}, []), execute=_boom
)


# --- the scenarios -------------------------------------------------------------------------------

Scenario = Callable[[Recorder], Awaitable[Agent]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = fn
        return fn

    return register


PROMPTS = {
    "text": "hi",
    "tool-then-text": "please echo hi",
    "two-tools-parallel": "sleep twice",
    "two-tools-sequential": "sleep twice",
    "tool-throws": "explode",
    "invalid-args": "bad args",
    "coerced-args": "coerce",
    "coerced-null": "null text",
    "invalid-args-range": "count to zero",
    "coerced-integer": "count to seven",
    "unknown-tool": "call a missing tool",
    "before-tool-call-block": "block echo",
    "after-tool-call-override": "override",
    "terminate-all": "terminate",
    "terminate-partial": "terminate one",
    "provider-error": "hi",
    "provider-error-before-start": "hi",
}


@scenario(
    "text",
    "tool-then-text",
    "tool-throws",
    "invalid-args",
    "coerced-args",
    "coerced-null",
    "invalid-args-range",
    "coerced-integer",
    "unknown-tool",
    "terminate-all",
    "terminate-partial",
    "provider-error",
    "provider-error-before-start",
)
async def plain_prompt(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO, COUNT, SLEEP, BOOM])
    await agent.prompt(PROMPTS[rec.scenario])
    return agent


@scenario("two-tools-parallel", "two-tools-sequential")
async def two_sleeps(rec: Recorder) -> Agent:
    mode = "sequential" if rec.scenario.endswith("sequential") else "parallel"
    agent = rec.agent(tools=[SLEEP], tool_execution=mode)
    await agent.prompt(PROMPTS[rec.scenario])
    return agent


@scenario("before-tool-call-block")
async def blocked(rec: Recorder) -> Agent:
    def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> BeforeToolCallResult:
        if ctx.tool_call.name == "echo":
            return BeforeToolCallResult(block=True, reason="echo is not allowed here")
        return BeforeToolCallResult()

    agent = rec.agent(tools=[ECHO, SLEEP], before_tool_call=before)
    await agent.prompt(PROMPTS[rec.scenario])
    return agent


@scenario("after-tool-call-override")
async def overridden(rec: Recorder) -> Agent:
    async def after(ctx: AfterToolCallContext, signal: AbortSignal | None) -> AfterToolCallResult:
        text = "".join(b.text for b in ctx.result.content if isinstance(b, TextContent))
        return AfterToolCallResult(
            content=[TextContent(text=f"redacted({len(text)} chars)")], is_error=True
        )

    agent = rec.agent(tools=[ECHO], after_tool_call=after)
    await agent.prompt(PROMPTS[rec.scenario])
    return agent


@scenario("steer-one-at-a-time", "steer-all")
async def steered_during_tools(rec: Recorder) -> Agent:
    agent = rec.agent(
        tools=[SLEEP], steering_mode="all" if rec.scenario == "steer-all" else "one-at-a-time"
    )

    def steer_once(event: AgentEvent) -> None:
        if event.type == "tool_execution_update" and event.tool_call_id == "call_1":
            agent.steer("steer A")
            agent.steer("steer B")

    agent.subscribe(steer_once)
    await agent.prompt("work")
    return agent


@scenario("steer-during-text")
async def steered_during_text(rec: Recorder) -> Agent:
    agent = rec.agent()
    unsubscribe: Callable[[], None]

    def steer_once(event: AgentEvent) -> None:
        if event.type == "message_update":
            agent.steer("actually, do X")
            unsubscribe()

    unsubscribe = agent.subscribe(steer_once)
    await agent.prompt("question")
    return agent


@scenario("follow-up")
async def followed_up(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[ECHO])

    def follow_up_once(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            agent.follow_up("and then this")

    agent.subscribe(follow_up_once)
    await agent.prompt("start")
    return agent


@scenario("abort-streaming")
async def aborted_while_streaming(rec: Recorder) -> Agent:
    agent = rec.agent()
    deltas = 0

    def abort_after_three(event: AgentEvent) -> None:
        nonlocal deltas
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            deltas += 1
            if deltas == 3:
                agent.abort()

    agent.subscribe(abort_after_three)
    await agent.prompt("talk")
    return agent


def abort_on_first_tool_update(agent: Agent) -> None:
    """Abort ``agent`` when a tool first reports progress (the sleep tool does at once)."""

    def abort_while_sleeping(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            agent.abort()

    agent.subscribe(abort_while_sleeping)


@scenario("abort-during-tool")
async def aborted_during_tool(rec: Recorder) -> Agent:
    agent = rec.agent(tools=[SLEEP])
    abort_on_first_tool_update(agent)
    await agent.prompt("sleep")
    return agent


@scenario("continue")
async def continued(rec: Recorder) -> Agent:
    agent = rec.agent(messages=[UserMessage(content="pending question")])
    await agent.continue_run()
    return agent


@scenario("prompt-while-busy")
async def prompted_while_busy(rec: Recorder) -> Agent:
    agent = Agent(model=SCRIPTED_MODEL, stream_fn=rec.stream_fn())

    async def listener(event: AgentEvent) -> None:
        rec.listener(event)
        if event.type == "agent_start":
            try:
                await agent.prompt("two")
            except RuntimeError as exc:
                rec.note(str(exc))

    agent.subscribe(listener)
    await agent.prompt("one")
    return agent


@scenario("faux-provider")
async def faux_echo(rec: Recorder) -> Agent:
    faux = register_faux_provider(token_size=(2, 2))
    try:
        faux.set_responses(
            [
                faux_assistant_message([faux_tool_call("echo", {"text": "hi"}, id="call_1")]),
                faux_assistant_message("Echo said hi."),
            ]
        )
        agent = Agent(model=faux.get_model(), tools=[ECHO])
        agent.subscribe(rec.listener)
        await agent.prompt("please echo hi")
    finally:
        faux.unregister()
    return agent


@scenario("faux-abort")
async def faux_aborted(rec: Recorder) -> Agent:
    faux = register_faux_provider(token_size=(1, 1))
    try:
        faux.set_responses([faux_assistant_message("this is a long faux reply that goes on")])
        agent = Agent(model=faux.get_model())
        agent.subscribe(rec.listener)
        deltas = 0

        def abort_after_five(event: AgentEvent) -> None:
            nonlocal deltas
            if event.type == "message_update" and event.assistant_message_event.type == (
                "text_delta"
            ):
                deltas += 1
                if deltas == 5:
                    agent.abort()

        agent.subscribe(abort_after_five)
        await agent.prompt("talk")
    finally:
        faux.unregister()
    return agent


@scenario("streamfn-throws")
async def stream_fn_throws(rec: Recorder) -> Agent:
    def exploding(model: Model, context: Context, options: StreamOptions) -> Any:
        raise RuntimeError("stream function exploded")

    agent = rec.agent(stream_fn=exploding)
    await agent.prompt("hi")
    return agent


# --- the tests -----------------------------------------------------------------------------------

PI_073_ONLY = {"streamfn-throws"}
"""Scenarios where we deliberately follow pi 0.79 instead (asserted separately below)."""
PI_16_WORDING = {"invalid-args", "invalid-args-range"}
"""Scenarios whose tool-result text is a validation message: worded by pi-schema as in pi 1.6
(``test_agent_golden_16.py`` compares them with 1.6's texts), not as TypeBox did in 0.73."""


def _transcript(agent: Agent) -> list[AgentMessage]:
    """The transcript without its leading system message: pi 0.73 kept the system prompt and
    tools beside the transcript; we follow pi 1.6, which keeps them in it
    (``test_agent_golden_16.py`` compares that)."""
    return [m for m in agent.state.messages if m.role != "system"]


def _without_validation_texts(name: str, items: list[Any]) -> list[Any]:
    if name not in PI_16_WORDING:
        return items
    return [
        {**item, "content": None, "text": None}
        if item.get("role") == "toolResult" or "text" in item
        else item
        for item in items
    ]


def test_every_recorded_scenario_is_replayed() -> None:
    assert set(COMPACT) == set(SCENARIOS)


@pytest.mark.parametrize("name", [n for n in COMPACT if n not in PI_073_ONLY])
async def test_scenario_matches_pi(name: str) -> None:
    golden = COMPACT[name]
    rec = Recorder(name)
    agent = await asyncio.wait_for(SCENARIOS[name](rec), 10)

    assert compact(rec.items) == golden["sequence"]
    assert [role_label(m) for m in _transcript(agent)] == golden["finalRoles"]
    assert agent.state.error_message == golden.get("errorMessage")
    final = final_record(name)
    rendered = [render_message(m) for m in _transcript(agent)]
    assert _without_validation_texts(name, rendered) == _without_validation_texts(
        name, final["messages"]
    )
    assert not agent.state.is_streaming and final["isStreaming"] is False
    tool_texts = [
        {"toolCallId": m.tool_call_id, "isError": m.is_error, "text": text_of(m.content)}
        for m in _transcript(agent)
        if isinstance(m, ToolResultMessage)
    ]
    assert _without_validation_texts(name, tool_texts) == _without_validation_texts(
        name, final["toolResultTexts"]
    )
    if not name.startswith("faux-"):
        seen = [[r for r in roles if r != "system"] for roles in rec.seen_roles]
        assert seen == recorded(name)[1]


async def test_stream_fn_throwing_follows_pi_079_not_073() -> None:
    """pi 0.73.1 reports a throwing stream function with a bare ``agent_end``; pi 0.79 and 1.6
    (and we) report the failure reply as message_start, message_end and turn_end before
    ``agent_end`` (pi 1.6's recording is replayed in test_agent_golden_16.py)."""
    golden = COMPACT["streamfn-throws"]
    rec = Recorder("streamfn-throws")
    agent = await stream_fn_throws(rec)

    pi_073 = golden["sequence"].split(" > ")
    assert pi_073[-2:] == ["message_end(user)", "agent_end"]
    ours = compact(rec.items).split(" > ")
    assert ours == [
        *pi_073[:-1],
        "message_start(assistant)",
        "message_end(assistant:error)",
        "turn_end",
        "agent_end",
    ]
    assert [role_label(m) for m in _transcript(agent)] == golden["finalRoles"]
    assert agent.state.error_message == golden["errorMessage"]
    assert [render_message(m) for m in _transcript(agent)] == final_record("streamfn-throws")[
        "messages"
    ]
    agent_end = rec.items[-1]
    assert not isinstance(agent_end, str) and agent_end.type == "agent_end"
    assert [role_label(m) for m in agent_end.messages] == ["assistant:error"]
