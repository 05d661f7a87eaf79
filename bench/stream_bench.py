"""Streaming layer, side by side: pi_notebook vs the official SDKs vs raw httpx, same bytes.

An OpenAI-style stream of N chat-completion chunks and an Anthropic-style stream of N
``content_block_delta`` events are served over loopback by ``bench/sse_server.py`` in its own
process (one SSE event per HTTP chunk, each flushed). Each consumer reads the whole stream and
accumulates the reply text (checked against what the server sent):

- ``pi_notebook``: ``pi_notebook.ai.stream()`` with a model on the ``openai-completions`` /
  ``anthropic-messages`` API, every event consumed;
- ``openai SDK``: ``AsyncOpenAI.chat.completions.create(stream=True)``;
  ``anthropic SDK``: ``AsyncAnthropic.messages.create(stream=True)``;
- ``httpx+sse+json`` (the floor): httpx + httpx-sse + ``json.loads`` per event, text picked out of
  plain dicts;
- ``httpx bytes``: httpx reading the chunked body only (the cost of HTTP chunk decoding);
- ``pi-ai (node)``: the real pi-ai 0.73.1 ``stream()`` in node (``bench/peers/stream.mjs``, over
  the official JS SDKs), timed inside node after a warm-up read; when the node peers are installed;
- ``pi-ai 1.6 (node)``: the same with pi-ai 1.6.0 on its Node 22, when pi 1.6 is installed in
  tests/golden/pi-1.6/sessions (``npm ci`` there, as the live interop tests need).

``pi_notebook`` runs on pi_notebook's default transport (httpx's API over aiohttp's C HTTP parser,
``pi_notebook.ai.aiohttp_transport``); two more rows show what the transport is worth:

- ``pi_notebook (httpx)``: the same run with a plain ``httpx.AsyncClient`` (httpx's own
  transport, h11) handed in as ``http_client``;
- ``aiohttp bytes``: aiohttp reading the body (its C parser undoes the chunked framing and hands
  over whatever arrived, many events per read, where h11 hands over one HTTP chunk at a time).

Consumers alternate order across repetitions; the table gives best and median µs per chunk and
chunks/s for 10k, 100k and 1M deltas (at 1M only ours and the floor, unless ``--sdk-1m``: the
SDKs are slow).

    python3 -m bench.stream_bench                       # everything, a few minutes
    python3 -m bench.stream_bench --sizes 10k,100k --reps 5
    python3 -m bench.stream_bench --profile pi_notebook --protocol openai --sizes 100k
    python3 -m bench.stream_bench --instructions "pi_notebook,httpx bytes"   # callgrind counts

``--instructions`` counts what a consumer executes per chunk under ``valgrind --tool=callgrind``
(the difference between a 2k and a 12k read, so start-up cancels out): slow, but the same on a
busy machine, where the timings of one change can drown in the noise of the others.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib.util
import io
import json
import pstats
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from httpx_sse import aconnect_sse

from bench.common import (
    PI16_NODE,
    PiVersion,
    Stats,
    callgrind_instructions,
    describe_environment,
    fmt_rate,
    fmt_us,
    node_available,
    print_table,
    rotated,
    run_node_json,
    stats,
)
from bench.sse_server import MODEL, expected_text, serve_in_subprocess

Protocol = Literal["openai", "anthropic"]
ReadFn = Callable[[str, int], Awaitable[str | None]]
"""``(server URL, N) -> accumulated reply text`` (``None`` when the consumer does not parse)."""
MeasureFn = Callable[[str, int, bool], Awaitable[float]]
"""``(server URL, N, check the reply?) -> seconds`` for one read of an N-chunk stream."""

OURS = "pi_notebook"
OURS_HTTPX = "pi_notebook (httpx)"
FLOOR = "httpx+sse+json"
NODE = "pi-ai (node)"
NODE16 = "pi-ai 1.6 (node)"
PROMPT = "Tell me a story."
_PROVIDER_MODULES = {
    "openai": "pi_notebook.ai.providers.openai_completions",
    "anthropic": "pi_notebook.ai.providers.anthropic_messages",
}


@dataclass
class Consumer:
    name: str
    protocol: Protocol
    measure: MeasureFn
    large: bool = True
    """Runs at ≥ 1M chunks by default (the others only with --sdk-1m)."""
    samples: dict[int, list[float]] = field(default_factory=dict)


class Consumers:
    """The consumers of one benchmark run, holding their (reused, warm) HTTP clients."""

    def __init__(self) -> None:
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(600.0))
        self._sdk_clients: dict[tuple[str, int], Any] = {}
        self._aiohttp: dict[str, Any] = {}
        """The aiohttp session of ``aiohttp bytes``, made on first use."""
        self._own: dict[str, httpx.AsyncClient] = {}
        """pi_notebook's client on httpx's own transport (``pi_notebook (httpx)``)."""

    async def aclose(self) -> None:
        await self.http.aclose()
        for client in self._sdk_clients.values():
            await client.close()
        for own in self._own.values():
            await own.aclose()
        if "session" in self._aiohttp:
            await self._aiohttp["session"].close()

    # --- pi_notebook ------------------------------------------------------------------------------

    async def ours(
        self, protocol: Protocol, url: str, n: int, http_client: httpx.AsyncClient | None = None
    ) -> str:
        from pi_notebook.ai import Context, UserMessage, custom_model, stream

        if protocol == "openai":
            model = custom_model(MODEL, f"{url}/n/{n}/v1", provider="bench")
        else:
            model = custom_model(MODEL, f"{url}/n/{n}", provider="bench", api="anthropic-messages")
        context = Context(messages=[UserMessage(content=PROMPT, timestamp=0)])
        parts: list[str] = []
        events = stream(
            model, context, api_key="bench-key", max_tokens=1024, http_client=http_client
        )
        async for event in events:
            if event.type == "text_delta":
                parts.append(event.delta)
            elif event.type == "error":
                raise RuntimeError(f"pi_notebook stream failed: {event.error.error_message}")
        return "".join(parts)

    async def ours_on_httpx(self, protocol: Protocol, url: str, n: int) -> str:
        """``ours`` over a client on httpx's own transport, handed in as ``http_client``."""
        client = self._own.get("httpx")
        if client is None:
            client = self._own["httpx"] = httpx.AsyncClient(timeout=httpx.Timeout(600.0))
        return await self.ours(protocol, url, n, http_client=client)

    async def aiohttp_bytes(self, path: str, url: str, n: int) -> None:
        import aiohttp  # type: ignore[import-not-found,unused-ignore]

        session = self._aiohttp.get("session")
        if session is None:
            session = self._aiohttp["session"] = aiohttp.ClientSession()
        async with session.post(f"{url}/n/{n}/v1/{path}", json={}) as response:
            async for _chunk in response.content.iter_any():
                pass
        return None

    # --- official SDKs ----------------------------------------------------------------------------

    def _openai_client(self, url: str, n: int) -> Any:
        from openai import AsyncOpenAI

        key = ("openai", n)
        if key not in self._sdk_clients:
            self._sdk_clients[key] = AsyncOpenAI(base_url=f"{url}/n/{n}/v1", api_key="bench-key")
        return self._sdk_clients[key]

    def _anthropic_client(self, url: str, n: int) -> Any:
        from anthropic import AsyncAnthropic

        key = ("anthropic", n)
        if key not in self._sdk_clients:
            self._sdk_clients[key] = AsyncAnthropic(base_url=f"{url}/n/{n}", api_key="bench-key")
        return self._sdk_clients[key]

    async def openai_sdk(self, url: str, n: int) -> str:
        client = self._openai_client(url, n)
        parts: list[str] = []
        chunks = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in chunks:
            if chunk.choices:
                text = chunk.choices[0].delta.content
                if text:
                    parts.append(text)
        return "".join(parts)

    async def anthropic_sdk(self, url: str, n: int) -> str:
        client = self._anthropic_client(url, n)
        parts: list[str] = []
        events = await client.messages.create(
            model=MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
        )
        async for event in events:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        return "".join(parts)

    # --- floors -----------------------------------------------------------------------------------

    async def floor_openai(self, url: str, n: int) -> str:
        parts: list[str] = []
        payload = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}
        target = f"{url}/n/{n}/v1/chat/completions"
        async with aconnect_sse(self.http, "POST", target, json=payload) as source:
            async for sse in source.aiter_sse():
                if sse.data == "[DONE]":
                    break
                choices = json.loads(sse.data)["choices"]
                if choices:
                    text = choices[0]["delta"].get("content")
                    if text:
                        parts.append(text)
        return "".join(parts)

    async def floor_anthropic(self, url: str, n: int) -> str:
        parts: list[str] = []
        payload = {
            "model": MODEL,
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": PROMPT}],
        }
        async with aconnect_sse(self.http, "POST", f"{url}/n/{n}/v1/messages", json=payload) as src:
            async for sse in src.aiter_sse():
                data = json.loads(sse.data)
                if data["type"] == "content_block_delta":
                    delta = data["delta"]
                    if delta["type"] == "text_delta":
                        parts.append(delta["text"])
        return "".join(parts)

    async def raw_bytes(self, path: str, url: str, n: int) -> None:
        async with self.http.stream("POST", f"{url}/n/{n}/v1/{path}", json={}) as response:
            async for _chunk in response.aiter_raw():
                pass
        return None

    def build(self, protocols: list[Protocol], *, node: bool, node16: bool) -> list[Consumer]:
        out: list[Consumer] = []
        aiohttp = importlib.util.find_spec("aiohttp") is not None
        for protocol in protocols:
            path = "chat/completions" if protocol == "openai" else "messages"
            if importlib.util.find_spec(_PROVIDER_MODULES[protocol]) is not None:
                out.append(Consumer(OURS, protocol, _timed(_bind(self.ours, protocol))))
                on_httpx = _timed(_bind(self.ours_on_httpx, protocol))
                out.append(Consumer(OURS_HTTPX, protocol, on_httpx, large=False))
            if protocol == "openai":
                sdk = Consumer("openai SDK", protocol, _timed(self.openai_sdk), large=False)
                floor = Consumer(FLOOR, protocol, _timed(self.floor_openai))
            else:
                sdk = Consumer("anthropic SDK", protocol, _timed(self.anthropic_sdk), large=False)
                floor = Consumer(FLOOR, protocol, _timed(self.floor_anthropic))
            raw = _timed(_bind(self.raw_bytes, path))
            out += [sdk, floor, Consumer("httpx bytes", protocol, raw, large=False)]
            if aiohttp:
                raw = _timed(_bind(self.aiohttp_bytes, path))
                out.append(Consumer("aiohttp bytes", protocol, raw, large=False))
            if node:
                out.append(Consumer(NODE, protocol, _pi_ai_node(protocol), large=False))
            if node16:
                out.append(Consumer(NODE16, protocol, _pi_ai_node(protocol, "1.6"), large=False))
        return out


def _bind(fn: Callable[..., Awaitable[str | None]], first: Any) -> ReadFn:
    async def read(url: str, n: int) -> str | None:
        return await fn(first, url, n)

    return read


def _timed(read: ReadFn) -> MeasureFn:
    """Time one in-process read; on ``check``, compare its text with what the server sent."""

    async def measure(url: str, n: int, check: bool) -> float:
        start = time.perf_counter()
        text = await read(url, n)
        elapsed = time.perf_counter() - start
        if check and text is not None and text != expected_text(n):
            raise RuntimeError(
                f"a consumer accumulated a wrong reply: {len(text)} characters instead of "
                f"{len(expected_text(n))}"
            )
        return elapsed

    return measure


def _pi_ai_node(protocol: Protocol, pi: PiVersion = "0.73") -> MeasureFn:
    """pi-ai's own provider in node (``bench/peers/stream.mjs``), timed by the node process
    (after an untimed warm-up read, so node's start-up and JIT are not counted). ``pi``: the
    pinned 0.73.1 of bench/peers, or 1.6.0 on its Node 22."""
    api = "openai-completions" if protocol == "openai" else "anthropic-messages"

    async def measure(url: str, n: int, check: bool) -> float:
        utf16_length = len(expected_text(n).encode("utf-16-le")) // 2  # JavaScript's length
        args = ["--api", api, "--url", url, "--n", str(n), "--reps", "1"]
        args += ["--expect-chars", str(utf16_length if check else -1), "--pi", pi]
        node = PI16_NODE if pi == "1.6" else "node"
        result = await asyncio.to_thread(run_node_json, "stream.mjs", args, timeout=1800, node=node)
        return float(result["runs_ms"][0]) / 1000.0

    return measure


async def _run_once(consumer: Consumer, url: str, n: int, *, check: bool) -> float:
    try:
        return await consumer.measure(url, n, check)
    except RuntimeError as exc:
        raise RuntimeError(f"{consumer.name} ({consumer.protocol}): {exc}") from exc


def parse_size(text: str) -> int:
    """``10k`` → 10_000, ``1M`` → 1_000_000, ``2500`` → 2500."""
    text = text.strip()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale != 1 else text
    try:
        value = int(float(digits) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 10k, 100k, 1M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text!r}")
    return value


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


async def run(args: argparse.Namespace) -> None:
    protocols: list[Protocol] = args.protocol
    sizes: list[int] = args.sizes
    with serve_in_subprocess() as url:
        consumers = Consumers()
        try:
            selected = [
                c
                for c in consumers.build(
                    protocols,
                    node=node_available() and not args.no_node,
                    node16=PI16_NODE.exists() and not args.no_node,
                )
                if not args.only or c.name in args.only
            ]
            if not any(c.name == OURS for c in selected) and (not args.only or OURS in args.only):
                print(
                    "note: pi_notebook's providers for "
                    f"{'/'.join(protocols)} are not importable yet; measuring the peers only"
                )
            if args.profile:
                await _profile(selected, args.profile, url, sizes[0])
                return
            for consumer in selected:  # warm up connections and imports; check correctness
                await _run_once(consumer, url, 1_000, check=True)
            for n in sizes:
                large = n >= 1_000_000
                reps = args.reps_large if large else args.reps
                active = [c for c in selected if c.large or not large or args.sdk_1m]
                for rep in range(reps):
                    for consumer in rotated(active, rep):
                        elapsed = await _run_once(consumer, url, n, check=rep == 0)
                        consumer.samples.setdefault(n, []).append(elapsed)
                        if args.verbose:
                            print(
                                f"  {consumer.protocol:9} {consumer.name:15} {size_label(n):>5}"
                                f" rep {rep + 1}: {elapsed * 1e6 / n:8.2f} µs/chunk",
                                flush=True,
                            )
        finally:
            await consumers.aclose()
    _report(selected, sizes, protocols)


_ICOUNT_SIZES = (2_000, 12_000)


def _instructions(names: list[str], protocols: list[Protocol]) -> None:
    """Per consumer and protocol: instructions per chunk, from callgrind runs of one read each
    (``--read-once``) at two sizes, against a server outside valgrind."""
    rows: list[list[str]] = []
    with serve_in_subprocess() as url:
        for protocol in protocols:
            for name in names:
                totals: list[int] = []
                for n in _ICOUNT_SIZES:
                    module = ["bench.stream_bench", "--read-once", name, "--protocol", protocol]
                    module += ["--url", url, "--n", str(n)]
                    totals.append(callgrind_instructions(module, f"{name} ({protocol})"))
                per_chunk = (totals[1] - totals[0]) / (_ICOUNT_SIZES[1] - _ICOUNT_SIZES[0])
                rows.append([protocol, name, f"{per_chunk / 1000:,.1f} k"])
                print(f"  {protocol:9} {name:22} {per_chunk:10,.0f} instructions/chunk", flush=True)
    print_table(
        "Instructions per chunk (callgrind)",
        ["protocol", "consumer", "instructions/chunk"],
        rows,
        note=f"(I({_ICOUNT_SIZES[1]}) − I({_ICOUNT_SIZES[0]})) ÷ "
        f"{_ICOUNT_SIZES[1] - _ICOUNT_SIZES[0]}: one read each, start-up cancels out.",
    )


async def _read_once(name: str, protocol: Protocol, url: str, n: int) -> None:
    """One read by consumer ``name`` (the child of ``--instructions``), nothing printed."""
    consumers = Consumers()
    try:
        for consumer in consumers.build([protocol], node=False, node16=False):
            if consumer.name == name:
                await consumer.measure(url, n, False)
                return
        raise SystemExit(f"no consumer named {name!r} for {protocol}")
    finally:
        await consumers.aclose()


async def _profile(consumers: list[Consumer], name: str, url: str, n: int) -> None:
    """Run ``name`` once per protocol under cProfile and print where the time goes."""
    for consumer in consumers:
        if consumer.name != name:
            continue
        await _run_once(consumer, url, 1_000, check=True)
        profiler = cProfile.Profile()
        profiler.enable()
        elapsed = await _run_once(consumer, url, n, check=True)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        print(
            f"\n### cProfile: {name}, {consumer.protocol}, {size_label(n)} chunks "
            f"({elapsed * 1e6 / n:.1f} µs/chunk with the profiler on)\n"
        )
        print(out.getvalue())


def _report(consumers: list[Consumer], sizes: list[int], protocols: list[Protocol]) -> None:
    for protocol in protocols:
        rows: list[list[str]] = []
        for consumer in (c for c in consumers if c.protocol == protocol):
            for n in sizes:
                if n not in consumer.samples:
                    continue
                s = stats(consumer.samples[n])
                rows.append(
                    [
                        consumer.name,
                        size_label(n),
                        fmt_us(s.median / n),
                        fmt_us(s.best / n),
                        fmt_rate(n / s.median),
                        str(s.runs),
                    ]
                )
        style = "OpenAI chat.completion.chunk" if protocol == "openai" else "Anthropic"
        print_table(
            f"{style} stream over loopback",
            ["consumer", "chunks", "µs/chunk (median)", "µs/chunk (best)", "chunks/s", "runs"],
            rows,
        )
    _summary(consumers, sizes, protocols)


def _summary(consumers: list[Consumer], sizes: list[int], protocols: list[Protocol]) -> None:
    def median(name: str, protocol: Protocol, n: int) -> Stats | None:
        for c in consumers:
            if c.name == name and c.protocol == protocol and n in c.samples:
                return stats(c.samples[n])
        return None

    rows: list[list[str]] = []
    for protocol in protocols:
        sdk_name = "openai SDK" if protocol == "openai" else "anthropic SDK"
        for n in sizes:
            names = (OURS, sdk_name, FLOOR, NODE, OURS_HTTPX, NODE16)
            ours, sdk, floor, node, on_httpx, node16 = (median(x, protocol, n) for x in names)
            if ours is None:
                continue
            rows.append(
                [
                    f"{protocol} {size_label(n)}",
                    fmt_us(ours.median / n),
                    fmt_us(sdk.median / n) if sdk else "–",
                    f"{sdk.median / ours.median:.2f}×" if sdk else "–",
                    fmt_us(node.median / n) if node else "–",
                    f"{ours.median / node.median:.2f}×" if node else "–",
                    fmt_us(floor.median / n) if floor else "–",
                    f"{ours.median / floor.median:.2f}×" if floor else "–",
                    fmt_us(on_httpx.median / n) if on_httpx else "–",
                    f"{on_httpx.median / node.median:.2f}×" if on_httpx and node else "–",
                    fmt_us(node16.median / n) if node16 else "–",
                    f"{ours.median / node16.median:.2f}×" if node16 else "–",
                ]
            )
    if not rows:
        return
    print_table(
        "pi_notebook against the SDK, pi-ai and the floor (medians)",
        [
            "stream",
            "ours µs",
            "SDK µs",
            "SDK ÷ ours",
            "pi-ai (node) µs",
            "ours ÷ pi-ai",
            "floor µs",
            "ours ÷ floor",
            "ours (httpx) µs",
            "that ÷ pi-ai",
            "pi-ai 1.6 µs",
            "ours ÷ pi-ai 1.6",
        ],
        rows,
        note="SDK ÷ ours > 1 means pi_notebook is faster. Linear scaling: µs/chunk stays flat "
        "from 10k to 1M. 'ours': the default transport (aiohttp's parser under httpx's API); "
        "'ours (httpx)': the same run on httpx's own transport (a plain client as http_client).",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Streaming layer: pi_notebook vs the official SDKs vs raw httpx, same bytes."
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: [parse_size(x) for x in s.split(",")],
        default=[10_000, 100_000, 1_000_000],
        help="comma-separated chunk counts (default: 10k,100k,1M)",
    )
    parser.add_argument(
        "--protocol",
        type=lambda s: [p.strip() for p in s.split(",")],
        default=["openai", "anthropic"],
        help="openai, anthropic or both (default)",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions below 1M (default 3)")
    parser.add_argument("--reps-large", type=int, default=1, help="repetitions at ≥ 1M (default 1)")
    parser.add_argument(
        "--sdk-1m",
        action="store_true",
        help="also run the SDKs, the bytes-only reader and pi-ai at ≥ 1M (slow)",
    )
    parser.add_argument(
        "--only",
        type=lambda s: [x.strip() for x in s.split(",")],
        default=[],
        help="comma-separated consumer names to run (e.g. 'pi_notebook,httpx+sse+json')",
    )
    parser.add_argument(
        "--profile", metavar="CONSUMER", help="run CONSUMER once under cProfile (first size)"
    )
    parser.add_argument(
        "--no-node", action="store_true", help="leave out pi-ai (node, both) even when installed"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every run")
    parser.add_argument(
        "--instructions",
        metavar="CONSUMERS",
        type=lambda s: [x.strip() for x in s.split(",")],
        help="comma-separated consumers: count instructions per chunk under callgrind instead",
    )
    parser.add_argument("--read-once", metavar="CONSUMER", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for protocol in args.protocol:
        if protocol not in ("openai", "anthropic"):
            parser.error(f"unknown protocol {protocol!r}: use openai and/or anthropic")
    if args.read_once:
        if not args.url or not args.n or len(args.protocol) != 1:
            parser.error("--read-once needs --url, --n and one --protocol")
        asyncio.run(_read_once(args.read_once, args.protocol[0], args.url, args.n))
        return
    if args.instructions:
        _instructions(args.instructions, args.protocol)
        return
    print(
        describe_environment(
            ["pydantic", "httpx", "httpx-sse", "aiohttp", "httpx-aiohttp", "openai", "anthropic"]
        )
    )
    started = time.perf_counter()
    asyncio.run(run(args))
    print(f"\n(whole run: {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
