"""``python -m pi_notebook.ai.local``: fetch the embedded model, or serve it or a GGUF file of
one's own on 127.0.0.1 until Ctrl-C, printing the ``%model`` line a notebook uses it with."""

from __future__ import annotations

import argparse
import contextlib
import errno
import socket
import sys
import threading
from pathlib import Path

from .gguf_metadata import GgufError
from .local import (
    DEFAULT_N_CTX,
    DEFAULT_PORT,
    DEFAULT_THREADS,
    MODEL_ID,
    LocalModelError,
    LocalServer,
    _import_xllamacpp,
    fetch_model,
)
from .local_families import TEMPLATE_NAMES, choose_template
from .server_refs import server_ref

__all__ = ["run"]

MODEL_N_CTX = 8192
"""The context of a served GGUF file unless ``--n-ctx`` says otherwise: room for a system
prompt, tools and a few turns, within what a laptop's memory holds for a small model."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pi_notebook.ai.local", description="Local models on llama.cpp."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help="download and verify the embedded model; print its path")
    serve = commands.add_parser(
        "serve", help="serve the embedded model or a GGUF file on 127.0.0.1 until Ctrl-C"
    )
    serve.add_argument(
        "--model", metavar="PATH.gguf", type=Path, help="a GGUF file (default: the embedded model)"
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})"
    )
    serve.add_argument(
        "--chat-template",
        metavar="NAME|PATH",
        help=f"a maintained template ({', '.join(TEMPLATE_NAMES)}) or a Jinja file; default: "
        "the file's own when it has tool calls, else its family's",
    )
    serve.add_argument(
        "--n-ctx",
        type=int,
        help=f"context size in tokens (default {DEFAULT_N_CTX} for the embedded model, "
        f"{MODEL_N_CTX} for a GGUF file)",
    )
    serve.add_argument(
        "--threads", type=int, default=DEFAULT_THREADS, help="CPU threads for inference"
    )
    serve.add_argument("--alias", help="the model id clients use (default: the file's name)")
    serve.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "fetch":
            print(fetch_model(quiet=False))
            return 0
        return _serve(args)
    except LocalModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _serve(args: argparse.Namespace) -> int:
    _import_xllamacpp()  # before a download: fail early with the install hint
    _check_port_free(args.port)
    path: Path = args.model.expanduser() if args.model else fetch_model(quiet=False)
    if not path.is_file():
        raise LocalModelError(f"--model {path}: no such file")
    try:
        choice = choose_template(path, args.chat_template)
    except (ValueError, OSError) as exc:
        if isinstance(exc, GgufError):
            raise LocalModelError(f"--model {path}: {exc}") from None
        raise LocalModelError(str(exc)) from None
    alias = args.alias or (MODEL_ID if args.model is None else path.stem.lower())
    n_ctx = args.n_ctx or (DEFAULT_N_CTX if args.model is None else MODEL_N_CTX)
    server = LocalServer(
        path,
        n_ctx=n_ctx,
        threads=args.threads,
        alias=alias,
        port=args.port,
        chat_template=choice.template,
        verbose=args.verbose,
        startup_timeout=300,
    )
    with server:
        port = int(server.address.rsplit(":", 1)[1])
        ref = server_ref("llamacpp", port, alias)
        tools = "yes" if choice.calls_tools else "no (this model cannot call tools: answers only)"
        print(f"Serving {alias} at {server.address}", flush=True)
        print(f"  OpenAI-compatible base URL: {server.address}/v1", flush=True)
        print(
            f"  family: {choice.family.name}, chat template: {choice.source}, "
            f"context: {n_ctx:,} tokens, tool calls: {tools}",
            flush=True,
        )
        print(f"In a notebook: %model {ref}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


def _check_port_free(port: int) -> None:
    """Fail with a clear message before loading a model onto a port that is taken."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise LocalModelError(
                    f"port {port} is in use (another server?); choose one with --port N"
                ) from None
            raise LocalModelError(f"port {port}: {exc.strerror}") from None
