"""Cassettes: record the replies a model streams, replay them later without network.

A cassette is a JSONL file. ``Cassette.record(path)`` wraps a stream function so that every reply
it streams is appended to the file as one ``interaction`` line: the request's fingerprint, the
streamed events (with their timing) and the usage. ``Cassette.replay(path)`` answers each request
from the file instead, rebuilding the events through a ``MessageBuilder`` so consumers see an
ordinary stream. A request that no recording matches ends in an ``error`` event naming the request
and how it differs from the closest recording. Environment switches for notebooks:
``PI_NOTEBOOK_RECORD=path``, ``PI_NOTEBOOK_REPLAY=path`` and ``PI_NOTEBOOK_REPLAY_SPEED``
(1 = the recorded pace, the default; 0 = as fast as possible).

The fingerprint is a hash of what the model sees: provider, model id and API, system prompt,
messages (timestamps, usage and opaque signatures left out), tools and thinking level. API keys
never reach the file: they are not part of a request's record, model headers are dropped, and any
credential of the request (``redaction``: the key, credential headers, URL userinfo) or secret of
the environment in a recorded text is replaced.

Lines of the file, each with a ``type``: ``cassette`` (the first line: version), ``model`` (a
model that was recorded, so replay can stand in for it — e.g. the embedded local model, which
then needs no server) and ``interaction``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from .builder import MessageBuilder
from .event_stream import AssistantMessageEventStream
from .events import AssistantEventType
from .options import ResponseInfo, StreamOptions
from .producer import describe_error, produce_stream
from .redaction import Redactor, request_redactor
from .registry import stream_simple_options
from .types import AssistantMessage, Context, Message, Model, ThinkingContent, ToolCall

__all__ = [
    "CASSETTE_VERSION",
    "RECORD_ENV",
    "REPLAY_ENV",
    "SPEED_ENV",
    "Cassette",
    "CassetteError",
    "Fingerprint",
    "Interaction",
    "RecordedEvent",
    "fingerprint_request",
]

CASSETTE_VERSION = 1
RECORD_ENV = "PI_NOTEBOOK_RECORD"
REPLAY_ENV = "PI_NOTEBOOK_REPLAY"
SPEED_ENV = "PI_NOTEBOOK_REPLAY_SPEED"

AnyStreamFunction: TypeAlias = Callable[
    [Model, Context, StreamOptions],
    AssistantMessageEventStream | Awaitable[AssistantMessageEventStream],
]
"""A provider's ``stream`` or an agent's ``stream_fn`` (which may be async)."""

_PREVIEW = 80
_REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(API_KEY|_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_MIN_SECRET = 8
_VOLATILE_MESSAGE_KEYS = frozenset(
    {
        *("timestamp", "usage", "api", "provider", "model", "responseId", "responseModel"),
        "details",
        # bookkeeping of the pi 1.6 loop, never sent to a model
        *("thinkingLevel", "durationMs"),
    }
)
_VOLATILE_BLOCK_KEYS = frozenset({"textSignature", "thinkingSignature", "thoughtSignature"})


class CassetteError(ValueError):
    """A cassette file that cannot be used (missing, malformed, or of another version)."""


# --- fingerprints --------------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(text: str, size: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:size]


def _message_shape(message: Message) -> dict[str, Any]:
    """What the model sees of a message: role and content (no times, usage or signatures)."""
    data = message.to_json_dict()
    shape = {k: v for k, v in data.items() if k not in _VOLATILE_MESSAGE_KEYS}
    if data.get("role") == "assistant":
        shape.pop("stopReason", None)
        shape.pop("errorMessage", None)
    content = shape.get("content")
    if isinstance(content, list):
        shape["content"] = [
            {k: v for k, v in block.items() if k not in _VOLATILE_BLOCK_KEYS}
            if isinstance(block, dict)
            else block
            for block in content
        ]
    return shape


def _preview(message: Message) -> str:
    """``role: first words`` of a message, for error texts and the file's request summary."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        for block in content:
            if isinstance(block, ToolCall):
                parts.append(f"[tool call {block.name}]")
            elif isinstance(block, ThinkingContent):
                continue
            else:
                parts.append(getattr(block, "text", None) or f"[{block.type}]")
        text = " ".join(parts)
    text = " ".join(text.split())
    if len(text) > _PREVIEW:
        text = text[: _PREVIEW - 1] + "…"
    return f"{message.role}: {text}"


class _Parts(BaseModel):
    """The hashed components of a request (16 hex digits each)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    system: str
    tools: str
    options: str
    messages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A request's identity: ``digest`` is compared; ``parts`` explain a mismatch."""

    digest: str
    parts: _Parts
    model_ref: str
    previews: tuple[str, ...]

    @property
    def last(self) -> str:
        return self.previews[-1] if self.previews else "(no messages)"


def fingerprint_request(
    model: Model, context: Context, options: StreamOptions | None = None
) -> Fingerprint:
    """The fingerprint of asking ``model`` for a reply to ``context``."""
    tools = [t.to_json_dict() for t in context.tools or ()]
    reasoning = options.reasoning if options is not None else None
    parts = _Parts(
        model=_digest(_canonical([model.provider, model.id, model.api])),
        system=_digest(context.system_prompt or ""),
        tools=_digest(_canonical(tools)),
        options=_digest(_canonical({"reasoning": reasoning})),
        messages=tuple(_digest(_canonical(_message_shape(m))) for m in context.messages),
    )
    return Fingerprint(
        digest=_fingerprint_digest(parts),
        parts=parts,
        model_ref=model.ref,
        previews=tuple(_preview(m) for m in context.messages),
    )


def _fingerprint_digest(parts: _Parts) -> str:
    return _digest(_canonical(parts.model_dump(mode="json")), 32)


# --- the file format -----------------------------------------------------------------------------


class _Line(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class _Header(_Line):
    type: Literal["cassette"]
    version: int


class _RecordedModel(_Line):
    type: Literal["model"]
    model: Model


class RecordedEvent(_Line):
    """One streamed event: its type, block index, text and milliseconds since the request."""

    type: AssistantEventType
    ms: int = 0
    content_index: int | None = None
    delta: str | None = None
    signature: str | None = None
    redacted: bool | None = None
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: dict[str, Any] | None = None
    reason: Literal["stop", "length", "toolUse", "error", "aborted"] | None = None
    error_message: str | None = None


class _RecordedUsage(_Line):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


class _Request(_Line):
    model: str
    messages: int
    last: str


class Interaction(_Line):
    """One recorded request and the reply streamed for it."""

    type: Literal["interaction"]
    fingerprint: str
    parts: _Parts
    request: _Request
    events: list[RecordedEvent]
    usage: _RecordedUsage = Field(default_factory=_RecordedUsage)
    response_id: str | None = None
    response_model: str | None = None


_LineAdapter: TypeAdapter[_Header | _RecordedModel | Interaction] = TypeAdapter(
    Annotated[_Header | _RecordedModel | Interaction, Field(discriminator="type")]
)


def _storable_model(model: Model) -> Model:
    """``model`` as a cassette keeps it: no headers, no credentials or query in the URL."""
    url = urlsplit(model.base_url)
    host = url.hostname or ""
    if url.port is not None:
        host = f"{host}:{url.port}"
    base_url = urlunsplit((url.scheme, host, url.path, "", "")) if url.scheme else model.base_url
    return model.model_copy(update={"headers": None, "base_url": base_url})


# --- secrets -------------------------------------------------------------------------------------


def _secret_values(model: Model, options: StreamOptions, environ: Mapping[str, str]) -> list[str]:
    """Every credential the request carried (``redaction``) and every secret-looking variable
    of the environment."""
    values = {options.api_key or ""}
    values.update(request_redactor(model, options).secrets)
    values.update(v for k, v in environ.items() if _SECRET_NAME.search(k))
    return sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)


def _scrub_deltas(events: list[dict[str, Any]], secrets: Sequence[str]) -> list[dict[str, Any]]:
    """Redact secrets split across deltas: a block whose joined text holds one keeps a single,
    redacted delta (its first)."""
    texts: dict[int, list[str]] = {}
    for item in events:
        if "delta" in item:
            texts.setdefault(item["contentIndex"], []).append(item["delta"])
    leaky: dict[int, str] = {}
    for index, parts in texts.items():
        joined = "".join(parts)
        scrubbed = _scrub(joined, secrets)
        if scrubbed != joined:
            leaky[index] = scrubbed
    if not leaky:
        return events
    kept: list[dict[str, Any]] = []
    written: set[int] = set()
    for item in events:
        block = item.get("contentIndex", -1)
        if "delta" in item and block in leaky:
            if block in written:
                continue
            written.add(block)
            item = {**item, "delta": leaky[block]}
        kept.append(item)
    return kept


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, _REDACTED)
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, _REDACTED)
    return Redactor().scrub(text)  # and any URL's user:password@


# --- recording -----------------------------------------------------------------------------------


def _compact(event: Any, ms: int) -> dict[str, Any]:
    """A streamed event as the cassette keeps it (O(1): ``partial`` is never materialised)."""
    kind = event.type
    item: dict[str, Any] = {"type": kind, "ms": ms}
    index = getattr(event, "content_index", None)
    if index is not None:
        item["contentIndex"] = index
    delta = getattr(event, "delta", None)
    if delta is not None:
        item["delta"] = delta
    if kind == "done":
        item["reason"] = event.reason
    elif kind == "error":
        item["reason"] = event.reason
        item["errorMessage"] = event.error.error_message or ""
    return item


def _annotate(events: list[dict[str, Any]], final: AssistantMessage) -> None:
    """Add what replay needs from the final message: tool-call ids, names and arguments,
    signatures, redacted thinking."""
    content = final.content
    for item in events:
        index = item.get("contentIndex")
        if index is None or index >= len(content):
            continue
        block = content[index]
        kind = item["type"]
        if kind == "toolcall_start" and isinstance(block, ToolCall):
            item["id"], item["name"] = block.id, block.name
        elif kind == "toolcall_end" and isinstance(block, ToolCall):
            if block.parse_error is None:
                item["arguments"] = block.arguments
            if block.thought_signature:
                item["signature"] = block.thought_signature
        elif kind == "thinking_start" and isinstance(block, ThinkingContent) and block.redacted:
            item["redacted"] = True
            item["text"] = block.thinking
            item["signature"] = block.thinking_signature or ""
        elif kind == "thinking_end" and isinstance(block, ThinkingContent):
            if block.thinking_signature and not block.redacted:
                item["signature"] = block.thinking_signature
        elif kind == "text_end":
            signature = getattr(block, "text_signature", None)
            if signature:
                item["signature"] = signature


# --- the cassette --------------------------------------------------------------------------------


class Cassette:
    """A cassette file opened for recording or for replay. ``wrap(stream_fn)`` gives the stream
    function to hand to an agent or harness (``stream_fn=``)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Literal["record", "replay"],
        *,
        speed: float = 1.0,
    ) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"mode must be 'record' or 'replay', got {mode!r}")
        if speed < 0:
            raise ValueError(f"speed must be 0 (instant) or positive, got {speed!r}")
        self.path = Path(path)
        self.mode = mode
        self.speed = speed
        self.interactions: list[Interaction] = []
        self.models: dict[str, Model] = {}
        self._by_digest: dict[str, list[int]] = {}
        self._replayed: dict[str, int] = {}
        self.requests = 0
        """How many requests went through this cassette."""
        if mode == "replay":
            if not self.path.is_file():
                raise CassetteError(f"No cassette at {self.path} (record one with {RECORD_ENV})")
            self._load()
        elif self.path.exists() and self.path.stat().st_size > 0:
            self._load()  # recording appends: keep what is there, and check it is a cassette

    @classmethod
    def record(cls, path: str | os.PathLike[str], *, fresh: bool = False) -> Cassette:
        """Record into ``path`` (appending to an existing cassette unless ``fresh``)."""
        if fresh:
            Path(path).unlink(missing_ok=True)
        return cls(path, "record")

    @classmethod
    def replay(cls, path: str | os.PathLike[str], *, speed: float = 1.0) -> Cassette:
        """Replay ``path``: at the recorded pace (``speed`` 1), faster, or instantly (0)."""
        return cls(path, "replay", speed=speed)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Cassette | None:
        """The cassette ``PI_NOTEBOOK_RECORD`` / ``PI_NOTEBOOK_REPLAY`` ask for, if any."""
        env = os.environ if environ is None else environ
        record = env.get(RECORD_ENV, "").strip()
        replay = env.get(REPLAY_ENV, "").strip()
        if record and replay:
            raise CassetteError(f"Set {RECORD_ENV} or {REPLAY_ENV}, not both")
        if record:
            return cls.record(record)
        if replay:
            raw = env.get(SPEED_ENV, "").strip() or "1"
            try:
                speed = float(raw)
            except ValueError:
                raise CassetteError(f"{SPEED_ENV} must be a number, got {raw!r}") from None
            return cls.replay(replay, speed=speed)
        return None

    def __repr__(self) -> str:
        return f"<Cassette {self.mode} {self.path} ({len(self.interactions)} recordings)>"

    # --- the file --------------------------------------------------------------------------------

    def _load(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                line = _LineAdapter.validate_json(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise CassetteError(
                    f"{self.path}:{number}: not a cassette line ({where}: {first['msg']})"
                ) from None
            if number == 1 and not isinstance(line, _Header):
                raise CassetteError(f"{self.path}:1: not a cassette (no header line)")
            if isinstance(line, _Header):
                if line.version != CASSETTE_VERSION:
                    raise CassetteError(
                        f"{self.path}: cassette version {line.version} (this reads "
                        f"{CASSETTE_VERSION}); record it again"
                    )
            elif isinstance(line, _RecordedModel):
                self.models[line.model.ref] = line.model
            else:
                if _fingerprint_digest(line.parts) != line.fingerprint:
                    raise CassetteError(
                        f"{self.path}:{number}: the fingerprint does not match its parts "
                        "(was the file edited?)"
                    )
                self._add(line)

    def _add(self, interaction: Interaction) -> None:
        self._by_digest.setdefault(interaction.fingerprint, []).append(len(self.interactions))
        self.interactions.append(interaction)

    def _append_lines(self, lines: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists() or self.path.stat().st_size == 0
        with self.path.open("a", encoding="utf-8") as file:
            if new:
                file.write(_canonical({"type": "cassette", "version": CASSETTE_VERSION}) + "\n")
            for line in lines:
                file.write(line + "\n")

    # --- models ----------------------------------------------------------------------------------

    def recorded_model(self, ref: str) -> Model | None:
        """The model recorded as ``provider/id`` (for replay without its server), if any."""
        return self.models.get(ref)

    # --- stream functions ------------------------------------------------------------------------

    def wrap(
        self, stream_fn: AnyStreamFunction | None = None
    ) -> Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]:
        """A stream function that records ``stream_fn``'s replies (record mode) or answers from
        the cassette without calling it (replay mode). ``stream_fn`` defaults to
        the provider registered for the model's API (``stream_simple``)."""
        inner = stream_fn or stream_simple_options
        if self.mode == "record":
            return lambda model, context, options: self._record(inner, model, context, options)
        return self._replay

    def _record(
        self,
        inner: AnyStreamFunction,
        model: Model,
        context: Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream:
        fingerprint = fingerprint_request(model, context, options)
        self.requests += 1

        async def relay(out: AssistantMessageEventStream) -> None:
            started = time.monotonic()
            events: list[dict[str, Any]] = []
            final: AssistantMessage | None = None
            try:
                produced = inner(model, context, options)
                source = await produced if inspect.isawaitable(produced) else produced
                async for event in source:
                    ms = round((time.monotonic() - started) * 1000)
                    events.append(_compact(event, ms))
                    if event.type == "done":
                        final = event.message
                    elif event.type == "error":
                        final = event.error
                    out.push(event)
            except Exception as exc:  # a stream function that broke its contract
                final = MessageBuilder(model, out).fail(describe_error(exc))
                ms = round((time.monotonic() - started) * 1000)
                message = final.error_message or ""
                events.append(
                    {"type": "error", "ms": ms, "reason": "error", "errorMessage": message}
                )
            finally:
                if final is not None:  # a reply that was cut off (cancelled) is not kept
                    self._save(model, fingerprint, events, final, options)

        return AssistantMessageEventStream(relay)

    def _save(
        self,
        model: Model,
        fingerprint: Fingerprint,
        events: list[dict[str, Any]],
        final: AssistantMessage,
        options: StreamOptions,
    ) -> None:
        secrets = _secret_values(model, options, os.environ)
        _annotate(events, final)
        events = _scrub_deltas(events, secrets)
        usage = final.usage
        record: dict[str, Any] = {
            "type": "interaction",
            "fingerprint": fingerprint.digest,
            "parts": fingerprint.parts.model_dump(mode="json"),
            "request": {
                "model": fingerprint.model_ref,
                "messages": len(fingerprint.previews),
                "last": fingerprint.last,
            },
            "events": events,
            "usage": {
                "input": usage.input,
                "output": usage.output,
                "cacheRead": usage.cache_read,
                "cacheWrite": usage.cache_write,
            },
        }
        if final.response_id:
            record["responseId"] = final.response_id
        if final.response_model:
            record["responseModel"] = final.response_model
        lines: list[str] = []
        if model.ref not in self.models:
            stored = _storable_model(model)
            self.models[model.ref] = stored
            lines.append(_canonical({"type": "model", "model": stored.to_json_dict()}))
        line = _canonical(record)
        lines.append(line)
        self._append_lines([_scrub(text, secrets) for text in lines])
        self._add(Interaction.model_validate_json(_scrub(line, secrets)))

    # --- replay ----------------------------------------------------------------------------------

    def _replay(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        fingerprint = fingerprint_request(model, context, options)
        self.requests += 1
        number = self.requests
        found = self._take(fingerprint.digest)

        async def body(out: MessageBuilder) -> None:
            if options.on_response is not None:
                answered = options.on_response(ResponseInfo(status=200, headers={}), model)
                if inspect.isawaitable(answered):
                    await answered
            if found is None:
                out.fail(self.describe_miss(fingerprint, number))
                return
            await self._play(found, out)

        return produce_stream(model, options, body)

    def _take(self, digest: str) -> Interaction | None:
        """The next unused recording of ``digest`` (the last one again once all were used)."""
        indexes = self._by_digest.get(digest)
        if not indexes:
            return None
        used = self._replayed.get(digest, 0)
        self._replayed[digest] = used + 1
        return self.interactions[indexes[min(used, len(indexes) - 1)]]

    @property
    def unused(self) -> list[Interaction]:
        """Recordings that replay has not used yet."""
        return [
            self.interactions[i]
            for digest, indexes in self._by_digest.items()
            for i in indexes[self._replayed.get(digest, 0) :]
        ]

    async def _play(self, interaction: Interaction, out: MessageBuilder) -> None:
        out.response_id = interaction.response_id
        out.response_model = interaction.response_model
        loop = asyncio.get_running_loop()
        started = loop.time()
        skip_end: set[int] = set()
        for event in interaction.events:
            if self.speed > 0:
                await asyncio.sleep(max(0.0, started + event.ms / 1000 / self.speed - loop.time()))
            else:
                await asyncio.sleep(0)
            kind = event.type
            index = event.content_index if event.content_index is not None else -1
            if kind == "start":
                out.start()
            elif kind == "text_start":
                out.text_start()
            elif kind == "text_delta":
                out.text_delta(index, event.delta or "")
            elif kind == "text_end":
                out.text_end(index, signature=event.signature)
            elif kind == "thinking_start":
                if event.redacted:
                    out.redacted_thinking(event.signature or "", event.text or "")
                    skip_end.add(index)
                else:
                    out.thinking_start()
            elif kind == "thinking_delta":
                out.thinking_delta(index, event.delta or "")
            elif kind == "thinking_end":
                if index not in skip_end:
                    out.thinking_end(index, signature=event.signature)
            elif kind == "toolcall_start":
                out.toolcall_start(event.id or "", event.name or "")
            elif kind == "toolcall_delta":
                out.toolcall_delta(index, event.delta or "")
            elif kind == "toolcall_end":
                if event.signature is not None:
                    out.open_block(index).signature = event.signature
                out.toolcall_end(index, arguments=event.arguments)
            else:
                usage = interaction.usage
                out.set_usage(
                    input=usage.input,
                    output=usage.output,
                    cache_read=usage.cache_read,
                    cache_write=usage.cache_write,
                )
                if kind == "done":
                    out.done(_done_reason(event.reason))
                else:
                    out.fail(event.error_message or "error", aborted=event.reason == "aborted")
                return

    # --- explaining a miss -----------------------------------------------------------------------

    def describe_miss(self, fingerprint: Fingerprint, number: int) -> str:
        """Why request ``number`` has no recording: the request, and how it differs from the
        closest recording."""
        text = (
            f"No recording in the cassette {self.path.name} matches request {number} "
            f"({fingerprint.model_ref}, {_count(len(fingerprint.previews), 'message')}; last: "
            f"{fingerprint.last!r})."
        )
        closest = max(
            self.interactions, key=lambda i: _similarity(fingerprint.parts, i.parts), default=None
        )
        if closest is None:
            text += " The cassette holds no recordings."
        else:
            differences = ", ".join(_differences(fingerprint, closest))
            text += (
                f" The closest recording (last: {closest.request.last!r}) differs in: "
                f"{differences}."
            )
        return (
            text + f" If the prompt changed on purpose, record the cassette again ({RECORD_ENV}="
            f"{self.path})."
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _done_reason(reason: str | None) -> Literal["stop", "length", "toolUse"]:
    if reason == "length":
        return "length"
    return "toolUse" if reason == "toolUse" else "stop"


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _similarity(request: _Parts, recorded: _Parts) -> tuple[int, int, int]:
    same = sum(
        getattr(request, name) == getattr(recorded, name)
        for name in ("model", "system", "tools", "options")
    )
    prefix = _common_prefix(request.messages, recorded.messages)
    return (prefix, same, -abs(len(request.messages) - len(recorded.messages)))


def _differences(request: Fingerprint, recorded: Interaction) -> Iterator[str]:
    ours, theirs = request.parts, recorded.parts
    if ours.model != theirs.model:
        yield f"the model (recorded: {recorded.request.model})"
    if ours.system != theirs.system:
        yield "the system prompt"
    if ours.tools != theirs.tools:
        yield "the tools"
    if ours.options != theirs.options:
        yield "the thinking level"
    prefix = _common_prefix(ours.messages, theirs.messages)
    if prefix < len(ours.messages):
        yield f"message {prefix + 1} ({request.previews[prefix]!r})"
    if len(ours.messages) != len(theirs.messages):
        yield f"the message count ({len(ours.messages)}, recorded {len(theirs.messages)})"
