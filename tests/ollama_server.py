"""A server on 127.0.0.1 that answers as Ollama does, for tests of finding and using models on a
server already running on the machine: real HTTP in a thread (usable from synchronous tests that
start kernels), the routes ``%model`` uses (``/api/tags``, ``/api/show``, ``/v1/models``) and a
streamed ``/v1/chat/completions`` reply in Ollama's wire format.

    with OllamaLike() as ollama:
        ollama.port, ollama.requests  # the paths asked for, in order
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["MODELS", "OllamaLike", "free_port"]

MODELS: dict[str, dict[str, Any]] = {
    "qwen2.5-coder:7b": {
        "family": "qwen2",
        "parameter_size": "7.6B",
        "context_length": 32768,
        "capabilities": ["completion", "tools", "insert"],
    },
    "smollm2:135m": {
        "family": "llama",
        "parameter_size": "134.52M",
        "context_length": 8192,
        "capabilities": ["completion"],
    },
}
CREATED = 1733000000


def free_port() -> int:
    """A loopback port nobody listens on (free when asked; for a server to start on, or for a
    connection to be refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _tags() -> dict[str, Any]:
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "modified_at": "2025-11-30T10:00:00.000000000+01:00",
                "size": 4683087332,
                "digest": "dae161e27b0e90dd1856c8bb3209201fd6736d8eb66298e75ed87571486f4364",
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": info["family"],
                    "families": [info["family"]],
                    "parameter_size": info["parameter_size"],
                    "quantization_level": "Q4_K_M",
                },
            }
            for name, info in MODELS.items()
        ]
    }


def _show(name: str) -> dict[str, Any]:
    info = MODELS[name]
    return {
        "license": "Apache License 2.0",
        "modelfile": f"FROM {name}\n",
        "parameters": 'stop "<|im_end|>"',
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": info["family"]},
        "model_info": {
            "general.architecture": info["family"],
            f"{info['family']}.context_length": info["context_length"],
        },
        "capabilities": info["capabilities"],
        "modified_at": "2025-11-30T10:00:00.000000000+01:00",
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-535",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class OllamaLike:
    """The server; ``reply`` is the text every chat completion streams, ``hang`` makes every
    request wait until the server stops (a server that accepted but does not answer)."""

    def __init__(self, *, reply: str = "Hello from Ollama.", hang: bool = False) -> None:
        self.reply = reply
        self.hang = hang
        self.requests: list[tuple[str, str, Any]] = []
        self._stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send_json(self, body: Any, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def do_GET(self) -> None:
                owner.requests.append(("GET", self.path, None))
                if owner.hang:
                    owner._stop.wait()
                    return
                if self.path == "/api/tags":
                    self._send_json(_tags())
                elif self.path == "/v1/models":
                    data = [
                        {"id": name, "object": "model", "created": CREATED, "owned_by": "library"}
                        for name in MODELS
                    ]
                    self._send_json({"object": "list", "data": data})
                else:
                    self.send_response(404)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "18")
                    self.end_headers()
                    self.wfile.write(b"404 page not found")

            def do_POST(self) -> None:
                body = self._body()
                owner.requests.append(("POST", self.path, body))
                if owner.hang:
                    owner._stop.wait()
                    return
                if self.path == "/api/show":
                    name = body.get("model") or body.get("name")
                    if name not in MODELS:
                        self._send_json({"error": f"model '{name}' not found"}, 404)
                    else:
                        self._send_json(_show(name))
                elif self.path == "/v1/chat/completions":
                    self._stream(body)
                else:
                    self._send_json({"error": "not found"}, 404)

            def _stream(self, body: dict[str, Any]) -> None:
                model = body["model"]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = owner.reply.split(" ")
                chunks = [
                    _chunk(
                        model,
                        {"role": "assistant", "content": w + (" " if i < len(words) - 1 else "")},
                        None,
                    )
                    for i, w in enumerate(words)
                ]
                chunks.append(_chunk(model, {"role": "assistant", "content": ""}, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage = {
                        "prompt_tokens": 31,
                        "completion_tokens": len(words),
                        "total_tokens": 31 + len(words),
                    }
                    chunks.append({**_chunk(model, {}, None), "choices": [], "usage": usage})
                for item in [*(json.dumps(c) for c in chunks), "[DONE]"]:
                    data = f"data: {item}\n\n".encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OllamaLike:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
