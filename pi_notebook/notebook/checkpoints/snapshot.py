"""Which names a checkpoint takes, and where their values are pickled.

The namespace belongs to the user's cells: the next cell may change a value while it is being
pickled. On Linux a checkpoint therefore forks the kernel. The child is a copy-on-write
snapshot of the whole process at that instant: it pickles the values into the store (all its
work, whatever the sizes) and exits, while the kernel goes on at once. Memory grows only by
the pages the kernel writes while the child runs, not by the namespace's size. Only the
``fork()`` call itself runs on the event loop. Where ``fork`` is not safe (macOS, Windows) the
values are pickled in a worker thread instead: the loop still goes on (the pickler hands the
GIL back between frames), but a value changed during the checkpoint may be stored half-changed
or skipped, and a value whose pickle changes the object (a matplotlib figure's is different
each time) is stored again at every checkpoint; a forked child always starts from the kernel's
state. Both are measured by ``bench/checkpoints.py``; fork is the default for the consistent
snapshot. Its cost is the ``fork()`` call (page tables: it grows with the kernel's memory)
and, for namespaces of many small Python objects, the pages the child's reference counting
copies.

Left out, always: names starting with ``_``, the names IPython puts in the namespace (``In``,
``Out``, ``get_ipython``, ``exit``…), modules, pi_notebook's own objects, and the environment
(``os.environ``, a copy of it, or the value of a secret-looking variable such as an API key).
Tensors in GPU memory are listed as not stored (with the cell that made them), never pickled.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import select
import signal
import sys
import time
import types
import warnings
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import Any

from .store import CheckpointError, CheckpointStore, SkippedValue
from .writer import WriteResult, describe_type, write_values

__all__ = [
    "IPYTHON_NAMES",
    "capture_forked",
    "capture_in_thread",
    "fork_available",
    "select_values",
]

IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})
"""Names IPython binds in every namespace (besides those in ``user_ns_hidden``)."""
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
_OWN_PACKAGE = __name__.split(".", 1)[0]
ENVIRONMENT_REASON = "environment variables are never stored"
GPU_REASON = "in GPU memory: not pickled (a forked copy of the kernel cannot use the GPU)"
_GPU_LIBRARIES = ("torch", "cupy", "jax", "jaxlib", "tensorflow")
CHILD_NICENESS = 10


def fork_available() -> bool:
    """Whether checkpoints fork (Linux); elsewhere fork is unsafe or missing."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def _secret_values(environ: Mapping[str, str]) -> set[str]:
    return {
        value
        for name, value in environ.items()
        if len(value) >= 8 and any(word in name.upper() for word in _SECRET_WORDS)
    }


def select_values(
    namespace: Mapping[str, Any],
    hidden: Collection[str] = (),
    environ: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, Any]], dict[str, SkippedValue]]:
    """The ``(name, value)`` pairs a checkpoint stores, and the user's names it must not
    (the environment), each with why. IPython's and pi_notebook's names are not listed."""
    env = os.environ if environ is None else environ
    secrets = _secret_values(env)
    taken: list[tuple[str, Any]] = []
    refused: dict[str, SkippedValue] = {}
    for name, value in list(namespace.items()):  # a copy: a thread may add names meanwhile
        if name.startswith("_") or name in IPYTHON_NAMES or name in hidden:
            continue
        if isinstance(value, types.ModuleType):
            continue
        module = getattr(type(value), "__module__", "") or ""
        if module.split(".", 1)[0] == _OWN_PACKAGE:
            continue
        if _is_environment(value, env, secrets):
            refused[name] = SkippedValue(describe_type(value), ENVIRONMENT_REASON)
            continue
        if _on_gpu(value):
            refused[name] = SkippedValue(describe_type(value), GPU_REASON, serialisable=False)
            continue
        taken.append((name, value))
    return taken, refused


def _on_gpu(value: Any) -> bool:
    """A tensor or array of a GPU library that lives on a GPU (read from attributes only: no
    library is imported here)."""
    module = getattr(type(value), "__module__", "") or ""
    if module.split(".", 1)[0] not in _GPU_LIBRARIES:
        return False
    try:
        if getattr(value, "is_cuda", False) is True:  # torch
            return True
        device = getattr(value, "device", None)
        kind = getattr(device, "type", None) or getattr(device, "platform", None)
        if module.startswith("cupy") or kind in ("cuda", "gpu", "rocm", "mps", "xpu"):
            return True
    except Exception:  # an attribute that fails to read: let pickling decide
        return False
    return False


def _is_environment(value: Any, env: Mapping[str, str], secrets: set[str]) -> bool:
    if value is env or isinstance(value, type(os.environ)):
        return True
    if isinstance(value, str):
        return value in secrets
    # a copy of the environment has about its size: larger mappings are not walked on the loop
    if isinstance(value, Mapping) and max(8, len(env) // 2) <= len(value) <= 2 * len(env) + 8:
        try:
            same = sum(1 for k, v in value.items() if env.get(k) == v)
        except Exception:  # a mapping whose items() fails is not a copy of the environment
            return False
        return same >= len(value) // 2
    return False


# --- in a worker thread -------------------------------------------------------------------------


async def capture_in_thread(
    store: CheckpointStore, items: Sequence[tuple[str, Any]], *, max_size: int
) -> WriteResult:
    """Pickle ``items`` in a worker thread (the values stay live: see the module docstring)."""
    return await asyncio.to_thread(write_values, store, items, max_size=max_size)


# --- in a forked child --------------------------------------------------------------------------


def capture_forked(
    store: CheckpointStore,
    items: Sequence[tuple[str, Any]],
    *,
    max_size: int,
    timeout: float,
) -> Awaitable[WriteResult]:
    """Fork now (the snapshot is this instant) and let the child pickle ``items``; the
    awaitable returned waits for its result off the loop. A child that fails, or runs past
    ``timeout`` seconds (then killed), makes it raise CheckpointError."""
    store.ensure_dir(store.tmp_dir)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # fork in a threaded process: the child only pickles and writes files, then _exits
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; coverage does not follow it
        _child(store, items, max_size, read_end, write_end)
    os.close(write_end)
    return asyncio.to_thread(_collect, pid, read_end, timeout)


def _child(
    store: CheckpointStore,
    items: Sequence[tuple[str, Any]],
    max_size: int,
    read_end: int,
    write_end: int,
) -> None:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        os.close(read_end)
        # The kernel's loop listens on the wakeup fd, and an interrupt (SIGINT to the kernel's
        # process group) is for the cell, not for the checkpoint.
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        gc.disable()  # a collection would touch (and so copy) every page holding objects
        os.nice(CHILD_NICENESS)  # the kernel comes first on a busy machine
        result = write_values(store, items, max_size=max_size)
        payload = json.dumps({"ok": result.to_data()}).encode()
        code = 0
    except BaseException as exc:
        payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(write_end, view) :]
    finally:
        os._exit(code)


def _collect(pid: int, read_end: int, timeout: float) -> WriteResult:
    """The child's result (runs in a worker thread)."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise CheckpointError(f"the checkpoint took longer than {timeout:.0f} s")
            ready, _, _ = select.select([read_end], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        reply = {}
    if "ok" in reply:
        return WriteResult.from_data(reply["ok"])
    why = reply.get("error") or f"the checkpoint process ended with status {status}"
    raise CheckpointError(why)
