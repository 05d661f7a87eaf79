"""A fast loopback SSE server for the streaming benchmarks (not for tests: see tests/loopback.py).

It answers OpenAI Chat Completions and Anthropic Messages streaming requests with wire-exact
bodies of N text deltas: one SSE event per HTTP/1.1 chunked-transfer chunk, each written with its
own ``send`` on a ``TCP_NODELAY`` socket (so every event is flushed as it is produced, as a real
server that flushes per token does). The delta count comes from the URL, so every client (ours,
the official SDKs, raw httpx) can be pointed at it through its ordinary ``base_url``:

    POST /n/<N>/v1/chat/completions    OpenAI-style: role chunk, N content chunks, finish chunk,
                                       usage chunk, ``data: [DONE]``
    POST /n/<N>/v1/messages            Anthropic-style: message_start, content_block_start,
                                       N content_block_delta, content_block_stop, message_delta,
                                       message_stop

The event payloads are pre-rendered (a rotation of 16 delta texts), so the server spends about a
microsecond per event and one blocking thread per connection serves faster than any client reads.
Run it in its own process so its work is not counted in the client's: ``serve_in_subprocess()``,
or ``python3 -m bench.sse_server [--port P]`` (prints ``listening on http://127.0.0.1:P``).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import socketserver
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from bench.common import REPO_ROOT

__all__ = [
    "DELTA_TEXTS",
    "anthropic_events",
    "expected_text",
    "openai_events",
    "serve",
    "serve_in_subprocess",
]

DELTA_TEXTS = (
    " The",
    " quick",
    " brown",
    " fox",
    " jumps",
    " over",
    " the",
    " lazy",
    " dog",
    ".",
    "\n\n",
    ' "Café"',
    " naïve",
    " 👍",
    " {x}",
    " done",
)
"""The text of delta ``i`` is ``DELTA_TEXTS[i % 16]``: mixed ASCII, escapes and non-ASCII."""

MODEL = "bench-model"
_PATH = re.compile(r"^/n/(\d+)(?:/v1)?/(chat/completions|messages)(?:\?.*)?$")


def expected_text(n: int) -> str:
    """The full reply text of an N-delta stream (what a consumer should have accumulated)."""
    whole, rest = divmod(n, len(DELTA_TEXTS))
    return "".join(DELTA_TEXTS) * whole + "".join(DELTA_TEXTS[:rest])


def _chunk(payload: bytes) -> bytes:
    """``payload`` framed as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    body = (
        data
        if isinstance(data, str)
        else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    )
    prefix = f"event: {event}\n" if event else ""
    return _chunk(f"{prefix}data: {body}\n\n".encode())


def openai_events(n: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(head, rotating deltas, tail) of an OpenAI Chat Completions stream, each item one framed
    HTTP chunk. Chunks look like OpenAI's (id, created, model, fingerprint, logprobs)."""
    base = {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_bench",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**base, "choices": [choice], "usage": None})

    head = [chunk({"role": "assistant", "content": ""})]
    deltas = [chunk({"content": text}) for text in DELTA_TEXTS]
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": n,
        "total_tokens": n + 12,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    tail = [
        chunk({}, "stop"),
        _sse({**base, "choices": [], "usage": usage}),
        _sse("[DONE]"),
    ]
    return head, deltas, tail


def anthropic_events(n: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(head, rotating deltas, tail) of an Anthropic Messages stream, each item one framed chunk."""
    usage = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    message: dict[str, Any] = {
        "id": "msg_bench0001",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }

    def event(data: dict[str, Any]) -> bytes:
        return _sse(data, event=data["type"])

    head = [
        event({"type": "message_start", "message": message}),
        event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
    ]
    deltas = [
        event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            }
        )
        for text in DELTA_TEXTS
    ]
    tail = [
        event({"type": "content_block_stop", "index": 0}),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            }
        ),
        event({"type": "message_stop"}),
    ]
    return head, deltas, tail


_HEADERS = (
    b"HTTP/1.1 200 OK\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n"
    b"request-id: req_bench\r\n"
    b"x-request-id: req_bench\r\n"
    b"\r\n"
)


class _Handler(socketserver.BaseRequestHandler):
    """One keep-alive connection: read a request, stream the reply, repeat until closed."""

    request: socket.socket

    def handle(self) -> None:
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = sock.makefile("rb")
        try:
            while self._serve_one(sock, reader):
                pass
        except (ConnectionError, TimeoutError):
            return
        finally:
            reader.close()

    def _serve_one(self, sock: socket.socket, reader: Any) -> bool:
        request_line = reader.readline(65536)
        if not request_line:
            return False
        headers: dict[str, str] = {}
        while True:
            line = reader.readline(65536)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if length:
            reader.read(length)
        parts = request_line.decode("latin-1").split(" ")
        match = _PATH.match(parts[1]) if len(parts) >= 2 and parts[0] == "POST" else None
        if match is None:
            body = b'{"error":{"message":"unknown path; use POST /n/<N>/v1/chat/completions '
            body += b'or /n/<N>/v1/messages","type":"invalid_request_error"}}'
            sock.sendall(
                b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            return True
        n = int(match.group(1))
        make = openai_events if match.group(2) == "chat/completions" else anthropic_events
        head, deltas, tail = make(n)
        send = sock.sendall
        send(_HEADERS)
        for item in head:
            send(item)
        rotation = len(deltas)
        for i in range(n):
            send(deltas[i % rotation])
        for item in tail:
            send(item)
        send(b"0\r\n\r\n")
        return True


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(port: int = 0) -> None:
    """Serve forever on 127.0.0.1:``port`` (0 = any free port), announcing the URL on stdout."""
    with _Server(("127.0.0.1", port), _Handler) as server:
        print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
        server.serve_forever()


@contextmanager
def serve_in_subprocess() -> Iterator[str]:
    """Start the server in a child process; yield its base URL (``http://127.0.0.1:P``)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.sse_server"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"the SSE server did not start: {line!r}")
        yield line.removeprefix("listening on ")
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args()
    with suppress(KeyboardInterrupt):
        serve(args.port)


if __name__ == "__main__":
    main()
