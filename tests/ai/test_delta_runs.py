"""Queued deltas wait as runs (one record per block and snapshot), and whoever consumes the stream
sees exactly the events a stream of one object per delta would give."""

from __future__ import annotations

import gc
from collections import deque
from typing import Any

from pi_notebook.ai import AssistantMessageEventStream, MessageBuilder, Model
from pi_notebook.ai.event_stream import DeltaRun

MODEL = Model(id="m", api="test", provider="test")


def _view(event: Any) -> tuple[Any, ...]:
    if event.type == "done":  # its message's timestamp differs from one builder to the next
        return (type(event), event.reason, [b.model_dump() for b in event.message.content])
    partial = event.partial if hasattr(event, "partial") and event.type != "done" else None
    blocks = partial.content if partial else []
    text = [getattr(b, "text", getattr(b, "thinking", None)) for b in blocks] if partial else None
    return (type(event), event.model_dump(exclude={"partial"}), text)


def _script(out: MessageBuilder) -> None:
    out.start()
    t = out.text_start()
    for piece in "abc":
        out.text_delta(t, piece)
    k = out.thinking_start()
    out.thinking_delta(k, "hm")
    out.text_delta(t, "d")  # another block in between: a new run
    out.set_usage(input=1, output=2)
    out.text_delta(t, "e")  # usage changed the snapshot: a new run
    out.text_delta(t, "f")
    out.thinking_end(k)
    out.text_end(t)
    out.done("stop")


def test_a_block_s_consecutive_deltas_are_one_queued_record() -> None:
    stream = AssistantMessageEventStream()
    out = MessageBuilder(MODEL, stream)
    i = out.text_start()
    for _ in range(1000):
        out.text_delta(i, "x")
    queued = list(deque.__iter__(stream._backlog))
    assert [type(q).__name__ for q in queued] == ["StartEvent", "TextStartEvent", "DeltaRun"]
    run = queued[-1]
    assert isinstance(run, DeltaRun) and (run.first, run.last) == (1, 1000)
    assert len(list(stream._backlog)) == 1002


async def test_any_mix_of_async_for_and_next_batch_gives_the_same_events() -> None:
    reference = AssistantMessageEventStream()
    _script(MessageBuilder(MODEL, reference))
    expected = [_view(e) for e in reference._backlog]  # checked by hand below
    assert len(expected) == 13
    assert [v[2] for v in expected if v[0].__name__ == "TextDeltaEvent"] == [
        ["a"],
        ["ab"],
        ["abc"],
        ["abcd", "hm"],
        ["abcde", "hm"],
        ["abcdef", "hm"],
    ]
    for split in range(len(expected) + 1):
        stream = AssistantMessageEventStream()
        _script(MessageBuilder(MODEL, stream))
        seen: list[Any] = []
        while len(seen) < split:
            seen.append(_view(await anext(stream)))
        batch = await stream.next_batch()
        assert len(batch) == len(expected) - split
        seen.extend(_view(e) for e in batch)
        assert seen == expected


async def test_deltas_after_a_hand_over_go_to_the_next_batch() -> None:
    stream = AssistantMessageEventStream()
    out = MessageBuilder(MODEL, stream)
    i = out.text_start()
    out.text_delta(i, "a")
    out.text_delta(i, "b")
    first = await stream.next_batch()
    out.text_delta(i, "c")  # the handed-over run must not grow
    assert [e.type for e in first] == ["start", "text_start", "text_delta", "text_delta"]
    assert [e.delta for e in first if e.type == "text_delta"] == ["a", "b"]
    out.done("stop")
    second = [e for e in await stream.next_batch()]
    assert [e.type for e in second] == ["text_delta", "text_end", "done"]
    assert second[0].delta == "c" and second[0].partial.text == "abc"


async def test_deltas_after_the_consumer_took_the_live_run_start_a_new_one() -> None:
    """The builder raises a live run's count itself; once ``anext`` took the run whole, or any
    other event was queued after it, the next delta must be queued afresh (none lost)."""
    stream = AssistantMessageEventStream()
    out = MessageBuilder(MODEL, stream)
    i = out.text_start()
    out.text_delta(i, "a")
    taken = [await anext(stream) for _ in range(3)]  # start, text_start, the delta: run gone
    assert [e.type for e in taken] == ["start", "text_start", "text_delta"]
    out.text_delta(i, "b")
    out.text_delta(i, "c")
    out.response_id = "r1"  # a new snapshot: the next delta is a new run
    out.text_delta(i, "d")
    queued = list(deque.__iter__(stream._backlog))
    assert [(q.first, q.last) for q in queued] == [(2, 3), (4, 4)]
    assert not queued[0].live and queued[1].live
    out.text_end(i)  # queued after the run: it is sealed
    assert not queued[1].live
    out.done("stop")
    rest = [e async for e in stream]
    assert [getattr(e, "delta", e.type) for e in rest] == ["b", "c", "d", "text_end", "done"]
    assert [e.partial.text for e in rest[:3]] == ["ab", "abc", "abcd"]
    assert rest[2].partial.response_id == "r1" and rest[0].partial.response_id is None


async def test_a_finished_reply_leaves_no_reference_cycle() -> None:
    """Layouts and the live run refer back to the builder: once the reply is done nothing may
    keep a cycle alive for the cyclic GC (it cost a gen-0 pass every few turns of a run)."""
    gc.collect()
    gc.disable()
    try:
        stream = AssistantMessageEventStream()
        out = MessageBuilder(MODEL, stream)
        i = out.text_start()
        out.text_delta(i, "a")
        out.text_delta(i, "b")
        out.text_end(i)
        k = out.toolcall_start("c1", "noop")
        out.toolcall_delta(k, "{}")
        out.toolcall_end(k)
        out.done("toolUse")
        seen = [e.partial.text for e in await stream.next_batch() if e.type != "done"]
        assert seen[-1] == "ab"
        del stream, out, seen
        assert gc.collect() == 0
    finally:
        gc.enable()
