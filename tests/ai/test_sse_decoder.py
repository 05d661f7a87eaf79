"""The bytes-level SSE decoder gives exactly the events httpx-sse gives for the same body, however
the body is cut into reads (httpx-sse, a maintained implementation of the same rules, is the
reference)."""

from __future__ import annotations

import codecs
import itertools

import pytest
from httpx_sse._decoders import SSEDecoder as ReferenceDecoder
from httpx_sse._decoders import SSELineDecoder
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pi_notebook.ai.sse import SSEDecoder

Event = tuple[str, str, str, int | None]


def reference_per_read(chunks: list[bytes]) -> list[list[Event]]:
    """httpx's incremental UTF-8 text decoding, then httpx-sse's line and event decoders: the
    events each read completes, and last those the end of the body completes."""
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, events = SSELineDecoder(), ReferenceDecoder()
    out: list[list[Event]] = []

    def take(line: str) -> None:
        sse = events.decode(line)
        if sse is not None:
            out[-1].append((sse.event, sse.data, sse.id, sse.retry))

    for chunk in chunks:
        out.append([])
        decoded = text.decode(chunk)
        if decoded:
            for line in lines.decode(decoded):
                take(line)
    out.append([])
    tail = text.decode(b"", final=True)
    if tail:
        for line in lines.decode(tail):
            take(line)
    for line in lines.flush():
        take(line)
    return out


def ours_per_read(chunks: list[bytes]) -> list[list[Event]]:
    decoder = SSEDecoder()
    found = [decoder.feed(chunk) for chunk in chunks] + [decoder.finish()]
    return [[(e.event, e.data, e.id, e.retry) for e in read] for read in found]


def reference(chunks: list[bytes]) -> list[Event]:
    return [event for read in reference_per_read(chunks) for event in read]


def ours(chunks: list[bytes]) -> list[Event]:
    """Our events, after checking that none came out later than httpx-sse gives it.

    It can come out earlier: a CR ends a line as soon as the next byte is not LF, where httpx waits
    for that byte to decode as text (a CR before the first bytes of a UTF-8 sequence)."""
    per_read = ours_per_read(chunks)
    theirs = reference_per_read(chunks)
    for mine, reference_so_far in zip(
        itertools.accumulate(len(read) for read in per_read),
        itertools.accumulate(len(read) for read in theirs),
        strict=True,
    ):
        assert mine >= reference_so_far
    return [event for read in per_read for event in read]


def cut(body: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({p % (len(body) + 1) for p in points} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(edges)]


PIECES = [
    b"data: ",
    b"data:",
    b"event: ",
    b"event:x",
    b"id: ",
    b"id: 7\0",
    b"retry: ",
    b"retry: 1500",
    b": comment",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b" ",
    b":",
    b'{"a": "\\u2028 x"}',
    "é😀\u2028".encode(),
    b"\xe2\x82",  # a truncated UTF-8 sequence
    b"\xff",
    b"message_start",
    b"\xef\xbb\xbfdata: bom",
]


@settings(max_examples=400, deadline=None)
@example([b"data: ", b"\n", b"\r", b"\xef\xbb\xbfdata: bom"], [8, 9, 10])
@given(
    st.lists(st.sampled_from(PIECES), max_size=40),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_same_events_as_httpx_sse_for_any_body_and_any_reads(
    pieces: list[bytes], points: list[int]
) -> None:
    body = b"".join(pieces)
    expected = reference([body])
    assert ours([body]) == expected
    assert ours(cut(body, points)) == expected
    assert ours([body[i : i + 1] for i in range(len(body))]) == expected


def test_a_typical_stream() -> None:
    body = (
        b'event: message_start\ndata: {"a": 1}\n\n'
        b": ping\n\nevent: content_block_delta\r\ndata: line one\r\ndata: line two\r\n\r\n"
        b"data: [DONE]\n\ndata: unfinished"
    )
    assert ours(cut(body, [5, 17, 40, 41, 77])) == [
        ("message_start", '{"a": 1}', "", None),
        ("content_block_delta", "line one\nline two", "", None),
        ("message", "[DONE]", "", None),
    ]


EVENTS = [
    # what the APIs send: the short path
    b'data: {"choices": [{"delta": {"content": "a\\u2028"}}]}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta"}\n\n',
    "data: é😀\u2028\n\n".encode(),
    b"data: \n\n",
    b"event: \ndata: x\n\n",
    b"data: [DONE]\n\n",
    # everything else: the line-by-line rules, mixed into the same reads
    b": ping\n\n",
    b"id: 7\ndata: with an id\n\n",
    b"id: \n\n",
    b"retry: 1500\n\n",
    b"data:no space\n\n",
    b"data: one\ndata: two\n\n",
    b"event: only a name\n\n",
    b"data: a\r\n\r\n",
    b"\n",
    b"\n\n",
    b"event: x\nid: 3\ndata: y\n\n",
    b"event:x\ndata: y\n\n",
    b"data: \xff\xe2\x82\n\n",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(EVENTS), max_size=30),
    st.lists(st.integers(min_value=0, max_value=30), max_size=6),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=4),
)
def test_whole_events_per_read_give_the_reference_events(
    events: list[bytes], groups: list[int], points: list[int]
) -> None:
    """Reads that end at event boundaries (how servers flush) take the short path; a read cut
    mid-event in between sends the decoder back to the careful one and then forward again."""
    body = b"".join(events)
    expected = reference([body])
    edges = sorted({g % (len(events) + 1) for g in groups} | {0, len(events)})
    at_boundaries = [b"".join(events[a:b]) for a, b in itertools.pairwise(edges)]
    assert ours(at_boundaries) == expected
    assert ours([e for e in events]) == expected
    mixed = [piece for read in at_boundaries for piece in cut(read, points)]
    assert ours(mixed) == expected


@pytest.mark.parametrize(
    "reads",
    [
        [b"id: 1\n\n\n"],  # an odd run of LFs after an id: one more (empty) event
        [b"id: 7\ndata: a\n\n", b"\n"],  # a blank line alone in its read
        [b"id: 7\n\n", b"\ndata: b\n", b"\n"],
        [b"data: a\n", b"\n"],  # the blank line begins in one read, ends in the next
        [b"data: a\n", b"\n\n", b"data: b\n\n"],
        [b"data: a", b"\n", b"\n", b"\n"],
        [b": ping\n", b"\n", b"data: c\n\n"],
        [b"data: a\r\n", b"\r\n", b"data: b\n\n", b"data: c\n", b"\n"],  # CR, then no CR
        [b"id: 3\r\n\r\n", b"data: after\n\n", b"\n\n"],
        [b"data: never finished\n"],
        [b"event: x\ndata: " + b"y" * 100_000, b"z" * 100_000 + b"\n\n"],
    ],
)
def test_reads_that_end_lines_where_the_block_split_is_subtle(reads: list[bytes]) -> None:
    assert ours(reads) == reference(reads)
