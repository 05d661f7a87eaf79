"""A loopback HTTP server for provider tests: real TCP on 127.0.0.1, wire-exact replies.

Each request is answered by the next scripted ``Reply``: a status, headers and a body given as a
list of byte chunks. Each chunk is written as its own HTTP/1.1 chunked-transfer chunk and flushed,
optionally after a delay, so a test controls exactly where the network splits the stream (inside
a JSON object, between CR and LF, inside a multi-byte character, …). ``truncate=True`` closes the
connection without the terminating zero-length chunk (a cut stream).

    async with LoopbackServer() as server:
        server.add(Reply.sse([b'data: {"a":1}\\n\\n', b"data: [DONE]\\n\\n"]))
        ... request server.url + "/v1/chat/completions" ...
        server.requests[0].json()  # what the client sent
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoopbackServer", "RecordedRequest", "Reply", "sse_chunks"]


def sse_chunks(events: list[Any], *, event_names: bool = False, done: bool = False) -> list[bytes]:
    """One SSE event per chunk: each item is a dict (JSON data) or a raw string payload."""
    out: list[bytes] = []
    for item in events:
        data = item if isinstance(item, str) else json.dumps(item)
        prefix = ""
        if event_names and isinstance(item, dict) and "type" in item:
            prefix = f"event: {item['type']}\n"
        out.append(f"{prefix}data: {data}\n\n".encode())
    if done:
        out.append(b"data: [DONE]\n\n")
    return out


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    delay: float = 0.0
    """Seconds to wait before each chunk."""
    truncate: bool = False
    """Close the connection without ending the chunked body."""
    hang: bool = False
    """After the chunks, keep the connection open until the client goes away."""

    @classmethod
    def sse(cls, chunks: list[bytes], **kwargs: Any) -> Reply:
        headers = {"content-type": "text/event-stream", **kwargs.pop("headers", {})}
        return cls(status=200, headers=headers, chunks=chunks, **kwargs)

    @classmethod
    def json(cls, status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
        raw = body if isinstance(body, str | bytes) else json.dumps(body)
        data = raw.encode() if isinstance(raw, str) else raw
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            chunks=[data],
        )


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.disconnected = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def __aenter__(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=5)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                reply = (
                    self.replies.popleft()
                    if self.replies
                    else Reply.json(500, {"error": {"message": "loopback: no reply scripted"}})
                )
                keep_open = await self._write_reply(reader, writer, reply)
                if not keep_open:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._handlers.discard(task)
            self.disconnected.set()
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        return RecordedRequest(method, path, headers, body)

    async def _write_reply(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply
    ) -> bool:
        reason = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            429: "Too Many Requests",
            500: "Internal Server Error",
            529: "Overloaded",
        }.get(reply.status, "Status")
        head = [f"HTTP/1.1 {reply.status} {reason}", "transfer-encoding: chunked"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        for chunk in reply.chunks:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if not chunk:
                continue
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        if reply.hang:
            await reader.read()  # returns when the client closes the connection
            return False
        if reply.truncate:
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
