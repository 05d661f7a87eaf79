"""pi-coding-agent 1.6's automatic compaction and thinking levels, replayed through our harness.

``golden/pi-1.6/sessions/harness.mjs`` ran each scenario in a real pi 1.6.0 ``AgentSession``
with a scripted model (``harness/scenarios.json`` holds the scenario and what pi did). Here the
same steps run in ``AgentHarness`` with the same replies (same usage, same stop reasons), over a
session that starts as pi's did (its model and thinking-level entries and its leading system
message), and we compare: the events both sides have (runs, turns, messages, tool results,
compactions with their reasons, retries and error texts), what every model request held, the
entries written (types, roles, stop reasons, the thinking level of each reply, context edits and
their targets, compactions with their first kept entry, ``tokens_before`` and summary) and the
thinking level after every step.

Compaction's summary requests are answered by the scripted model too, by kind (history or turn
prefix), as the generator did; their prompts are not compared (pi 1.6 rewrote its turn-prefix
prompt, a difference outside these scenarios).
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest

from pi_notebook.agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.ai.events import DoneEvent, ErrorEvent, StartEvent
from pi_notebook.harness import (
    AgentHarness,
    CompactionSettings,
    InMemorySessionStorage,
    Session,
)
from pi_notebook.harness.entries import (
    CompactionEntry,
    ContextEditEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
)
from pi_notebook.harness.prompts import TURN_PREFIX_SUMMARIZATION_PROMPT
from tests.paths import GOLDEN

HERE = GOLDEN / "pi-1.6" / "sessions" / "harness"
SCENARIOS: dict[str, Any] = json.loads((HERE / "scenarios.json").read_text())
SUMMARY_HISTORY = "## Goal\nThe conversation so far, summarised."
SUMMARY_PREFIX = "## Original Request\nThe start of the current turn, summarised."
MODEL_IDS = {"think": "faux-think", "plain": "faux-plain"}


def make_model(spec: dict[str, Any], which: str) -> Model:
    window = spec.get("model") or {}
    return Model(
        id=MODEL_IDS[which],
        api="scripted",
        provider="faux",
        reasoning=which == "think",
        context_window=window.get("contextWindow", 128000),
        max_tokens=window.get("maxTokens", 16384),
    )


async def _echo(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdateCallback
) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=f"echo:{params['text']}")])


ECHO = AgentTool(
    name="echo",
    description="Echo the text back.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    execute=_echo,
)


def label(message: Any) -> str:
    if isinstance(message, AssistantMessage):
        return f"assistant:{message.stop_reason}"
    if isinstance(message, ToolResultMessage):
        return f"toolResult:{message.tool_call_id}"
    return str(message.role)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


class Replay:
    """The scripted model of one scenario and the record of what our harness did."""

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name
        self.replies = deque(spec["replies"])
        self.events: list[str] = []
        self.requests: list[dict[str, Any]] = []

    def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        if (context.system_prompt or "").startswith("You are a context summarization assistant"):
            prompt = text_of(context.messages[-1].content)  # type: ignore[union-attr]
            kind = "prefix" if TURN_PREFIX_SUMMARIZATION_PROMPT.strip() in prompt else "history"
            self.events.append(f"<summary:{kind}>")
            text = SUMMARY_HISTORY if kind == "history" else SUMMARY_PREFIX
            spec: dict[str, Any] = {"text": text, "usage": {"input": 40, "output": 10}}
        else:
            self.events.append("<LLM>")
            messages = [m for m in context.messages if not isinstance(m, SystemMessage)]
            self.requests.append(
                {
                    "roles": [label(m) for m in messages],
                    "texts": [text_of(m.content)[:60] for m in messages if m.role == "user"],
                    "reasoning": options.reasoning,
                }
            )
            assert self.replies, f"{self.name}: no scripted reply left"
            spec = self.replies.popleft()
        return self.play(model, spec)

    @staticmethod
    def play(model: Model, spec: dict[str, Any]) -> AssistantMessageEventStream:
        content: list[Any] = []
        if "text" in spec:
            content.append(TextContent(text=spec["text"]))
        for name, call_id, args in spec.get("toolCalls", ()):
            content.append(ToolCall(id=call_id, name=name, arguments=args))
        given = spec.get("usage") or {}
        parts = {
            "input": given.get("input", 0),
            "output": given.get("output", 0),
            "cache_read": given.get("cacheRead", 0),
            "cache_write": given.get("cacheWrite", 0),
        }
        usage = Usage(**parts, total_tokens=given.get("totalTokens", sum(parts.values())))
        stop = spec.get("stopReason") or ("toolUse" if spec.get("toolCalls") else "stop")
        message = AssistantMessage(
            content=content,
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=usage,
            stop_reason=stop,
            error_message=spec.get("errorMessage"),
        )
        start = StartEvent(partial=message.model_copy(update={"content": []}))
        if stop in ("error", "aborted"):
            return AssistantMessageEventStream.of([start, ErrorEvent(reason=stop, error=message)])
        return AssistantMessageEventStream.of([start, DoneEvent(reason=stop, message=message)])

    def listener(self, event: Any) -> None:
        kind = event.type
        if kind in ("agent_start", "agent_end", "turn_start", "turn_end"):
            self.events.append(kind)
        elif kind == "message_end":
            self.events.append(f"message_end({label(event.message)})")
        elif kind == "tool_execution_end":
            self.events.append(f"tool_execution_end({event.tool_call_id})")
        elif kind == "compaction_start":
            self.events.append(f"compaction_start({event.reason})")
        elif kind == "compaction_end":
            parts = [
                event.reason,
                f"willRetry={str(event.will_retry).lower()}",
                "result" if event.result is not None else "no-result",
            ]
            if event.aborted:
                parts.append("aborted")
            if event.error_message:
                parts.append(event.error_message)
            self.events.append(f"compaction_end({','.join(parts)})")


def seed(session: Session, pi: dict[str, Any]) -> None:
    """Start the session as pi's started: its model and thinking-level entries, then its
    leading system message (pi writes it right before the first run's prompt)."""
    for entry in pi["entries"][: pi["createdEntries"]]:
        if entry["type"] == "model_change":
            session.append_model_change("faux", entry["model"])
        elif entry["type"] == "thinking_level_change":
            session.append_thinking_level_change(entry["thinkingLevel"])
        else:
            raise AssertionError(f"unexpected start entry {entry}")
    system = pi["systemMessage"]
    session.append_system_message(
        system["content"],
        sections=system.get("sections"),
        tools_added=[Tool(**tool) for tool in system.get("toolsAdded") or ()],
    )


def normalise(entries: list[SessionEntry]) -> list[dict[str, Any]]:
    """The entries as the generator normalised pi's (positions instead of ids)."""
    index = {entry.id: i for i, entry in enumerate(entries)}
    out: list[dict[str, Any]] = []
    for entry in entries:
        row: dict[str, Any] = {"type": entry.type}
        if isinstance(entry, MessageEntry):
            message = entry.message
            row["role"] = message.role
            if isinstance(message, AssistantMessage):
                row["stopReason"] = message.stop_reason
                row["thinkingLevel"] = message.thinking_level
            if isinstance(message, UserMessage):
                row["text"] = text_of(message.content)[:60]
            if isinstance(message, ToolResultMessage):
                row["toolCallId"] = message.tool_call_id
        elif isinstance(entry, CompactionEntry):
            row["firstKept"] = index.get(entry.first_kept_entry_id)
            row["tokensBefore"] = entry.tokens_before
            row["summary"] = entry.summary
        elif isinstance(entry, ContextEditEntry):
            row["target"] = index.get(entry.target_id)
            row["hidden"] = entry.replacement is None
        elif isinstance(entry, ThinkingLevelChangeEntry):
            row["thinkingLevel"] = entry.thinking_level
        elif isinstance(entry, ModelChangeEntry):
            row["model"] = entry.model_id
        row["parent"] = None if entry.parent_id is None else index.get(entry.parent_id)
        out.append(row)
    return out


async def replay(name: str) -> tuple[Replay, AgentHarness, list[str]]:
    spec = SCENARIOS[name]
    pi = spec["pi"]
    session = Session.create(InMemorySessionStorage())
    seed(session, pi)
    run = Replay(name, spec)
    settings = {"enabled": True, **(spec.get("compaction") or {})}
    harness = AgentHarness(
        session,
        make_model(spec, spec.get("startModel", "think")),
        tools=[ECHO],
        thinking_level=spec.get("thinkingLevel") or spec.get("defaultThinkingLevel") or "medium",
        compaction=CompactionSettings(
            enabled=settings["enabled"],
            reserve_tokens=settings.get("reserveTokens", 16384),
            keep_recent_tokens=settings.get("keepRecentTokens", 20000),
        ),
        stream_fn=run.stream,
    )
    harness.subscribe(run.listener)
    levels = [harness.thinking_level]
    for step in spec["steps"]:
        if "prompt" in step:
            run.events.append(f"<prompt:{step['prompt'].split(' Lorem')[0]}>")
            await harness.prompt(step["prompt"])
        elif "thinking" in step:
            run.events.append(f"<thinking:{step['thinking']}>")
            harness.set_thinking_level(step["thinking"])
        elif "model" in step:
            run.events.append(f"<model:{step['model']}>")
            harness.set_model(make_model(spec, step["model"]))
        elif "recordThinking" in step:
            run.events.append(f"<recorded:{step['recordThinking']}>")
            session.append_thinking_level_change(step["recordThinking"])
        else:
            raise AssertionError(f"unknown step {step}")
        await harness.wait_for_idle()
        levels.append(harness.thinking_level)
    return run, harness, levels


def test_every_scenario_was_recorded_with_pi_16() -> None:
    assert len(SCENARIOS) >= 16
    for name, spec in SCENARIOS.items():
        assert spec["pi"]["repliesLeft"] == 0, f"{name}: pi did not use every scripted reply"


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_scenario_matches_pi_16(name: str) -> None:
    pi = SCENARIOS[name]["pi"]
    run, harness, levels = await replay(name)
    # pi writes its leading system message with the first run (a reported message); the
    # harness keeps its prompt beside the transcript, so here it was in the session already
    assert run.events == [e for e in pi["events"] if e != "message_end(system)"]
    assert run.requests == pi["requests"]
    assert normalise(harness.session.get_entries()) == pi["entries"]
    assert levels == pi["thinkingLevels"]
    assert not run.replies
