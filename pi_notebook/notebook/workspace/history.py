"""What really ran in this kernel: one ``ExecutionRecord`` per executed cell, in order.

The agent's view of the notebook starts here rather than in the saved document, because the
document can disagree with the kernel (cells run out of order, edited after running, deleted).
``ExecutionHistory.install(shell)`` listens with IPython's own machinery:

- ``pre_run_cell`` opens a record (execution count, cell id, source, start time);
- the display publisher and the shell's ``sys.stdout`` / ``sys.stderr`` add bounded output
  summaries while the cell runs (``display(df)`` is summarised from the object itself:
  "a DataFrame 1,000×12", an image as "an image (image/png)");
- image outputs (PNG, JPEG, SVG) are kept whole, a few per cell and only in the newest
  records that have any, so the agent can look at a plot (``images.model_images``);
- ``post_run_cell`` closes it with the result's ``text/plain``, or the error (type, message,
  trimmed traceback without ANSI colours), or status "interrupted".

Records are numbered from 0 in the order cells started (``record.index``); ``mark`` is the number
started so far, so ``records(since=mark)`` and ``wait_for(cell_id, started_after=mark)`` see
only cells that start after the mark was read. Only the last ``max_records`` records are kept.

Hooks run on whichever thread executes the cell (a kernel subshell runs cells on its own
thread), so futures are resolved through their loop's ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..error_hints import error_hint

__all__ = [
    "IMAGE_MIME_TYPES",
    "MAX_CELL_IMAGES",
    "MAX_IMAGE_RECORDS",
    "MAX_OUTPUTS",
    "MAX_OUTPUT_CHARS",
    "AgentFailure",
    "CellImage",
    "ErrorInfo",
    "ExecutionHistory",
    "ExecutionRecord",
    "OutputSummary",
    "bundle_image",
    "strip_ansi",
    "summarize_bundle",
    "summarize_value",
]

MAX_OUTPUT_CHARS = 2_000
"""Characters kept of one output (a stream's text, a result's ``text/plain``)."""
MAX_OUTPUTS = 20
"""Outputs kept per cell; later ones are counted, not stored."""
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
"""The image outputs kept for the model, in the order a bundle's image is chosen."""
MAX_CELL_IMAGES = 3
"""Images kept per cell; later ones are counted."""
MAX_IMAGE_RECORDS = 20
"""Only the newest records with images keep them (a notebook of plots stays bounded)."""
MAX_RAW_IMAGE_CHARS = 8_000_000
"""An image output larger than this (base64, or SVG text) is counted, not kept."""
MAX_SOURCE_CHARS = 20_000
MAX_TRACEBACK_CHARS = 3_000
_TRACEBACK_FRAMES = 8

Status = Literal["ok", "error", "interrupted"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")


def _internal_dirs() -> tuple[str, ...]:
    """Where IPython's and asyncio's own frames live (left out of a cell's traceback)."""
    return tuple(
        str(Path(module.__file__).parent)
        for name in ("IPython", "ipykernel", "asyncio")
        if (module := sys.modules.get(name)) is not None and module.__file__
    )


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def _bounded(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters]"


@dataclass(frozen=True)
class ErrorInfo:
    """An exception a cell raised, as the model should read it."""

    ename: str
    evalue: str
    traceback: str
    """The last frames of the cell's own code, no IPython internals, no ANSI colours."""
    hint: str = ""
    """How to get past it, where the error says too little (the keys a pandas ``KeyError``
    could have meant, the import a ``NameError`` needs), else empty."""


@dataclass(frozen=True)
class OutputSummary:
    """One output of a cell, bounded: ``kind`` is "stdout", "stderr" or "display"."""

    kind: Literal["stdout", "stderr", "display"]
    text: str


@dataclass(frozen=True, slots=True)
class CellImage:
    """One image output as the notebook has it: base64 for PNG and JPEG, the text for SVG."""

    mime_type: str
    data: str


def bundle_image(data: dict[str, Any]) -> CellImage | None:
    """The image a display bundle shows (PNG, else JPEG, else SVG); None for none, or for one
    too large to keep."""
    for mime in IMAGE_MIME_TYPES:
        raw = data.get(mime)
        if isinstance(raw, list):
            raw = "".join(str(part) for part in raw)
        if isinstance(raw, str) and raw:
            if len(raw) > MAX_RAW_IMAGE_CHARS:
                return None
            return CellImage(mime, raw if mime == "image/svg+xml" else "".join(raw.split()))
    return None


@dataclass(frozen=True)
class AgentFailure:
    """A ``run_python`` call of the agent that failed: its code and what it printed."""

    code: str
    output: str
    at: float


@dataclass(frozen=True)
class ExecutionRecord:
    """One execution of one cell. ``ended_at`` is None while the cell still runs."""

    execution_count: int | None
    cell_id: str | None
    source: str
    status: Status
    result: str | None
    error: ErrorInfo | None
    outputs: tuple[OutputSummary, ...]
    started_at: float
    ended_at: float | None
    index: int = 0
    """Position in the kernel's history (0 = the first cell run since the history started)."""
    omitted_outputs: int = 0
    """Outputs beyond ``MAX_OUTPUTS``, counted but not kept."""
    images: tuple[CellImage, ...] = ()
    """The cell's image outputs (at most ``MAX_CELL_IMAGES``; dropped from older records)."""
    omitted_images: int = 0
    """Images not kept: beyond ``MAX_CELL_IMAGES``, too large, or dropped with age."""


def _dataframe_label(value: Any) -> str | None:
    shape = getattr(value, "shape", None)
    if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape):
        return None
    kind = type(value).__name__
    if len(shape) == 2 and hasattr(value, "columns"):
        return f"a {kind} {shape[0]:,}×{shape[1]:,}"
    if len(shape) == 1 and hasattr(value, "index"):
        return f"a {kind} of {shape[0]:,}"
    if hasattr(value, "dtype"):
        dims = "×".join(f"{n:,}" for n in shape)
        return f"an {kind} {dims} ({value.dtype})" if kind[0] in "aeiou" else f"a {kind} {dims}"
    return None


def summarize_bundle(data: dict[str, Any], value: Any = None) -> str:
    """A bounded text for a MIME bundle (and, when known, the object it was made from)."""
    label = _dataframe_label(value) if value is not None else None
    images = [mime for mime in data if mime.startswith("image/")]
    plain = data.get("text/plain")
    text = strip_ansi(plain if isinstance(plain, str) else "")
    if images and not label:
        label = "an image (" + ", ".join(images) + ")"
    if label and text:
        return _bounded(f"{label}:\n{text}")
    if label:
        return label
    if text:
        return _bounded(text)
    kinds = ", ".join(sorted(data)) or "nothing"
    return f"a rich output ({kinds})"


def summarize_value(value: Any, formatter: Callable[[Any], Any] | None = None) -> str:
    """A bounded ``text/plain`` of a cell's result, labelled for tables and arrays."""
    if formatter is not None:
        try:
            data, _meta = formatter(value)
        except Exception:  # a broken _repr_ of the user's object must not break the history
            data = None
        if isinstance(data, dict):
            return summarize_bundle(data, value)
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<unprintable {type(value).__name__}: {exc}>"
    label = _dataframe_label(value)
    return _bounded(f"{label}:\n{text}" if label else text)


def _package_of(filename: str) -> str:
    """``pandas`` for ``.../site-packages/pandas/core/frame.py``: a library frame's name that is
    the same on every machine."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return Path(filename).stem


def _local_path(filename: str) -> str | None:
    """A frame's file relative to the working directory (the user's own modules), or None."""
    if filename.startswith("<"):
        return filename
    path = Path(filename)
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return None
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return None


def _error_info(exc: BaseException, code_names: dict[str, int]) -> ErrorInfo:
    """Type, message and the traceback of the notebook's own frames; library frames in between
    are counted by package, so the text is the same on every machine (a replayed prompt must
    match its recording) and the model reads the user's code, not pandas' internals."""
    internal = _internal_dirs()
    lines: list[str] = []
    skipped: list[str] = []

    def flush() -> None:
        if skipped:
            packages = ", ".join(dict.fromkeys(skipped))
            lines.append(f"  [... {len(skipped)} frames in {packages}]")
            skipped.clear()

    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(internal)
    ]
    for frame in frames[-_TRACEBACK_FRAMES:]:
        count = code_names.get(frame.filename)
        local = _local_path(frame.filename)
        if count is None and local is None:
            skipped.append(_package_of(frame.filename))
            continue
        flush()
        where = f"Cell In[{count}]" if count is not None else local
        lines.append(f"  {where}, line {frame.lineno}, in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    flush()
    lines.extend(line.rstrip("\n") for line in traceback.format_exception_only(type(exc), exc))
    text = strip_ansi("\n".join(lines))
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "[...]\n" + text[-MAX_TRACEBACK_CHARS:]
    return ErrorInfo(
        ename=type(exc).__name__,
        evalue=strip_ansi(str(exc)),
        traceback=text,
        hint=error_hint(exc) or "",  # read now: the frames it looks at go with the traceback
    )


@dataclass
class _Open:
    """A record being filled while its cell runs."""

    record: ExecutionRecord
    thread: int
    outputs: list[OutputSummary] = field(default_factory=list)
    omitted: int = 0
    images: list[CellImage] = field(default_factory=list)
    omitted_images: int = 0

    def add_image(self, image: CellImage | None) -> None:
        if image is None or len(self.images) >= MAX_CELL_IMAGES:
            self.omitted_images += 1
        else:
            self.images.append(image)

    def add(self, kind: Literal["stdout", "stderr", "display"], text: str) -> None:
        if kind != "display" and self.outputs and self.outputs[-1].kind == kind:
            merged = self.outputs[-1].text + text
            if len(merged) > MAX_OUTPUT_CHARS:
                merged = _bounded(merged)
            self.outputs[-1] = OutputSummary(kind, merged)
            return
        if len(self.outputs) >= MAX_OUTPUTS:
            self.omitted += 1
            return
        self.outputs.append(OutputSummary(kind, _bounded(text)))

    def snapshot(self) -> ExecutionRecord:
        return replace(
            self.record,
            outputs=tuple(self.outputs),
            omitted_outputs=self.omitted,
            images=tuple(self.images),
            omitted_images=self.omitted_images,
        )


@dataclass
class _Waiter:
    cell_id: str
    started_after: int
    future: asyncio.Future[ExecutionRecord]


class ExecutionHistory:
    """The kernel's execution history (one per kernel: ``NotebookAgent.history``)."""

    def __init__(self, max_records: int = 500) -> None:
        self._records: deque[ExecutionRecord] = deque(maxlen=max_records)
        self._open: dict[int, _Open] = {}
        self._started = 0
        self._waiters: list[_Waiter] = []
        self._lock = threading.Lock()
        self._shell: Any = None
        self._restore: list[Callable[[], None]] = []
        self._formatted = threading.local()
        self._agent_failure: AgentFailure | None = None

    # --- reading ---------------------------------------------------------------------------------

    @property
    def mark(self) -> int:
        """How many cells have started so far (the next record's ``index``)."""
        return self._started

    def records(self, since: int = 0) -> list[ExecutionRecord]:
        """Finished records whose ``index`` is at least ``since``, oldest first."""
        with self._lock:
            return [r for r in self._records if r.index >= since]

    def note_agent_failure(self, code: str, output: str) -> None:
        """Remember the agent's latest failed ``run_python`` (it runs outside any cell, so
        the records never see it; ``read_last_error`` should)."""
        with self._lock:
            self._agent_failure = AgentFailure(code, output, time.time())

    @property
    def agent_failure(self) -> AgentFailure | None:
        """The agent's latest failed ``run_python``, if any."""
        with self._lock:
            return self._agent_failure

    def last_error(self) -> ExecutionRecord | None:
        """The most recent cell that ended with an error (not an interrupt)."""
        with self._lock:
            return next((r for r in reversed(self._records) if r.status == "error"), None)

    @property
    def running(self) -> ExecutionRecord | None:
        """The cell executing on the kernel's main thread now (its outputs so far)."""
        with self._lock:
            current = self._open.get(threading.main_thread().ident or 0)
            if current is None and self._open:
                current = next(iter(self._open.values()))
            return current.snapshot() if current is not None else None

    async def wait_for(self, cell_id: str, *, started_after: int) -> ExecutionRecord:
        """The record of cell ``cell_id`` once an execution of it that started at or after
        the mark ``started_after`` has finished (status "interrupted" after an interrupt)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ExecutionRecord] = loop.create_future()
        waiter = _Waiter(cell_id, started_after, future)
        with self._lock:
            done = next(
                (r for r in self._records if r.cell_id == cell_id and r.index >= started_after),
                None,
            )
            if done is None:
                self._waiters.append(waiter)
        if done is not None:
            return done
        try:
            return await future
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    # --- the shell's hooks -----------------------------------------------------------------------

    def install(self, shell: Any) -> None:
        """Listen to ``shell`` (an IPython ``InteractiveShell``) from now on."""
        if self._shell is not None:
            raise RuntimeError("this history is already installed on a shell")
        self._shell = shell
        shell.events.register("pre_run_cell", self.pre_run_cell)
        shell.events.register("post_run_cell", self.post_run_cell)
        self._restore.append(lambda: shell.events.unregister("pre_run_cell", self.pre_run_cell))
        self._restore.append(lambda: shell.events.unregister("post_run_cell", self.post_run_cell))
        self._wrap(shell.display_pub, "publish", self._on_publish)
        formatter = getattr(shell, "display_formatter", None)
        if formatter is not None:
            self._wrap(formatter, "format", self._on_format)

    def uninstall(self) -> None:
        """Stop listening (``%unload_ext``); the records stay readable."""
        for restore in reversed(self._restore):
            restore()
        self._restore.clear()
        self._shell = None

    def _wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Put a listening wrapper over ``owner.name`` (an instance attribute, removed on
        uninstall). ipykernel's own publisher hooks are thread-local and its stream hooks run
        on the IOPub thread after ``post_run_cell``, so they cannot attribute output to cells."""
        original = getattr(owner, name)
        wrapper = make(original)
        try:
            setattr(owner, name, wrapper)
        except (AttributeError, TypeError):
            return  # a built-in stream: its output is simply not summarised

        def restore() -> None:
            if getattr(owner, name, None) is wrapper:
                try:
                    delattr(owner, name)
                except AttributeError:
                    setattr(owner, name, original)

        self._restore.append(restore)

    def _wrap_streams(self) -> None:
        for stream_name in ("stdout", "stderr"):
            stream = getattr(sys, stream_name)
            if getattr(getattr(stream, "write", None), "_pi_history", None) is self:
                continue
            self._wrap(stream, "write", self._stream_writer(stream_name))

    def _stream_writer(self, kind: Literal["stdout", "stderr"]) -> Callable[[Any], Any]:
        def make(original: Callable[[str], Any]) -> Callable[[str], Any]:
            def write(text: str) -> Any:
                if not getattr(self._formatted, "publishing", False):
                    self._add_output(kind, text)
                return original(text)

            write._pi_history = self  # type: ignore[attr-defined]
            return write

        return make

    def _on_format(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def format(obj: Any, *args: Any, **kwargs: Any) -> Any:
            self._formatted.value = obj  # display() formats, then publishes: pair them up
            return original(obj, *args, **kwargs)

        return format

    def _on_publish(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def publish(data: Any, *args: Any, **kwargs: Any) -> Any:
            value = getattr(self._formatted, "value", None)
            self._formatted.value = None
            if isinstance(data, dict) and not kwargs.get("update"):
                self._add_output("display", summarize_bundle(data, value))
                if any(mime in data for mime in IMAGE_MIME_TYPES):
                    self._add_image(bundle_image(data))
            # a terminal shell's publisher prints the bundle: that is not another output
            self._formatted.publishing = True
            try:
                return original(data, *args, **kwargs)
            finally:
                self._formatted.publishing = False

        return publish

    def _add_output(self, kind: Literal["stdout", "stderr", "display"], text: str) -> None:
        if not text:
            return
        with self._lock:
            current = self._open.get(threading.get_ident())
            if current is not None:
                current.add(kind, text)

    def _add_image(self, image: CellImage | None) -> None:
        with self._lock:
            current = self._open.get(threading.get_ident())
            if current is not None:
                current.add_image(image)

    def pre_run_cell(self, info: Any) -> None:
        """Open the record of the cell that starts now."""
        thread = threading.get_ident()
        shell = self._shell
        if shell is not None:
            self._wrap_streams()
        store = bool(getattr(info, "store_history", True))
        count = getattr(shell, "execution_count", None) if store else None
        source = getattr(info, "raw_cell", "") or ""
        record = ExecutionRecord(
            execution_count=count if isinstance(count, int) else None,
            cell_id=getattr(info, "cell_id", None) or None,
            source=_bounded(source, MAX_SOURCE_CHARS),
            status="ok",
            result=None,
            error=None,
            outputs=(),
            started_at=time.time(),
            ended_at=None,
        )
        with self._lock:
            stale = self._open.pop(thread, None)
            record = replace(record, index=self._started)
            self._started += 1
            self._open[thread] = _Open(record, thread)
        if stale is not None:  # its post_run_cell never came: it was cancelled
            self._finish(replace(stale.snapshot(), status="interrupted", ended_at=time.time()))

    def post_run_cell(self, result: Any) -> None:
        """Close the record of the cell that just ended."""
        with self._lock:
            current = self._open.pop(threading.get_ident(), None)
        if current is None:
            return
        record = current.snapshot()
        error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
        status: Status = "ok"
        error_info: ErrorInfo | None = None
        if isinstance(error, KeyboardInterrupt | asyncio.CancelledError):
            status = "interrupted"
        elif error is not None:
            status = "error"
            error_info = _error_info(error, self._code_names())
        value = getattr(result, "result", None)
        formatter = getattr(getattr(self._shell, "display_formatter", None), "format", None)
        text = summarize_value(value, formatter) if value is not None else None
        count = getattr(result, "execution_count", None)
        self._finish(
            replace(
                record,
                execution_count=count if isinstance(count, int) else record.execution_count,
                status=status,
                result=text,
                error=error_info,
                ended_at=time.time(),
            )
        )

    def _drop_old_images(self) -> None:
        """Keep images in the newest ``MAX_IMAGE_RECORDS`` records that have any (lock held)."""
        with_images = [i for i, r in enumerate(self._records) if r.images]
        for position in with_images[:-MAX_IMAGE_RECORDS]:
            self._records[position] = _without_images(self._records[position])

    def _code_names(self) -> dict[str, int]:
        """IPython's map of compiled cell file names to execution counts, when it has one."""
        names = getattr(getattr(self._shell, "compile", None), "_filename_map", None)
        return dict(names) if isinstance(names, dict) else {}

    def _finish(self, record: ExecutionRecord) -> None:
        with self._lock:
            self._records.append(record)
            if record.images:
                self._drop_old_images()
            ready = [
                w
                for w in self._waiters
                if w.cell_id == record.cell_id and record.index >= w.started_after
            ]
            for waiter in ready:
                self._waiters.remove(waiter)
        for waiter in ready:
            future = waiter.future
            if not future.done():
                future.get_loop().call_soon_threadsafe(_resolve, future, record)


def _without_images(record: ExecutionRecord) -> ExecutionRecord:
    dropped = record.omitted_images + len(record.images)
    return replace(record, images=(), omitted_images=dropped)


def _resolve(future: asyncio.Future[ExecutionRecord], record: ExecutionRecord) -> None:
    if not future.done():
        future.set_result(record)
