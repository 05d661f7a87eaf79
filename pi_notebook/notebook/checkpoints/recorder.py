"""``Checkpoints``: when the kernel's namespace is recorded, and the on/off switch.

One per kernel (``NotebookAgent.checkpoints``). The notebook agent calls
:meth:`Checkpoints.capture_soon` when an ``%%agent`` run starts and after each cell the agent
ran (``run_cell``, ``insert_cell`` with a run, ``run_python``), with the session's leaf at that
moment. The snapshot is taken there and then (``snapshot``: a fork, or the values handed to a
worker thread); pickling, writing and pruning go on in the background, so the agent never
waits for a checkpoint, and a failed checkpoint is only noted (``%checkpoint status``).

The switch is recorded in the session (a custom entry), so a reopened notebook keeps it;
``PI_NOTEBOOK_CHECKPOINTS=off`` starts a session without one with checkpoints off.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .origins import find_origins
from .snapshot import capture_forked, capture_in_thread, fork_available, select_values
from .store import (
    CheckpointStore,
    Loaded,
    Manifest,
    Reason,
    SkippedValue,
    store_dir_for,
)
from .writer import WriteResult, format_size

if TYPE_CHECKING:
    from ...harness import Session
    from ..workspace.history import ExecutionHistory

__all__ = [
    "CAPTURE_TOOLS",
    "CHECKPOINTS_ENV",
    "CHECKPOINT_ENTRY",
    "DEFAULT_MAX_SIZE",
    "DEFAULT_MAX_TOTAL",
    "CaptureReport",
    "Checkpoints",
]

CHECKPOINT_ENTRY = "pi_notebook.checkpoints"
"""The session's custom entry type for the switch; its data is ``{"enabled": bool}``."""
CHECKPOINTS_ENV = "PI_NOTEBOOK_CHECKPOINTS"
CAPTURE_TOOLS = frozenset({"run_cell", "insert_cell", "run_python"})
"""Tools after whose result a checkpoint is taken (each may have run code in the kernel)."""
GiB = 1 << 30
DEFAULT_MAX_SIZE = 2 * GiB
"""One checkpoint: room for a few large tables, but not for a namespace that would fill a
laptop's disk in a handful of turns."""
DEFAULT_MAX_TOTAL = 8 * GiB
"""All checkpoints of a session (oldest pruned first): unchanged values are stored once, so
this holds many turns of a typical analysis."""
DEFAULT_TIMEOUT = 300.0
"""A checkpoint still being written after this many seconds is stopped (and said so)."""
AGENT_CODE_TOOL = "run_python"
"""The tool whose code runs in the namespace without being a cell of the history."""
MAX_AGENT_CODE = 500
"""Pieces of the agent's code remembered as makers of values (as many as the history keeps)."""
MAX_IN_FLIGHT = 4
"""Checkpoints being written at once; a further one is skipped (and said so) rather than
queued, since a late snapshot would not show the namespace as it was."""


@dataclass(frozen=True)
class CaptureReport:
    """How one checkpoint went (``%checkpoint status``, the benchmark)."""

    manifest: Manifest | None
    new_bytes: int
    blocked_s: float
    """Seconds the event loop spent taking the snapshot (selecting names, forking)."""
    total_s: float
    """Seconds from the snapshot until the checkpoint was on disk."""
    problem: str | None = None


def _default_enabled() -> bool:
    value = os.environ.get(CHECKPOINTS_ENV, "on").strip().lower()
    return value not in ("off", "0", "false", "no")


def _positive(value: Any, default: int) -> int:
    return value if isinstance(value, int) and value > 0 else default


def _hidden_names() -> Collection[str]:
    from IPython.core.getipython import get_ipython

    shell = get_ipython()  # type: ignore[no-untyped-call]
    hidden = getattr(shell, "user_ns_hidden", None)
    return hidden if isinstance(hidden, Mapping) else ()


class Checkpoints:
    """The checkpoints of the kernel's namespace for the notebook's session."""

    def __init__(
        self,
        session: Callable[[], Session],
        session_path: Callable[[], Path],
        namespace: dict[str, Any],
        history: ExecutionHistory | None = None,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        max_total: int = DEFAULT_MAX_TOTAL,
        use_fork: bool | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._session = session
        self._session_path = session_path
        self.namespace = namespace
        self.history = history
        self._defaults = (max_size, max_total)
        self._max_size = max_size
        self._max_total = max_total
        self.use_fork = fork_available() if use_fork is None else use_fork
        self.timeout = timeout
        self._enabled: bool | None = None
        self._store: CheckpointStore | None = None
        self._tasks: set[asyncio.Task[CaptureReport]] = set()
        self._pruning: asyncio.Task[None] | None = None
        self.last: CaptureReport | None = None
        """The last checkpoint that finished (or failed)."""
        self.dropped = 0
        """Checkpoints skipped because others were still being written."""
        self._agent_code: deque[tuple[int, str]] = deque(maxlen=MAX_AGENT_CODE)
        self._calls: dict[str, str] = {}

    # --- the switch ------------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """On unless the session's latest switch entry (or ``PI_NOTEBOOK_CHECKPOINTS``) says
        off."""
        if self._enabled is None:
            self._read_settings()
        return bool(self._enabled)

    @property
    def max_size(self) -> int:
        """Bytes one checkpoint may hold (a larger variable is skipped with a note)."""
        if self._enabled is None:
            self._read_settings()
        return self._max_size

    @property
    def max_total(self) -> int:
        """Bytes all checkpoints of the session may hold (the oldest are pruned first)."""
        if self._enabled is None:
            self._read_settings()
        return self._max_total

    def _read_settings(self) -> None:
        """The switch and the caps from the session's latest entry (any branch: they belong to
        the session, not to one conversation in it)."""
        from ...harness.entries import CustomEntry

        enabled = _default_enabled()
        self._max_size, self._max_total = self._defaults
        for entry in reversed(self._session().get_entries()):
            if isinstance(entry, CustomEntry) and entry.custom_type == CHECKPOINT_ENTRY:
                data = entry.data if isinstance(entry.data, dict) else {}
                enabled = bool(data.get("enabled", True))
                self._max_size = _positive(data.get("max_size"), self._max_size)
                self._max_total = _positive(data.get("max_total"), self._max_total)
                break
        self._enabled = enabled

    def set_enabled(
        self, on: bool, *, max_size: int | None = None, max_total: int | None = None
    ) -> None:
        """Turn checkpoints on or off, or change the caps, and record it in the session."""
        size = max_size or self.max_size
        total = max_total or self.max_total
        data: dict[str, Any] = {"enabled": on}
        if (size, total) != self._defaults:
            data.update(max_size=size, max_total=total)
        self._session().append_custom(CHECKPOINT_ENTRY, data)
        self._enabled, self._max_size, self._max_total = on, size, total

    def switch(self, on: bool) -> None:
        """Turn checkpoints on or off for now, without recording it (``set_enabled`` does)."""
        if self._enabled is None:
            self._read_settings()
        self._enabled = on

    def session_changed(self) -> None:
        """Another session file is in use (``%session new|open``, a rename): read its switch
        and its store afresh."""
        self._enabled = None
        self._store = None

    # --- the store -------------------------------------------------------------------------------

    @property
    def store(self) -> CheckpointStore:
        """The store beside the session file, its files with the session file's permissions."""
        path = self._session_path()
        root = store_dir_for(path)
        if self._store is None or self._store.root != root:
            try:
                mode = path.stat().st_mode & 0o777
            except OSError:
                mode = 0o600
            self._store = CheckpointStore(root, mode)
        return self._store

    def checkpoint_for(self, entry_id: str | None) -> Manifest | None:
        """The newest checkpoint taken at ``entry_id`` or, failing that, at the nearest entry
        above it on its branch (None: none on the way to the root)."""
        if entry_id is None:
            return None
        path = [entry.id for entry in self._session().get_branch(entry_id)]
        return self.store.latest_for(path)

    def load(self, manifest: Manifest) -> Loaded:
        """The values of ``manifest`` (see ``CheckpointStore.load``); the namespace is not
        touched. Raises CheckpointError for a missing or damaged checkpoint."""
        return self.store.load(manifest)

    # --- taking checkpoints ----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def capture_soon(self, reason: Reason = "manual") -> asyncio.Task[CaptureReport] | None:
        """Snapshot the namespace now, at the session's leaf, and write it in the background
        (None: checkpoints are off, or too many are being written). Never raises."""
        started = time.perf_counter()
        try:
            if not self.enabled:
                return None
            if len(self._tasks) >= MAX_IN_FLIGHT:
                self.dropped += 1
                return None
            entry_id = self._session().leaf_id
            store = self.store
            seq = store.allocate_seq()
            items, refused = select_values(self.namespace, _hidden_names())
            # Read now, not when the write ends: cells run meanwhile must not be taken for the
            # makers of what this snapshot holds.
            cells = self._cells()
            process = os.getpid()
            identities = {name: f"{process}:{id(value)}" for name, value in items}
            identities.update(
                (name, f"{process}:{id(self.namespace.get(name))}") for name in refused
            )
            pending: Awaitable[WriteResult]
            if self.use_fork:
                pending = capture_forked(store, items, max_size=self.max_size, timeout=self.timeout)
            else:
                pending = capture_in_thread(store, items, max_size=self.max_size)
        except Exception as exc:  # the run this was called from goes on without a checkpoint
            self.last = CaptureReport(None, 0, 0.0, 0.0, f"{type(exc).__name__}: {exc}")
            return None
        blocked = time.perf_counter() - started
        task = asyncio.ensure_future(
            self._finish(
                store,
                pending,
                seq,
                entry_id,
                reason,
                refused,
                (cells, identities),
                started,
                blocked,
            )
        )
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def after_message(self, message: object) -> None:
        """A listener's share of a finished message: after the result of a tool that ran code
        in the kernel, a checkpoint at that result's entry. Code the agent ran with
        ``run_python`` is no cell of the history, so it is kept here as one (what it binds
        was made by it)."""
        from ...ai.types import AssistantMessage, ToolCall, ToolResultMessage

        if isinstance(message, AssistantMessage):
            for part in message.content:
                if isinstance(part, ToolCall) and part.name == AGENT_CODE_TOOL:
                    code = part.arguments.get("code")
                    if isinstance(code, str):
                        self._calls[part.id] = code
            return
        if not isinstance(message, ToolResultMessage):
            return
        code = self._calls.pop(message.tool_call_id, None)
        if message.is_error:
            return
        if code is not None and message.tool_name == AGENT_CODE_TOOL:
            self._agent_code.append((self.history.mark if self.history is not None else 0, code))
        if message.tool_name in CAPTURE_TOOLS:
            self.capture_soon("cell")

    async def capture(self, reason: Reason = "manual") -> CaptureReport | None:
        """Take a checkpoint now and wait until it is written (None: checkpoints are off)."""
        task = self.capture_soon(reason)
        return None if task is None else await task

    async def settled(self) -> None:
        """Wait for the checkpoints being written."""
        while self._tasks or (self._pruning is not None and not self._pruning.done()):
            waiting = [*self._tasks, *([self._pruning] if self._pruning is not None else [])]
            await asyncio.gather(*waiting, return_exceptions=True)

    def _task_done(self, task: asyncio.Task[CaptureReport]) -> None:
        self._tasks.discard(task)
        if not self._tasks and (self._pruning is None or self._pruning.done()):
            self._pruning = asyncio.ensure_future(self._prune())

    async def _prune(self) -> None:
        """Drop the oldest checkpoints over the total cap and the objects no checkpoint names
        (a checkpoint started meanwhile marks the objects it reuses: they stay)."""
        try:
            await asyncio.to_thread(self.store.prune, self.max_total)
        except OSError as exc:
            self.last = CaptureReport(None, 0, 0.0, 0.0, f"pruning failed: {exc}")

    async def _finish(
        self,
        store: CheckpointStore,
        pending: Awaitable[WriteResult],
        seq: int,
        entry_id: str | None,
        reason: Reason,
        refused: dict[str, SkippedValue],
        seen: tuple[list[tuple[int | None, str | None, str]], dict[str, str]],
        started: float,
        blocked: float,
    ) -> CaptureReport:
        try:
            result = await pending
            skipped = _with_origins({**refused, **result.skipped}, *seen)
            manifest = Manifest(
                seq=seq,
                entry_id=entry_id,
                reason=reason,
                created=time.time(),
                values=result.values,
                skipped=skipped,
            )
            await asyncio.to_thread(store.write_manifest, manifest)
            report = CaptureReport(
                manifest, result.new_bytes, blocked, time.perf_counter() - started
            )
        except Exception as exc:  # a failed checkpoint is noted, never raised into the run
            report = CaptureReport(
                None, 0, blocked, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"
            )
        self.last = report
        return report

    def _cells(self) -> list[tuple[int | None, str | None, str]]:
        """The code run in this kernel, oldest first: IPython's ``In`` for the cells before the
        history started, then the history's records (with cell ids), with the code the agent
        ran (no count, no cell) among them in the order it ran."""
        records = self.history.records() if self.history is not None else []
        first = next((r.execution_count for r in records if r.execution_count), None)
        cells: list[tuple[int | None, str | None, str]] = []
        inputs = self.namespace.get("In")
        if isinstance(inputs, list):
            stop = first if first is not None else len(inputs)
            cells.extend((count, None, str(src)) for count, src in enumerate(inputs[:stop]) if src)
        agent = list(self._agent_code)
        for record in records:
            while agent and agent[0][0] <= record.index:
                cells.append((None, None, agent.pop(0)[1]))
            cells.append((record.execution_count, record.cell_id, record.source))
        cells.extend((None, None, code) for _, code in agent)
        return cells

    # --- status ----------------------------------------------------------------------------------

    def status(self) -> str:
        """What ``%checkpoint status`` prints."""
        store = self.store
        manifests = store.manifests()
        lines = [
            f"Checkpoints: {'on' if self.enabled else 'off'} ({store.root})",
            f"{len(manifests)} checkpoint{'s' if len(manifests) != 1 else ''}, "
            f"{format_size(store.total_size())} stored; cap {format_size(self.max_size)} each, "
            f"{format_size(self.max_total)} in all (oldest pruned first)",
        ]
        last = manifests[-1] if manifests else None
        if last is not None:
            when = time.strftime("%H:%M:%S", time.localtime(last.created))
            what = {
                "run_start": "at the start of a run",
                "cell": "after an agent's cell",
                "restore": "after a restore",
            }.get(last.reason, "on request")
            lines.append(
                f"Last: #{last.seq} at {when} {what} (entry {last.entry_id or '-'}), "
                f"{len(last.values)} values, {format_size(last.size)}"
            )
            for name, skipped in last.skipped.items():
                origin = ""
                if skipped.origin is not None:
                    count = skipped.origin.execution_count
                    origin = f"; made by In [{count}]" if count is not None else "; made by a cell"
                lines.append(f"  skipped {name} ({skipped.type}): {skipped.reason}{origin}")
        if self.last is not None and self.last.problem:
            lines.append(f"Last problem: {self.last.problem}")
        if self.dropped:
            lines.append(
                f"{self.dropped} checkpoint(s) skipped while earlier ones were still being written"
            )
        if not self.use_fork:
            lines.append("(values are pickled in a thread: fork is not available here)")
        return "\n".join(lines)


def _with_origins(
    skipped: dict[str, SkippedValue],
    cells: list[tuple[int | None, str | None, str]],
    identities: dict[str, str],
) -> dict[str, SkippedValue]:
    """Unpicklable values with the cells that made them (of ``cells``, those run before the
    snapshot) and which objects they were."""
    names = [name for name, s in skipped.items() if not s.serialisable]
    if not names:
        return skipped
    origins = find_origins(names, cells)
    return {
        name: replace(s, origin=origins.get(name), identity=identities.get(name))
        if name in names
        else s
        for name, s in skipped.items()
    }
