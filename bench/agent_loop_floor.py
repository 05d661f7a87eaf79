"""The floor of the agent-loop workloads in Python: a bare asyncio loop with events as dicts.

The same scripted workloads as ``bench.agent_loop_bench`` (``bench.peers_agent_loop.WORKLOADS``),
producing the same agent events in pi's order and number (``agent_start``, ``turn_start``,
``message_start`` / ``message_update`` per stream event / ``message_end``, four tool events a call,
``turn_end``, ``agent_end``) to one subscriber, with one producer task a reply that hands its
events over every ``CHUNK_DELTAS`` deltas. Nothing else: no typed messages or events, no partial
snapshots, no state reducer, no hooks, queues, abort signals, argument validation, output bounds
or back-pressure. Read it as the distance between what CPython + asyncio must do for these
events and what the loop's features cost on top (``--bytecodes`` in ``agent_loop_bench`` says
where), like ``stream_bench``'s httpx+sse+json floor.

    python3 -m bench.agent_loop_floor --workloads turns_1k,text_100k --reps 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import Any

from bench.common import describe_environment, fmt_int, fmt_ms, print_table, stats
from bench.peers_agent_loop import (
    CHUNK_DELTAS,
    WORKLOADS,
    Run,
    Workload,
    closing_text,
    parse_workloads,
)
from bench.sse_server import DELTA_TEXTS

__all__ = ["run_floor"]

Event = dict[str, Any]


class _Reply:
    """One reply's events, produced by a task and taken by the loop as they come."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.finished = False
        self.waiter: asyncio.Future[None] | None = None

    def push(self, event: Event, last: bool = False) -> None:
        self.events.append(event)
        self.finished = self.finished or last
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def take(self) -> list[Event]:
        while not self.events and not self.finished:
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        taken, self.events = self.events, []
        return taken


async def _produce(reply: _Reply, turn: int, deltas: int, tools: int) -> None:
    message: Event = {
        "role": "assistant",
        "content": [],
        "stopReason": "toolUse" if tools else "stop",
    }
    reply.push({"type": "start", "partial": message})
    if deltas:
        block = {"type": "text", "text": ""}
        message["content"].append(block)
        reply.push({"type": "text_start", "contentIndex": 0, "partial": message})
        parts: list[str] = []
        for i in range(deltas):
            delta = DELTA_TEXTS[i % len(DELTA_TEXTS)]
            parts.append(delta)
            reply.push(
                {"type": "text_delta", "contentIndex": 0, "delta": delta, "partial": message}
            )
            if i % CHUNK_DELTAS == CHUNK_DELTAS - 1:
                await asyncio.sleep(0)
        block["text"] = "".join(parts)
        reply.push({"type": "text_end", "contentIndex": 0, "partial": message})
    for t in range(tools):
        call = {"type": "toolCall", "id": f"call_{turn}_{t}", "name": "noop", "arguments": {}}
        message["content"].append(call)
        index = len(message["content"]) - 1
        reply.push({"type": "toolcall_start", "contentIndex": index, "partial": message})
        reply.push(
            {"type": "toolcall_delta", "contentIndex": index, "delta": "{}", "partial": message}
        )
        reply.push(
            {"type": "toolcall_end", "contentIndex": index, "toolCall": call, "partial": message}
        )
    reply.push({"type": "done", "message": message}, last=True)


async def _noop(arguments: dict[str, Any]) -> Event:
    return {"content": [{"type": "text", "text": "ok"}], "details": {}}


async def _timed_run(workload: Workload) -> tuple[Run, list[Event]]:
    """One timed run of ``workload``; returns it and the transcript."""
    count = 0
    transcript: list[Event] = []

    def emit(event: Event) -> None:
        nonlocal count
        count += 1
        if event["type"] == "message_end":
            transcript.append(event["message"])

    def whole(message: Event) -> None:
        emit({"type": "message_start", "message": message})
        emit({"type": "message_end", "message": message})

    gc.collect()
    start = time.perf_counter()
    emit({"type": "agent_start"})
    emit({"type": "turn_start"})
    whole({"role": "user", "content": "Go."})
    turn = 0
    while True:
        if turn:
            emit({"type": "turn_start"})
        closing = workload.tools > 0 and turn >= workload.turns
        reply = _Reply()
        producer = asyncio.get_running_loop().create_task(
            _produce(
                reply, turn, 1 if closing else workload.deltas, 0 if closing else workload.tools
            )
        )
        final: Event | None = None
        while final is None:
            for event in await reply.take():
                kind = event["type"]
                if kind == "start":
                    emit({"type": "message_start", "message": event["partial"]})
                elif kind == "done":
                    final = event["message"]
                else:
                    emit({"type": "message_update", "assistantMessageEvent": event})
        await producer
        emit({"type": "message_end", "message": final})
        calls = [block for block in final["content"] if block["type"] == "toolCall"]
        results: list[Event] = []
        if calls:
            for call in calls:
                emit(
                    {
                        "type": "tool_execution_start",
                        "toolCallId": call["id"],
                        "args": call["arguments"],
                    }
                )
            if workload.execution == "parallel" and len(calls) > 1:
                outcomes = await asyncio.gather(*(_noop(call["arguments"]) for call in calls))
            else:
                outcomes = [await _noop(call["arguments"]) for call in calls]
            for call, outcome in zip(calls, outcomes, strict=True):
                emit({"type": "tool_execution_end", "toolCallId": call["id"], "result": outcome})
            for call, outcome in zip(calls, outcomes, strict=True):
                result = {"role": "toolResult", "toolCallId": call["id"], **outcome}
                whole(result)
                results.append(result)
        emit({"type": "turn_end", "message": final, "toolResults": results})
        turn += 1
        if not results:
            break
    emit({"type": "agent_end", "messages": list(transcript)})
    seconds = time.perf_counter() - start
    return Run(seconds, count), transcript


async def run_floor(workload: Workload) -> Run:
    """One timed run of ``workload``, checked like the other systems' runs."""
    run, transcript = await _timed_run(workload)
    expected = 2 + workload.turns * (1 + workload.tools) if workload.tools else 2
    last = transcript[-1]
    text = "".join(b["text"] for b in last["content"] if b["type"] == "text")
    if len(transcript) != expected or text != closing_text(workload):
        raise RuntimeError(f"{workload.key} ran wrongly: {len(transcript)} messages")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=parse_workloads, default=["turns_1k", "text_100k"])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    print(describe_environment())
    rows = []
    for key in args.workloads:
        asyncio.run(run_floor(WORKLOADS[key]))  # warm-up
        runs = [asyncio.run(run_floor(WORKLOADS[key])) for _ in range(args.reps)]
        s = stats([r.seconds for r in runs])
        rows.append(
            [WORKLOADS[key].label, fmt_ms(s.median), fmt_ms(s.best), fmt_int(runs[-1].events)]
        )
    print_table(
        "Python floor of the agent-loop workloads",
        ["workload", "ms (median)", "ms (best)", "events"],
        rows,
    )


if __name__ == "__main__":
    main()
