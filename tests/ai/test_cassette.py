"""Cassettes: record a model's streamed replies, replay them offline and deterministically."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import Agent, tool
from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    FauxProvider,
    Model,
    StreamOptions,
    TextContent,
    Tool,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_notebook.ai.cassette import (
    RECORD_ENV,
    REPLAY_ENV,
    SPEED_ENV,
    Cassette,
    CassetteError,
    fingerprint_request,
)

SECRET = "sk-test-0123456789abcdef"


def context(*texts: str, system: str = "Be brief.") -> Context:
    return Context(system_prompt=system, messages=[UserMessage(content=t) for t in texts])


async def collect(stream: Any) -> tuple[list[Any], AssistantMessage]:
    events = [event async for event in stream]
    return events, await stream.result()


def shape(events: list[Any]) -> list[tuple[str, int | None, str | None]]:
    return [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events]


async def record_one(
    faux: FauxProvider, path: Path, reply: AssistantMessage, ctx: Context
) -> tuple[list[Any], AssistantMessage]:
    faux.set_responses([reply])
    recorder = Cassette.record(path).wrap(faux.stream)
    return await collect(recorder(faux.get_model(), ctx, StreamOptions()))


# --- fingerprints --------------------------------------------------------------------------------


def test_fingerprint_ignores_timestamps_usage_and_signatures(faux: FauxProvider) -> None:
    model = faux.get_model()
    reply_a = faux_assistant_message([faux_text("hello")], timestamp=1)
    reply_b = faux_assistant_message([TextContent(text="hello", text_signature="sig")], timestamp=2)
    reply_b.usage.input = 99
    a = Context(messages=[UserMessage(content="hi", timestamp=1), reply_a])
    b = Context(messages=[UserMessage(content="hi", timestamp=2), reply_b])
    assert fingerprint_request(model, a).digest == fingerprint_request(model, b).digest


def test_fingerprint_covers_what_the_model_sees(faux: FauxProvider) -> None:
    model = faux.get_model()
    base = fingerprint_request(model, context("hi"))
    variants = [
        fingerprint_request(model, context("hi!")),
        fingerprint_request(model, context("hi", system="Be verbose.")),
        fingerprint_request(model, context("hi", "again")),
        fingerprint_request(
            model,
            Context(
                system_prompt="Be brief.", messages=context("hi").messages, tools=[Tool(name="t")]
            ),
        ),
        fingerprint_request(model, context("hi"), StreamOptions(reasoning="high")),
        fingerprint_request(model.model_copy(update={"id": "other"}), context("hi")),
    ]
    assert len({base.digest, *(v.digest for v in variants)}) == 1 + len(variants)
    # An API key or a session id is not part of the request's identity.
    keyed = fingerprint_request(model, context("hi"), StreamOptions(api_key=SECRET, session_id="s"))
    assert keyed.digest == base.digest


# --- record and replay ---------------------------------------------------------------------------


async def test_replay_rebuilds_the_recorded_stream(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    reply = faux_assistant_message(
        [
            faux_thinking("Let me think about it. " * 3),
            faux_text("The answer is forty-two, " * 4),
            faux_tool_call("lookup", {"query": "answer", "limit": 3}, id="call-1"),
        ]
    )
    recorded, recorded_final = await record_one(faux, path, reply, context("question"))

    cassette = Cassette.replay(path, speed=0)
    assert len(cassette.interactions) == 1
    replayed, final = await collect(
        cassette.wrap()(faux.get_model(), context("question"), StreamOptions())
    )
    assert shape(replayed) == shape(recorded)
    assert final.content == recorded_final.content
    assert final.tool_calls[0].id == "call-1"
    assert final.tool_calls[0].arguments == {"query": "answer", "limit": 3}
    assert final.stop_reason == "toolUse"
    assert final.usage == recorded_final.usage
    assert faux.call_count == 1  # replay never called the provider
    assert cassette.unused == []


async def test_recorded_errors_replay_as_errors(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    reply = faux_assistant_message([faux_text("partial")], "error", "upstream overloaded")
    _, recorded = await record_one(faux, path, reply, context("q"))
    assert recorded.stop_reason == "error"
    _, final = await collect(
        Cassette.replay(path, speed=0).wrap()(faux.get_model(), context("q"), StreamOptions())
    )
    assert (final.stop_reason, final.error_message) == ("error", "upstream overloaded")
    assert final.text == "partial"


async def test_a_changed_prompt_is_a_clear_error(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "notebook.jsonl"
    await record_one(faux, path, faux_assistant_message("one"), context("first", "second"))
    cassette = Cassette.replay(path, speed=0)
    events, final = await collect(
        cassette.wrap()(faux.get_model(), context("first", "Second, rephrased"), StreamOptions())
    )
    assert events[-1].type == "error" and final.stop_reason == "error"
    error = final.error_message or ""
    assert "No recording in the cassette notebook.jsonl matches request 1" in error
    assert "'user: Second, rephrased'" in error
    assert "message 2" in error and "system prompt" not in error
    assert f"{RECORD_ENV}={path}" in error


async def test_identical_requests_replay_in_order_then_repeat(
    faux: FauxProvider, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    model = faux.get_model()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    recorder = Cassette.record(path).wrap(faux.stream)
    for _ in range(2):
        await collect(recorder(model, context("same"), StreamOptions()))
    replay = Cassette.replay(path, speed=0).wrap()
    texts = [
        (await replay(model, context("same"), StreamOptions()).result()).text for _ in range(3)
    ]
    assert texts == ["first", "second", "second"]


async def test_recording_appends_unless_fresh(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    await record_one(faux, path, faux_assistant_message("a"), context("a"))
    await record_one(faux, path, faux_assistant_message("b"), context("b"))
    assert len(Cassette.replay(path).interactions) == 2
    assert len(Cassette.record(path, fresh=True).interactions) == 0
    assert not path.exists()


async def test_secrets_never_reach_the_file(
    faux: FauxProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_secret = "gsk-environment-secret-42"
    monkeypatch.setenv("GROQ_API_KEY", env_secret)
    path = tmp_path / "c.jsonl"
    model = faux.get_model().model_copy(
        update={
            "headers": {"Authorization": f"Bearer {SECRET}"},
            "base_url": "https://user:pw@api.example.com/v1?key=abc",
        }
    )
    faux.set_responses([faux_assistant_message(f"your keys are {SECRET} and {env_secret}")])
    recorder = Cassette.record(path).wrap(faux.stream)
    _, final = await collect(recorder(model, context("leak"), StreamOptions(api_key=SECRET)))
    assert SECRET in final.text  # the live reply is untouched
    text = path.read_text()
    assert SECRET not in text and env_secret not in text and "pw@" not in text
    assert "key=abc" not in text and "[redacted]" in text
    stored = Cassette.replay(path).recorded_model(model.ref)
    assert stored is not None
    assert stored.headers is None and stored.base_url == "https://api.example.com/v1"


async def test_replay_paces_like_the_recording(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    faux.tokens_per_second = 200
    await record_one(faux, path, faux_assistant_message("word " * 40), context("q"))
    recorded_ms = Cassette.replay(path).interactions[0].events[-1].ms
    assert recorded_ms >= 100
    started = time.monotonic()
    await (
        Cassette.replay(path, speed=1)
        .wrap()(faux.get_model(), context("q"), StreamOptions())
        .result()
    )
    assert time.monotonic() - started >= recorded_ms / 1000 * 0.9
    started = time.monotonic()
    await (
        Cassette.replay(path, speed=0)
        .wrap()(faux.get_model(), context("q"), StreamOptions())
        .result()
    )
    assert time.monotonic() - started < recorded_ms / 1000


async def test_replay_can_be_aborted(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    faux.tokens_per_second = 100
    await record_one(faux, path, faux_assistant_message("slowly " * 60), context("q"))
    controller = AbortController()
    stream = Cassette.replay(path).wrap()(
        faux.get_model(), context("q"), StreamOptions(signal=controller.signal)
    )
    async for event in stream:
        if event.type == "text_delta":
            controller.abort()
    final = await stream.result()
    assert final.stop_reason == "aborted"
    assert 0 < len(final.text) < len("slowly " * 60)


# --- through an agent ----------------------------------------------------------------------------


async def test_an_agent_run_with_tools_replays_identically(
    faux: FauxProvider, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    calls: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        calls.append(a + b)
        return a + b

    faux.set_responses(
        [
            faux_assistant_message([faux_text("Adding."), faux_tool_call("add", {"a": 2, "b": 3})]),
            faux_assistant_message("2 + 3 = 5"),
        ]
    )

    async def run(stream_fn: Any) -> list[Any]:
        agent = Agent(
            system_prompt="Use tools.", model=faux.get_model(), tools=[add], stream_fn=stream_fn
        )
        await agent.prompt("What is 2 + 3?")
        return [m.to_json_dict() for m in agent.state.messages]

    def stable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        volatile = ("timestamp", "durationMs")  # clock readings differ between the two runs
        return [{k: v for k, v in m.items() if k not in volatile} for m in messages]

    recorded = await run(Cassette.record(path).wrap(faux.stream))
    cassette = Cassette.replay(path, speed=0)
    replayed = await run(cassette.wrap())
    assert stable(replayed) == stable(recorded)
    assert calls == [5, 5]  # the tool really ran both times; only the model was replayed
    assert cassette.requests == 2 and cassette.unused == []
    # [system, user, assistant, toolResult, assistant]: pi 1.6 keeps the prompt in the transcript
    assert isinstance(ToolResultMessage.model_validate(replayed[3]), ToolResultMessage)


async def test_a_broken_stream_function_is_recorded_as_an_error(
    faux: FauxProvider, tmp_path: Path
) -> None:
    async def broken(model: Model, ctx: Context, options: StreamOptions) -> Any:
        raise RuntimeError("no route to host")

    path = tmp_path / "c.jsonl"
    _, final = await collect(
        Cassette.record(path).wrap(broken)(faux.get_model(), context("q"), StreamOptions())
    )
    assert (final.stop_reason, final.error_message) == ("error", "no route to host")
    _, again = await collect(
        Cassette.replay(path, speed=0).wrap()(faux.get_model(), context("q"), StreamOptions())
    )
    assert again.error_message == "no route to host"


# --- files and switches --------------------------------------------------------------------------


async def test_bad_files_name_file_and_line(faux: FauxProvider, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(CassetteError, match="No cassette at"):
        Cassette.replay(missing)
    not_cassette = tmp_path / "session.jsonl"
    not_cassette.write_text('{"type":"session","version":3}\n')
    with pytest.raises(CassetteError, match=r"session\.jsonl:1: not a cassette line"):
        Cassette.replay(not_cassette)

    path = tmp_path / "c.jsonl"
    await record_one(faux, path, faux_assistant_message("x"), context("q"))
    lines = path.read_text().splitlines()
    edited = json.loads(lines[-1])
    edited["parts"]["system"] = "0" * 16
    path.write_text("\n".join([*lines[:-1], json.dumps(edited)]) + "\n")
    with pytest.raises(CassetteError, match=r"c\.jsonl:3: the fingerprint does not match"):
        Cassette.replay(path)
    path.write_text('{"type":"cassette","version":99}\n')
    with pytest.raises(CassetteError, match="version 99"):
        Cassette.replay(path)


def test_environment_switches(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    assert Cassette.from_env({}) is None
    recording = Cassette.from_env({RECORD_ENV: str(path)})
    assert recording is not None and recording.mode == "record"
    path.write_text('{"type":"cassette","version":1}\n')
    replay = Cassette.from_env({REPLAY_ENV: str(path), SPEED_ENV: "2.5"})
    assert replay is not None and (replay.mode, replay.speed) == ("replay", 2.5)
    with pytest.raises(CassetteError, match="not both"):
        Cassette.from_env({RECORD_ENV: "a", REPLAY_ENV: "b"})
    with pytest.raises(CassetteError, match="must be a number"):
        Cassette.from_env({REPLAY_ENV: str(path), SPEED_ENV: "fast"})
    with pytest.raises(ValueError, match="speed"):
        Cassette.replay(path, speed=-1)


# --- the local model -----------------------------------------------------------------------------


@pytest.mark.local_llm
async def test_local_model_recording_replays_without_its_server(
    local_model: Model, tmp_path: Path
) -> None:
    path = tmp_path / "local.jsonl"
    ctx = context("Name one colour.")
    options = StreamOptions(max_tokens=16, temperature=0)
    recorded = await Cassette.record(path).wrap()(local_model, ctx, options).result()
    assert recorded.stop_reason in ("stop", "length") and recorded.text

    cassette = Cassette.replay(path, speed=0)
    stand_in = cassette.recorded_model(local_model.ref)
    assert stand_in is not None and stand_in.headers is None
    # The stand-in points at a server that is gone by now: replay must not need it.
    stand_in = stand_in.model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    replayed = await cassette.wrap()(stand_in, ctx, options).result()
    assert replayed.content == recorded.content and replayed.usage == recorded.usage
    await asyncio.sleep(0)
