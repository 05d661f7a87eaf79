"""Session files: open + build the context of generated sessions, and append throughput.

Files of 1k, 10k and 100k entries (a linear conversation of user / assistant tool call / tool
result / assistant reply turns, about 700 bytes an entry as in pi's own files) are written once,
then each repetition times, side by side on the same file:

- ``pi_notebook``: ``Session.open(path)`` (read, check every line's JSON and structure, index;
  entries are built when first read) and
  ``build_context()`` with every message of the context read (the whole branch: every
  message is in the context; a context reads its messages on first use);
- ``pi``: pi-coding-agent 0.73.1's ``SessionManager.open`` + ``buildSessionContext`` in node
  (``bench/peers/session_manager.mjs``; skipped when the peers are not installed);
- ``jiter floor``: ``pydantic_core.from_json`` of every line into plain dicts, GC paused (parsing
  only, no validation, no index: the floor for any Python reader).

Then the same for a pi 1.6-style session (``--sizes16``, default 1k, 10k and 100k): a leading
system message with sections and tools, a section/tool patch every 50 turns, a ``usage`` entry
every 10 turns and a ``context_edit`` hiding an old tool result every 20, side by side with pi
1.6.0's ``SessionManager`` (run with the Node 22 installed in tests/golden/pi-1.6/sessions; the
bench runs ``npm ci`` there once if it is missing, ``--no-install`` skips pi instead).

Then appends: ``append_message`` to a JSONL file (one locked ``write`` per entry, flushed to the
OS), the same with ``fsync=True``, and to the in-memory store.

    python3 -m bench.session_bench                    # 1k, 10k, 100k; about two minutes
    python3 -m bench.session_bench --sizes 1k,10k --reps 5
    python3 -m bench.session_bench --profile 100k     # cProfile of one open + build_context
    python3 -m bench.session_bench --instructions 10k # callgrind: instructions per entry
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic_core import from_json

from bench.common import (
    PI16,
    PI16_NODE,
    callgrind_instructions,
    describe_environment,
    fmt_ms,
    fmt_rate,
    fmt_us,
    node_available,
    pi16_available,
    print_table,
    run_node_json,
    stats,
    timed,
)
from bench.stream_bench import parse_size
from pi_notebook.ai import (
    AssistantMessage,
    Cost,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolReference,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.harness import (
    ContextEditEntry,
    InMemorySessionStorage,
    JsonlSessionStorage,
    MessageEntry,
    Session,
    SessionEntry,
    SessionHeader,
    UsageEntry,
)
from pi_notebook.harness.entries import iso_now, new_id
from pi_notebook.harness.jsonl import gc_paused


def source_line(i: int) -> str:
    return f"export function main{i}() {{ console.log('hello, world'); }}  // line {i}\n"


def turn_messages(turn: int) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """One turn: user, assistant tool call, tool result, assistant reply (~2.8 kB of JSON)."""
    usage = Usage(
        input=1200 + turn,
        output=40,
        total_tokens=1240 + turn,
        cost=Cost(input=0.0036, output=0.0006000000000000001, total=0.0042),
    )
    common = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    call = ToolCall(id=f"toolu_{turn}", name="read", arguments={"path": f"src/file_{turn}.ts"})
    return [
        UserMessage(
            content=[TextContent(text=f"Turn {turn}: read src/file_{turn}.ts and explain it.")],
            timestamp=1_778_148_000_000 + turn,
        ),
        AssistantMessage(
            content=[ThinkingContent(thinking="I should read the file first."), call],
            usage=usage,
            stop_reason="toolUse",
            timestamp=1_778_148_000_001 + turn,
            **common,
        ),
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name="read",
            content=[TextContent(text="".join(map(source_line, range(12))))],
            details={},
            timestamp=1_778_148_000_002 + turn,
        ),
        AssistantMessage(
            content=[
                TextContent(text=f"src/file_{turn}.ts defines main(), which logs a greeting.")
            ],
            usage=usage,
            stop_reason="stop",
            timestamp=1_778_148_000_003 + turn,
            **common,
        ),
    ]


def generate(path: Path, entries: int) -> None:
    """Write a linear session of ``entries`` message entries with pi_notebook's storage."""
    header = SessionHeader(id=new_id(), timestamp=iso_now(), cwd="/home/user/project")
    records: list[SessionEntry] = []
    parent: str | None = None
    turn = 0
    while len(records) < entries:
        for message in turn_messages(turn)[: entries - len(records)]:
            entry = MessageEntry(
                id=new_id(), parent_id=parent, timestamp=iso_now(), message=message
            )
            records.append(entry)
            parent = entry.id
        turn += 1
    JsonlSessionStorage(path).create(header, records)


def generate_16(path: Path, entries: int) -> int:
    """Write a pi 1.6-style session of about ``entries`` entries; returns its context size."""
    header = SessionHeader(id=new_id(), timestamp=iso_now(), cwd="/home/user/project")
    records: list[SessionEntry] = []
    tools = [
        Tool(name=name, description=f"The {name} tool", parameters={"type": "object"})
        for name in ("read", "bash", "edit", "write")
    ]
    parent: str | None = None
    hidden = 0

    def add(entry: SessionEntry) -> None:
        nonlocal parent
        records.append(entry)
        parent = entry.id

    def base() -> dict[str, object]:
        return {"id": new_id(), "parent_id": parent, "timestamp": iso_now()}

    add(
        MessageEntry(
            **base(),
            message=SystemMessage(
                content="You are a coding agent.",
                sections={"cwd": "Current directory: /home/user/project", "date": "Today."},
                tools_added=tools,
                timestamp=1_778_148_000_000,
            ),
        )
    )
    turn = 0
    results: list[str] = []
    while len(records) < entries:
        if turn and turn % 50 == 0:
            patch = SystemMessage(
                sections={"date": f"Day {turn // 50}."},
                tools_removed=[ToolReference(name="write")],
                tools_added=[tools[3]],
                timestamp=1_778_148_000_000 + turn,
            )
            add(MessageEntry(**base(), message=patch))
        for message in turn_messages(turn):
            add(MessageEntry(**base(), message=message))
            if isinstance(message, ToolResultMessage):
                results.append(records[-1].id)
        if turn % 10 == 9:
            usage = Usage(cache_write=2000, total_tokens=2000, cost=Cost(total=0.0075))
            add(
                UsageEntry(
                    **base(), kind="cache_warm", provider="anthropic", model="m", usage=usage
                )
            )
        if turn % 20 == 19 and len(results) > 5:
            add(ContextEditEntry(**base(), target_id=results[-5], replacement=None))
            hidden += 1
        turn += 1
    JsonlSessionStorage(path).create(header, records)
    messages = sum(1 for r in records if isinstance(r, MessageEntry))
    return messages - hidden


def run_pi16(path: Path, reps: int) -> dict[str, object]:
    completed = subprocess.run(
        [str(PI16_NODE), "--expose-gc", "--max-old-space-size=4096", "open_bench.mjs", str(path),
         "--reps", str(reps)],
        capture_output=True, text=True, timeout=1800, check=True, cwd=PI16,
    )  # fmt: skip
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def measure_16(sizes: list[int], reps: int, folder: Path, install: bool) -> None:
    with_pi = pi16_available(install)
    rows = []
    for size in sizes:
        path = folder / f"session16-{size}.jsonl"
        _, expected = timed(lambda path=path, size=size: generate_16(path, size))  # type: ignore[misc]
        megabytes = path.stat().st_size / 1e6
        entries = path.read_bytes().count(b"\n") - 1
        print(f"generated a 1.6 session of {entries:,} entries ({megabytes:.1f} MB)", flush=True)
        ours_open, ours_build, ours_total = [], [], []
        messages = 0
        for _ in range(reps):
            gc.collect()
            opened, built, messages = open_and_build(path)
            ours_open.append(opened)
            ours_build.append(built)
            ours_total.append(opened + built)
        assert messages == expected, (messages, expected)
        pi_cells = ["–", "–", "–", "–"]
        if with_pi:
            pi = run_pi16(path, reps)
            assert pi["context_messages"] == messages, (pi["context_messages"], messages)
            ms = {k: [t / 1e3 for t in pi[k]] for k in ("open_ms", "build_ms", "total_ms")}  # type: ignore[attr-defined]
            pi_total = stats(ms["total_ms"]).median
            pi_cells = [
                fmt_ms(stats(ms["open_ms"]).median),
                fmt_ms(stats(ms["build_ms"]).median),
                fmt_ms(pi_total),
                f"{pi_total / stats(ours_total).median:.1f}×",
            ]
        rows.append(
            [
                f"{entries:,}",
                f"{megabytes:.1f}",
                f"{messages:,}",
                fmt_ms(stats(ours_open).median),
                fmt_ms(stats(ours_build).median),
                fmt_ms(stats(ours_total).median),
                *pi_cells,
            ]
        )
    print_table(
        "pi 1.6-style session: open + build_context + reading its messages (ms, median), "
        "pi 1.6.0 side by side",
        ["entries", "MB", "context", "ours open", "ours build", "ours total", "pi open",
         "pi build", "pi total", "pi ÷ ours"],
        rows,
        note=(
            f"{reps} repetitions. System messages (patches every 50 turns), usage entries every "
            "10 turns, a context edit hiding a tool result every 20. pi: pi-coding-agent 1.6.0 "
            "SessionManager.open + buildSessionContext on Node 22; both give the same number of "
            "context messages (checked)."
        ),
    )  # fmt: skip


def open_and_build(path: Path) -> tuple[float, float, int]:
    """``(open seconds, build seconds, context messages)``."""
    opened, session = timed(lambda: Session.open(path))
    built, messages = timed(lambda: list(session.build_context().messages))
    return opened, built, len(messages)


def jiter_floor(path: Path) -> float:
    def parse() -> int:
        with gc_paused():
            return len([from_json(line) for line in path.read_bytes().split(b"\n")[:-1]])

    return timed(parse)[0]


def measure(sizes: list[int], reps: int, folder: Path) -> None:
    with_node = node_available()
    rows = []
    for size in sizes:
        path = folder / f"session-{size}.jsonl"
        seconds, _ = timed(lambda path=path, size=size: generate(path, size))  # type: ignore[misc]
        megabytes = path.stat().st_size / 1e6
        print(f"generated {size:,} entries ({megabytes:.1f} MB) in {seconds:.1f} s", flush=True)
        ours_open, ours_build, ours_total, floor = [], [], [], []
        messages = 0
        for _ in range(reps):
            gc.collect()
            opened, built, messages = open_and_build(path)
            ours_open.append(opened)
            ours_build.append(built)
            ours_total.append(opened + built)
            gc.collect()
            floor.append(jiter_floor(path))
        assert messages == size, f"context has {messages} messages, expected {size}"
        pi_cells = ["–", "–", "–", "–"]
        if with_node:
            pi = run_node_json(
                "session_manager.mjs", [str(path), "--reps", str(reps)], timeout=1800
            )
            assert pi["context_messages"] == size, pi
            pi_total = stats([t / 1e3 for t in pi["total_ms"]]).median
            pi_cells = [
                fmt_ms(stats([t / 1e3 for t in pi["open_ms"]]).median),
                fmt_ms(stats([t / 1e3 for t in pi["build_ms"]]).median),
                fmt_ms(pi_total),
                f"{pi_total / stats(ours_total).median:.1f}×",
            ]
        rows.append(
            [
                f"{size:,}",
                f"{megabytes:.1f}",
                fmt_ms(stats(ours_open).median),
                fmt_ms(stats(ours_build).median),
                fmt_ms(stats(ours_total).median),
                fmt_ms(stats(ours_total).best),
                *pi_cells,
                fmt_ms(stats(floor).median),
            ]
        )
    print_table(
        "Open + build_context + reading its messages (ms, median of repetitions)",
        [
            "entries",
            "MB",
            "ours open",
            "ours build",
            "ours total",
            "ours best",
            "pi open",
            "pi build",
            "pi total",
            "pi ÷ ours",
            "jiter floor",
        ],
        rows,
        note=(
            f"{reps} repetitions. ours: Session.open checks every line's JSON and structure "
            "(pydantic-core from bytes) and indexes the tree; build: build_context and reading "
            "every message of the context (each built from its line on this first read). "
            "jiter floor: from_json of every line into dicts (no validation, no index)."
        ),
    )


def measure_appends(count: int, folder: Path) -> None:
    messages = [m for turn in range(count // 4 + 1) for m in turn_messages(turn)][:count]
    rows = []
    cases: list[tuple[str, Callable[[], Session], int]] = [
        (
            "JSONL file (flushed to the OS)",
            lambda: Session.create(folder / "appends.jsonl", cwd="/p"),
            count,
        ),
        (
            "JSONL file, fsync=True",
            lambda: Session.create(JsonlSessionStorage(folder / "fsync.jsonl", fsync=True)),
            max(1, count // 10),
        ),
        ("in memory", lambda: Session.create(InMemorySessionStorage(), cwd="/p"), count),
    ]
    for name, make, n in cases:
        session = make()
        gc.collect()
        seconds, _ = timed(lambda s=session, n=n: [s.append_message(m) for m in messages[:n]])  # type: ignore[misc]
        rows.append([name, f"{n:,}", fmt_us(seconds / n), fmt_rate(n / seconds)])
    print_table(
        "Appends (append_message of typical messages)",
        ["storage", "appends", "µs/append", "appends/s"],
        rows,
        note="Each JSONL append: validate the entry, encode pi's JSON, open, lock, write, close.",
    )


def profile(size: int, folder: Path) -> None:
    path = folder / f"session-{size}.jsonl"
    generate(path, size)
    profiler = cProfile.Profile()
    profiler.enable()
    open_and_build(path)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
    print(out.getvalue())


def instructions(size: int, folder: Path) -> None:
    """Instructions per entry of one ``Session.open`` + ``build_context`` of each style, counted
    by callgrind: a child that opens the file once against one that does not (``--open-once``),
    so imports and start-up cancel out. Unlike timings, the counts barely move with the load
    of the machine (page faults and cache misses are not in them)."""
    rows = []
    for style, make in (("0.73-style", generate), ("1.6-style", generate_16)):
        path = folder / f"{style}-{size}.jsonl"
        make(path, size)
        entries = path.read_bytes().count(b"\n") - 1
        totals = []
        for times in (0, 1):
            module = ["bench.session_bench", "--open-once", str(path), "--times", str(times)]
            totals.append(callgrind_instructions(module, style))
        per_entry = (totals[1] - totals[0]) / entries
        rows.append([style, f"{entries:,}", f"{per_entry / 1000:,.1f} k"])
        print(f"  {style:11} {per_entry:10,.0f} instructions/entry", flush=True)
    print_table(
        "Instructions per entry of Session.open + build_context (callgrind)",
        ["session", "entries", "instructions/entry"],
        rows,
        note="(I(one open) − I(none)) ÷ entries; the process exits without tearing down.",
    )


def _open_once(path: Path, times: int) -> None:
    """The child of ``--instructions``: open and build ``times`` times, then leave at once."""
    kept = []
    for _ in range(times):
        session = Session.open(path)
        kept.append((session, list(session.build_context().messages)))
    sys.stdout.flush()
    os._exit(0)  # no teardown of the session in the count


def main() -> None:
    parser = argparse.ArgumentParser(description="Session files: open + build context; appends.")
    parser.add_argument(
        "--sizes",
        type=lambda s: [parse_size(x) for x in s.split(",")],
        default=[1_000, 10_000, 100_000],
        help="comma-separated entry counts (default: 1k,10k,100k)",
    )
    parser.add_argument(
        "--sizes16",
        type=lambda s: [parse_size(x) for x in s.split(",")] if s else [],
        default=[1_000, 10_000, 100_000],
        help="entry counts of the pi 1.6-style sessions (default: 1k,10k,100k; '' skips them)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="do not npm ci pi 1.6 when it is missing"
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions per size (default 3)")
    parser.add_argument("--appends", type=parse_size, default=2_000, help="appends (default 2k)")
    parser.add_argument("--profile", type=parse_size, metavar="SIZE", help="profile one size")
    parser.add_argument(
        "--instructions",
        type=parse_size,
        metavar="SIZE",
        help="count instructions per entry under callgrind at one size (both styles)",
    )
    parser.add_argument("--open-once", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--times", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open_once:
        _open_once(args.open_once, args.times)
    print(describe_environment(["pydantic", "pydantic-core"]))
    with tempfile.TemporaryDirectory(prefix="session-bench-") as folder:
        if args.profile:
            profile(args.profile, Path(folder))
            return
        if args.instructions:
            instructions(args.instructions, Path(folder))
            return
        measure(args.sizes, args.reps, Path(folder))
        if args.sizes16:
            measure_16(args.sizes16, args.reps, Path(folder), not args.no_install)
        measure_appends(args.appends, Path(folder))


if __name__ == "__main__":
    main()
