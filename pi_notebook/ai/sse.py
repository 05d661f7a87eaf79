"""Server-sent events from the bytes of a response body.

The framing is httpx-sse's (the WHATWG event-stream rules: lines end at CR, LF or CRLF only, so a
U+2028 inside a JSON payload never splits it; comments skipped; ``data`` lines joined with LF; an
event is dispatched at a blank line; ``id`` persists), but the work is done on bytes, a network
read at a time: one ``split`` per read instead of a text decode, a line decoder and a generator
step per line. Only field values are decoded (UTF-8, invalid bytes replaced, as httpx's text
decoding does); LF and CR never occur inside a UTF-8 sequence, so decoding per line gives the
same text as decoding the whole body.

Two ways through, one result. A body without CR (what the APIs send) is cut at blank lines: the
complete events of a read are split off in one go (one ``data: `` line, or ``event: `` then
``data: ``, is built directly; any other event goes through the line rules), and the bytes of an
event not finished yet wait, unparsed, for the reads that finish it. A CR anywhere switches to the
line-by-line rules (a CRLF may be split across reads) until they are idle again. Servers flush one
event per HTTP chunk and httpx hands those over one at a time, so the one-event read has its own
shortest path.
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
        "_by_line",
        "_data",
        "_event",
        "_id",
        "_names",
        "_partial",
        "_pending",
        "_retry",
        "_trailing_cr",
    )

    def __init__(self) -> None:
        self._by_line = False
        """The line rules hold state (a CR was seen): every read goes through them."""
        self._pending: list[bytes] = []
        """Otherwise: the bytes, as read, of an event whose blank line has not arrived yet."""
        self._partial: list[bytes] = []
        """Line rules: the start of a line whose end has not arrived yet."""
        self._trailing_cr = False
        """Line rules: the last read ended in CR, which may be the first half of a CRLF."""
        self._event: bytes = b""
        self._data: list[bytes] = []
        self._id = ""
        """The last event id: it persists across events (both ways)."""
        self._retry: int | None = None
        self._names: dict[bytes, str] = {}
        """Decoded event names (a stream repeats a handful of them)."""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        # ``13 in`` and ``find(10)``: an int needle costs a tenth of a bytes one (no buffer).
        if not self._by_line:
            if _CR not in chunk:
                if not self._pending and chunk[-2:] == _BLANK:
                    end = len(chunk) - 2
                    first = chunk.find(_LF)
                    if first == end:
                        if chunk.startswith(_DATA_SP):  # one ``data: `` line: OpenAI's chunks
                            text = chunk[6:end].decode("utf-8", "replace")
                            return [ServerSentEvent("message", text, self._id)]
                    elif (
                        chunk.find(_LF, first + 1) == end
                        and chunk.startswith(_EVENT_SP)
                        and chunk.startswith(_DATA_SP, first + 1)
                    ):  # ``event: `` then ``data: ``: Anthropic's events
                        raw = chunk[7:first]
                        name = self._names.get(raw) or self._name(raw)
                        text = chunk[first + 7 : end].decode("utf-8", "replace")
                        return [ServerSentEvent(name, text, self._id)]
                    return self._complete(chunk)
                return self._feed_blocks(chunk)
            # a CR: what is pending goes to the line rules with this read (it holds no CR)
            self._by_line = True
            if self._pending:
                chunk = b"".join(self._pending) + chunk
                self._pending.clear()
        events = self._feed_lines(chunk)
        self._by_line = bool(
            self._partial
            or self._trailing_cr
            or self._data
            or self._event
            or self._retry is not None
        )
        return events

    def _feed_blocks(self, chunk: bytes) -> list[ServerSentEvent]:
        """A read without CR: the events it completes, up to its last blank line; the rest waits."""
        pending = self._pending
        end = chunk.rfind(_BLANK)
        if end < 0:
            if chunk[:1] == b"\n" and (not pending or pending[-1][-1:] == b"\n"):
                end = -1  # a blank line at the start: the previous read ended a line
            else:
                if chunk:
                    pending.append(chunk)
                return []
        end += 2
        head = chunk[:end] if end < len(chunk) else chunk
        if pending:
            head = b"".join(pending) + head
            pending.clear()
        if end < len(chunk):
            pending.append(chunk[end:])
        return self._complete(head)

    def _complete(self, body: bytes) -> list[ServerSentEvent]:
        """The events of ``body``, which holds no CR, starts at a line with no field pending
        (only an id persists) and ends with a blank line. Split at the blank lines, an event of
        one ``data: `` line, optionally after an ``event: `` line, is built directly; from the
        first other one on, the rest goes through ``_lines``."""
        events: list[ServerSentEvent] = []
        blocks = body.split(_BLANK)
        last = blocks.pop()  # b"", or b"\n" when the body ends with an odd run of LFs
        for i, block in enumerate(blocks):
            if block.startswith(_DATA_SP):
                if _LF not in block:
                    text = block[6:].decode("utf-8", "replace")
                    events.append(ServerSentEvent("message", text, self._id))
                    continue
            elif block.startswith(_EVENT_SP):
                raw, _, data = block.partition(b"\n")
                if data.startswith(_DATA_SP) and _LF not in data:
                    name = self._names.get(raw[7:]) or self._name(raw[7:])
                    text = data[6:].decode("utf-8", "replace")
                    events.append(ServerSentEvent(name, text, self._id))
                    continue
            lines = _BLANK.join(blocks[i:]).split(b"\n")
            lines.append(b"")
            if last:
                lines.append(b"")
            events += self._lines(lines)
            return events
        if last:
            events += self._lines([b""])  # one more blank line: an event only if an id is set
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
        self._pending.clear()  # never finished: its lines can dispatch nothing
        if not self._partial and not self._trailing_cr:
            return []
        lines = [b"".join(self._partial)]
        self._partial.clear()
        self._trailing_cr = False
        return self._lines(lines)

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
