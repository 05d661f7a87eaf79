"""Server-sent events from the bytes of a response body.

The framing is httpx-sse's (the WHATWG event-stream rules: lines end at CR, LF or CRLF only, so a
U+2028 inside a JSON payload never splits it; comments skipped; ``data`` lines joined with LF; an
event is dispatched at a blank line; ``id`` persists), but the work is done on bytes, a network
read at a time: one ``split`` per read instead of a text decode, a line decoder and a generator
step per line. Only field values are decoded (UTF-8, invalid bytes replaced, as httpx's text
decoding does); LF and CR never occur inside a UTF-8 sequence, so decoding per line gives the
same text as decoding the whole body.
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


class SSEDecoder:
    """Feed it the body's bytes as they arrive (``feed``), then ``finish()`` at the end; each
    returns the events completed by that input, in order."""

    __slots__ = ("_data", "_event", "_id", "_names", "_partial", "_retry", "_trailing_cr")

    def __init__(self) -> None:
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
        raw = self._event
        name = self._names.get(raw)
        if name is None:
            name = raw.decode("utf-8", "replace")
            if len(self._names) < 64:
                self._names[raw] = name
        event = ServerSentEvent(name, text, self._id, self._retry)
        self._event = b""
        self._data = []
        self._retry = None
        return event
