"""Server-sent events from the bytes of a response body.

The framing is httpx-sse's (the WHATWG event-stream rules: lines end at CR, LF or CRLF only, so a
U+2028 inside a JSON payload never splits it; comments skipped; ``data`` lines joined with LF; an
event is dispatched at a blank line; ``id`` persists), but the work is done on bytes, a network
read at a time: one ``split`` per read instead of a text decode, a line decoder and a generator
step per line. Only field values are decoded (UTF-8, invalid bytes replaced, as httpx's text
decoding does); LF and CR never occur inside a UTF-8 sequence, so decoding per line gives the
same text as decoding the whole body.

Most reads are whole events: a server flushes one event per HTTP chunk, and httpx hands each chunk
over on its own. ``feed`` takes those on a short path (one ``split`` on the blank lines, a prefix
test per event) whenever nothing is pending; anything else — a CR, a comment, an ``id``, a
``data`` line without its space, an event cut across reads — goes through the line-by-line rules.
"""

from __future__ import annotations

import contextlib
from typing import Final

__all__ = ["SSEDecoder", "ServerSentEvent"]


class ServerSentEvent:
    """One event: ``event`` ("message" if the stream named none), ``data``, ``id``, ``retry``."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(
        self, event: str = "", data: str = "", id: str = "", retry: int | None = None
    ) -> None:
        self.event = event or "message"
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r})"


_DATA: Final = b"data"
_EVENT: Final = b"event"
_COLON: Final = 58  # ord(":")
_BLANK: Final = b"\n\n"
_DATA_SP: Final = b"data: "
_EVENT_SP: Final = b"event: "
_CR: Final = 13
_LF: Final = 10


class SSEDecoder:
    """Feed it the body's bytes as they arrive (``feed``), then ``finish()`` at the end; each
    returns the events completed by that input, in order."""

    __slots__ = (
        "_clean",
        "_data",
        "_event",
        "_id",
        "_names",
        "_partial",
        "_retry",
        "_trailing_cr",
    )

    def __init__(self) -> None:
        self._clean = True
        """Nothing pending: no partial line, no CR, no field of an undispatched event, no id."""
        self._partial: list[bytes] = []
        """The start of a line whose end has not arrived yet."""
        self._trailing_cr = False
        """The last read ended in CR: it may be the first half of a CRLF."""
        self._event: bytes = b""
        self._data: list[bytes] = []
        self._id = ""
        self._retry: int | None = None
        self._names: dict[bytes, str] = {}
        """Decoded event names (a stream repeats a handful of them)."""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        # ``13 in`` and ``find(10)``: an int needle costs a tenth of a bytes one (no buffer).
        if self._clean and chunk[-2:] == _BLANK and _CR not in chunk:
            end = len(chunk) - 2
            first = chunk.find(_LF)
            if first == end:
                if chunk.startswith(_DATA_SP):  # one ``data: `` line: OpenAI's chunks
                    return [ServerSentEvent("message", chunk[6:end].decode("utf-8", "replace"))]
            elif (
                chunk.find(_LF, first + 1) == end
                and chunk.startswith(_EVENT_SP)
                and chunk.startswith(_DATA_SP, first + 1)
            ):  # ``event: `` then ``data: ``: Anthropic's events
                raw = chunk[7:first]
                name = self._names.get(raw) or self._name(raw)
                return [ServerSentEvent(name, chunk[first + 7 : end].decode("utf-8", "replace"))]
            return self._whole_events(chunk)
        events = self._feed_lines(chunk)
        self._clean = not (
            self._partial
            or self._trailing_cr
            or self._data
            or self._event
            or self._id
            or self._retry is not None
        )
        return events

    def _whole_events(self, chunk: bytes) -> list[ServerSentEvent]:
        """``chunk`` ends at a blank line and holds no CR, and nothing is pending: split it into
        its events at the blank lines. An event of one ``data: `` line, optionally after one
        ``event: `` line, is built directly (what the APIs send); from the first other one on,
        the rest of the chunk goes through ``_lines``."""
        events: list[ServerSentEvent] = []
        blocks = chunk.split(_BLANK)
        blocks.pop()  # the empty end after the last blank line
        for i, block in enumerate(blocks):
            if block.startswith(_DATA_SP):
                if _LF not in block:
                    events.append(ServerSentEvent("message", block[6:].decode("utf-8", "replace")))
                    continue
            elif block.startswith(_EVENT_SP):
                name, _, data = block.partition(b"\n")
                if data.startswith(_DATA_SP) and _LF not in data:
                    events.append(
                        ServerSentEvent(self._name(name[7:]), data[6:].decode("utf-8", "replace"))
                    )
                    continue
            lines = _BLANK.join(blocks[i:]).split(b"\n")
            lines.append(b"")
            events += self._lines(lines)
            self._clean = not self._id  # ``_lines`` ended at a blank line: only an id persists
            break
        return events

    def _feed_lines(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._trailing_cr:
            chunk = b"\r" + chunk
            self._trailing_cr = False
        if chunk.endswith(b"\r"):
            self._trailing_cr = True
            chunk = chunk[:-1]
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        partial = self._partial
        if len(lines) == 1:
            if chunk:
                partial.append(chunk)
            return []
        if partial:
            partial.append(lines[0])
            lines[0] = b"".join(partial)
            partial.clear()
        last = lines.pop()
        if last:
            partial.append(last)
        return self._lines(lines)

    def finish(self) -> list[ServerSentEvent]:
        """The end of the body: a CR it ended with ends a line; an unfinished event is dropped."""
        if not self._partial and not self._trailing_cr:
            return []
        lines = [b"".join(self._partial)]
        self._partial.clear()
        self._trailing_cr = False
        events = self._lines(lines)
        self._clean = False  # fed after its end: whatever follows takes the careful path
        return events

    def _lines(self, lines: list[bytes]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data or self._event or self._id or self._retry is not None:
                    events.append(self._dispatch())
                    data = self._data
                continue
            if line[0] == _COLON:
                continue  # a comment
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == _DATA:
                data.append(value)
            elif name == _EVENT:
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self._id = value.decode("utf-8", "replace")
            elif name == b"retry":
                with contextlib.suppress(ValueError):
                    self._retry = int(value.decode("utf-8", "replace"))
        return events

    def _dispatch(self) -> ServerSentEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = ServerSentEvent(self._name(self._event), text, self._id, self._retry)
        self._event = b""
        self._data = []
        self._retry = None
        return event

    def _name(self, raw: bytes) -> str:
        """The decoded event name (a stream repeats a handful of them: decoded once each)."""
        name = self._names.get(raw)
        if name is None:
            name = raw.decode("utf-8", "replace")
            if len(self._names) < 64:
                self._names[raw] = name
        return name
