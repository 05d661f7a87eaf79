"""``NotebookAgent``: the kernel's agent — an ``AgentHarness`` over the notebook's session file,
plus the runs, tools and cell bookkeeping the magics need.

Everything that touches the harness (runs, compaction, tree moves, model changes) goes through one
queue of operations on the kernel's event loop, so cells behave in notebook order even when
"Run All" fires them at once: a second ``%%agent`` waits for the first run instead of failing.
``await agent.wait()`` returns when everything queued so far is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._gc import gc_paused
from ..ai.thinking_levels import THINKING_LEVELS
from .approval_policy import APPROVE_ENV, POLICY_ENTRY, ApprovalPolicy, Decision
from .default_model import (
    LOCAL_ALIASES,
    NoModelError,
    model_from_api_keys,
    resolve_default_model,
    resolve_model,
)
from .repeat_guard import RepeatGuard
from .session_files import open_notebook_session, start_notebook_session
from .workspace.document import NotebookDocument
from .workspace.history import ExecutionHistory

if TYPE_CHECKING:
    from ..agent.tools import AgentTool
    from ..agent.types import StreamFn
    from ..ai.cassette import Cassette
    from ..ai.event_stream import AssistantMessageEventStream
    from ..ai.options import StreamOptions
    from ..ai.types import AssistantMessage, Context, Model, ThinkingLevel
    from ..harness import AgentHarness, CompactionSettings, Session
    from ..harness.hooks import ToolCallEvent, ToolCallResult
    from ..mcp import McpServers
    from .notebook_tools import ToolRegistry
    from .run_view import RunView
    from .runs import Run
    from .tree_view import TreeView
    from .workspace.edit_tools import WriteTools
    from .workspace.history import ExecutionRecord

__all__ = ["APPROVAL_TIMEOUT", "NotebookAgent"]

APPROVAL_TIMEOUT = 300.0
"""Seconds a tool that needs approval waits for a click before it is denied."""

T = TypeVar("T")

RUN_MODULES = (
    "pi_notebook.harness.harness",
    "pi_notebook.agent.loop",
    "pi_notebook.ai.registry",
    "pi_notebook.notebook.notebook_tools",
    "pi_notebook.notebook.workspace.edit_tools",
    "pi_notebook.notebook.workspace.reading_tools",
    "pi_notebook.notebook.workspace.summary",
    "pi_notebook.mcp.servers",
    "pi_notebook.ai.http",
)
"""What a run needs that ``%load_ext`` does not import (the harness, the agent loop, the tools,
the HTTP layer and its transport): the first run imports them in a thread
(:meth:`NotebookAgent._execute`), so the kernel's event loop goes on with widgets and interrupts
meanwhile."""


def _import_run_modules() -> None:
    for name in RUN_MODULES:
        importlib.import_module(name)
    from ..ai.http import preload_transport

    preload_transport()  # aiohttp: ~0.2 s that the first request would spend on the loop


def _thinking_level(value: str) -> ThinkingLevel:
    return next((level for level in THINKING_LEVELS if level == value), "off")


def _compaction_for(model: Model) -> CompactionSettings:
    """pi's compaction settings, scaled down for small context windows: its 16k-token reserve
    would compact a 4k-token model (the embedded local one) after every turn."""
    from ..harness.compaction import CompactionSettings

    pi = CompactionSettings()
    return CompactionSettings(
        reserve_tokens=min(pi.reserve_tokens, model.context_window // 4),
        keep_recent_tokens=min(pi.keep_recent_tokens, model.context_window // 2),
    )


def _cassette_from_env() -> Cassette | None:
    """``Cassette.from_env()``, importing the cassette module (pydantic models, ~40 ms) only
    when the environment asks for one."""
    if not any(os.environ.get(name, "").strip() for name in _CASSETTE_ENV):
        return None
    from ..ai.cassette import Cassette

    return Cassette.from_env()


_CASSETTE_ENV = ("PI_NOTEBOOK_RECORD", "PI_NOTEBOOK_REPLAY")


class NotebookAgent:
    """One per kernel (``pi_notebook.current()``)."""

    def __init__(
        self,
        session_path: Path,
        namespace: dict[str, Any],
        *,
        stream_fn: Any = None,
    ) -> None:
        self.namespace = namespace
        opened, notice = start_notebook_session(session_path)
        self._session: Session | None = None if isinstance(opened, Path) else opened
        self._session_file: Path = opened if isinstance(opened, Path) else session_path
        self.load_notice: str | None = notice
        """What was wrong with the session file at load (None: nothing)."""
        self._tools: ToolRegistry | None = None
        self._tools_lock = threading.Lock()
        """The first run builds the registry in a thread (:meth:`prepare_run`); a cell asking
        for it meanwhile waits for that one instead of building another."""
        self._mcp: McpServers | None = None
        self.runs: list[Run] = []
        self.approval_timeout = APPROVAL_TIMEOUT
        self._stream_fn = stream_fn
        self.cassette: Cassette | None = _cassette_from_env()
        """Records or replays every model call (``PI_NOTEBOOK_RECORD`` / ``PI_NOTEBOOK_REPLAY``,
        ``%model --record`` / ``--replay``); None talks to the models directly."""
        self._harness: AgentHarness | None = None
        self._mcp_closing: asyncio.Future[None] | None = None
        self._tail: asyncio.Future[Any] | None = None
        self._inline: list[asyncio.Future[Any]] = []
        self._active: Run | None = None
        self._cell_starts: dict[str, str | None] = {}
        self.cell_key: str | None = None
        """Identifies the cell being executed (its id, or its source); set by a pre-run hook."""
        self.tree_views: list[TreeView] = []
        self.history = ExecutionHistory()
        """What ran in this kernel (installed on the shell by ``%load_ext``)."""
        self.document = NotebookDocument(self.history)
        """The notebook open in a frontend (linked by the pi_notebook labextension)."""
        self._waiters = 0
        self._writes: WriteTools | None = None
        self._writer_tools: dict[str, AgentTool] | None = None
        self._run_cells: dict[int, str | None] = {}
        self.repeat_guard = RepeatGuard()
        """Refuses a tool call repeated with the same arguments in one run (small models loop)."""
        self._pushed: list[str] = []
        """The tool names the harness was last given."""
        self._write_pinned: set[str] = set()
        """Write tools added with ``%tools add`` (offered without a frontend too)."""
        self.context_enabled = os.environ.get("PI_NOTEBOOK_CONTEXT", "on").strip().lower() not in (
            "off",
            "0",
            "false",
            "no",
        )
        """Send the change summary before each run (``%agent_context on|off``;
        ``PI_NOTEBOOK_CONTEXT=off`` starts with it off)."""
        self._context_mark = 0
        self.stall_ms: int | None = None
        """Silence of a model request after which the run view says "waiting for the model"
        (``None``: ``StreamOptions``' default, 5 s)."""
        self._unsaved_views: dict[RunView, str] = {}
        """Views showing a "not saved" notice, with its text (told when the retry succeeds)."""
        self._approval: ApprovalPolicy | None = None

    # --- built on first use ----------------------------------------------------------------------
    # %load_ext builds none of these: each needs the pydantic models of its layer (issue 15).

    @property
    def session(self) -> Session:
        """The notebook's session. A new notebook's is opened on first use (``%load_ext`` only
        wrote its file's header, see ``session_files``)."""
        if self._session is None:
            session, notice = open_notebook_session(self._session_file)
            if notice:  # the file changed since %load_ext started it
                print(f"pi_notebook: {notice}")
            self._session = session
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        self._session = session
        self._approval = None  # the other session's recorded policy applies
        if session.path is not None:
            self._session_file = session.path

    @property
    def restored_entries(self) -> int:
        """Entries the session held when it was opened (0 for a new one not opened yet)."""
        return 0 if self._session is None else len(self._session)

    @property
    def tools(self) -> ToolRegistry:
        """The notebook's tools: built-ins, the workspace's read and write tools, functions
        (made on first use: a pydantic model for each tool's parameters)."""
        if self._tools is None:
            with self._tools_lock:
                if self._tools is None:
                    self._tools = self._new_registry()
        return self._tools

    def _new_registry(self) -> ToolRegistry:
        from .notebook_tools import ToolRegistry, builtin_tools
        from .workspace.reading_tools import read_tools

        registry = ToolRegistry(builtin_tools(lambda: self.namespace))
        for reader in read_tools(self.history, lambda: self.document).values():
            registry.add_builtin(reader, enabled=True)
        for writer in self._writers().values():  # offered while a notebook is connected
            registry.add_builtin(writer, enabled=True)
        return registry

    @property
    def mcp(self) -> McpServers:
        """The MCP servers (``%mcp``); they start with the first run that follows."""
        if self._mcp is None:
            from ..mcp.servers import McpServers

            self._mcp = McpServers(on_change=self._push_tools)
        return self._mcp

    @property
    def write_tools(self) -> WriteTools:
        """Insert, edit, delete and run cells (each approved in the run view)."""
        if self._writes is None:
            from .workspace.edit_tools import WriteTools

            self._writes = WriteTools(
                self.document, self.history, waited_on=lambda: self._waiters > 0
            )
        return self._writes

    def _writers(self) -> dict[str, AgentTool]:
        """The write tools by name (made once, with the registry)."""
        if self._writer_tools is None:
            self._writer_tools = self.write_tools.tools()
        return self._writer_tools

    # --- the harness -----------------------------------------------------------------------------

    @property
    def session_path(self) -> Path:
        if self._session is None:
            return self._session_file
        path = self._session.path
        assert path is not None
        return path

    @property
    def harness(self) -> AgentHarness:
        """The harness (created when the first model is known: ``%model`` or the first run)."""
        if self._harness is None:
            model = self._known_model()
            if model is None:
                raise NoModelError()
            self._harness = self._new_harness(model)
        return self._harness

    def knows_model(self) -> bool:
        """Whether a model is known without starting one (the harness is made with it on the
        first run, after its imports in a thread: see :meth:`prepare_run`)."""
        return self._harness is not None or self._known_model() is not None

    def _known_model(self) -> Model | None:
        """A model known without starting anything: the session's, the environment's. (A
        session only started by ``%load_ext`` is not opened for this: it holds no entries.)"""
        from ..ai.models import parse_model

        ref = None if self._session is None else self._session.build_context().model
        if ref is not None:
            try:
                return parse_model(f"{ref.provider}/{ref.model_id}")
            except (KeyError, ValueError):
                pass  # a model of another machine (or an unregistered faux one)
        configured = os.environ.get("PI_NOTEBOOK_MODEL", "").strip()
        if configured and configured not in ("local", "local/smollm2-135m"):
            return parse_model(configured)
        return model_from_api_keys()

    def _new_harness(self, model: Model) -> AgentHarness:
        from ..harness.harness import AgentHarness

        context = self.session.build_context()
        harness = AgentHarness(
            self.session,
            model,
            tools=self._offer(),
            thinking_level=_thinking_level(context.thinking_level),
            stream_fn=self._call_model,
            compaction=_compaction_for(model),
        )
        harness.on("tool_call", self._approve_tool_call)
        return harness

    def _call_model(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream | Awaitable[AssistantMessageEventStream]:
        """The harness's stream function: the configured one, through the cassette if any.
        The live run's view hears of stalls (``StreamOptions.on_stall``)."""
        run = self._active
        if run is not None and options.on_stall is None:
            options = dataclasses.replace(
                options,
                on_stall=run.view.note_stall,
                stall_ms=self.stall_ms if self.stall_ms is not None else options.stall_ms,
            )
        if self._stream_fn is not None:
            inner: StreamFn = self._stream_fn
        else:
            from ..agent.loop import default_stream_fn

            inner = default_stream_fn
        if self.cassette is None:
            return inner(model, context, options)
        return self.cassette.wrap(inner)(model, context, options)

    async def resolve_model(self, ref: str | None = None) -> Model:
        """``ref`` (``provider/id`` or ``local``; None = the default model) as a ``Model``. While
        a cassette replays, the embedded local model is the one recorded in it: no server."""
        from ..ai.local import MODEL_ID as LOCAL_MODEL_ID

        cassette = self.cassette
        if cassette is not None and cassette.mode == "replay":
            wanted = ref or os.environ.get("PI_NOTEBOOK_MODEL", "").strip()
            if not wanted and model_from_api_keys() is None:
                wanted = "local"
            if wanted in LOCAL_ALIASES:
                recorded = cassette.recorded_model(f"local/{LOCAL_MODEL_ID}")
                if recorded is not None:
                    return recorded
        return await (resolve_model(ref) if ref else resolve_default_model())

    async def ensure_harness(self, model: Model | None = None) -> AgentHarness:
        """The harness, created on first use with ``model`` (else the known or default one),
        after :meth:`prepare_run`: the queued operations (a run, ``%model``) make it on the
        event loop."""
        if self._harness is None:
            await self.prepare_run()
            model = model or self._known_model() or await self.resolve_model()
            self._harness = self._new_harness(model)
        return self._harness

    # --- the operation queue ---------------------------------------------------------------------

    def enqueue(self, operation: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """Run ``operation`` after everything queued before it (errors don't block the queue)."""
        previous = self._tail

        async def step() -> T:
            if previous is not None:
                await asyncio.wait([previous])
            return await operation()

        future = asyncio.ensure_future(step())
        self._tail = future
        return future

    async def wait(self) -> AssistantMessage | None:
        """Wait until everything queued so far is done; the last run's final message."""
        self._waiters += 1  # a cell waits for the run: the run cannot ask to run cells now
        try:
            while self._tail is not None and not self._tail.done():
                await asyncio.wait([asyncio.shield(self._tail)])
        finally:
            self._waiters -= 1
        return self.last_run.result if self.last_run is not None else None

    @property
    def busy(self) -> bool:
        return self._tail is not None and not self._tail.done()

    def run_inline(self, future: asyncio.Future[Any]) -> None:
        """Mark an operation that started with nothing queued before it: the cell that queued
        it waits for it (:meth:`settled`), as for a magic that does its work at once."""
        self._inline = [*(f for f in self._inline if not f.done()), future]

    async def settled(self) -> None:
        """Wait for the operations marked with :meth:`run_inline` (the input rewrite awaits
        this after ``%model`` and friends). An interrupt stops the waiting, not the operation."""
        while self._inline:
            future = self._inline.pop(0)
            await asyncio.wait([asyncio.shield(future)])

    # --- runs ------------------------------------------------------------------------------------

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def active_run(self) -> Run | None:
        """The run that is streaming now, if any."""
        return self._active

    def start_run(
        self,
        prompt: str,
        *,
        model_ref: str | None = None,
        thinking: ThinkingLevel | None = None,
    ) -> Run:
        """Queue a run of ``prompt``; it starts when the queue reaches it."""
        # anywidget + ipywidgets load with the first view, not at %load_ext (bench/kernel_bench)
        from .run_view import RunView
        from .runs import Run

        view = RunView(thinking_level=thinking or "off")
        run = Run(len(self.runs) + 1, prompt, view)
        self.runs.append(run)
        key = self.cell_key
        self._run_cells[run.number] = key[3:] if key and key.startswith("id:") else None
        changes = self._take_changes()
        view.on_stop = self.abort
        view.on_stop_tool = self.cancel_tool_call
        view.on_steer = self.steer
        view.on_follow_up = lambda text: self._follow_up_in(run, text)
        future = self.enqueue(lambda: self._execute(run, key, model_ref, thinking, changes))
        run.start(lambda _run: future)
        return run

    def _take_changes(self) -> tuple[list[ExecutionRecord], int, int] | None:
        """The records since the agent's previous turn (None when the summary is off); the
        next turn's summary starts after this cell."""
        since, until = self._context_mark, self.history.mark
        self._context_mark = until
        if not self.context_enabled:
            return None
        return self.history.records(since=since), since, until

    def _kernel_count(self, cell_id: str | None) -> int | None:
        """The execution count the kernel gave cell ``cell_id`` last (running or finished)."""
        if cell_id is None:
            return None
        running = self.history.running
        if running is not None and running.cell_id == cell_id:
            return running.execution_count
        finished = (r for r in reversed(self.history.records()) if r.cell_id == cell_id)
        return next((r.execution_count for r in finished), None)

    async def _append_change_summary(
        self, changes: tuple[list[ExecutionRecord], int, int] | None, anchor: str | None
    ) -> None:
        """Put the change summary into the session right before the prompt (a
        ``custom_message`` entry: the model sees it, ``%tree`` shows it)."""
        if changes is None:
            return
        records, since, until = changes
        document = None
        if self.document is not None and self.document.connected:
            try:
                document = await self.document.cells()
            except Exception:  # the frontend went away: the kernel's records still stand
                document = None
        from ..harness.session import SessionWriteError
        from .workspace.summary import CUSTOM_TYPE, summarize_changes

        summary = summarize_changes(
            records,
            since=since,
            until=until,
            document=document,
            anchor=anchor,
            anchor_count=self._kernel_count(anchor),
        )
        if summary is not None:
            # A failed write keeps it in memory (``unsaved_entries``): the run goes on and its
            # view says what is not saved (``_note_session_writes``).
            with contextlib.suppress(SessionWriteError):
                self.session.append_custom_message(
                    CUSTOM_TYPE, summary.text, display=True, details=summary.details
                )

    async def _execute(
        self,
        run: Run,
        cell_key: str | None,
        model_ref: str | None,
        thinking: ThinkingLevel | None,
        changes: tuple[list[ExecutionRecord], int, int] | None = None,
    ) -> AssistantMessage | None:
        if run.cancelled:
            return None
        harness = await self.ensure_harness()
        if model_ref:
            harness.set_model(await self.resolve_model(model_ref))
        if thinking:
            harness.set_thinking_level(thinking)
        self._branch_for_cell(cell_key)
        _ = self.approval_policy  # one set by the environment is recorded before the run
        await self._start_mcp()
        await self._append_change_summary(changes, self._run_cells.get(run.number))
        return await self._prompt(run, run.prompt)

    async def prepare_run(self) -> None:
        """Import what a run needs beyond ``%load_ext`` (:data:`RUN_MODULES`) and make the
        notebook's tools in a thread, then open the session if it is not open yet: the first
        run must not stall the event loop for the imports (the pydantic models of the harness,
        agent and tools layers) while its view is live."""
        if not self._prepared():
            await asyncio.to_thread(self._prepare)
        _ = self.session

    def prepare_now(self) -> None:
        """:meth:`prepare_run`'s work in the calling cell: a magic whose change is made at once
        (``%model`` with nothing queued) ends with the harness ready, as the cells after it
        expect, instead of leaving an operation in progress."""
        if not self._prepared():
            self._prepare()
        _ = self.session

    def _prepared(self) -> bool:
        return self._tools is not None and all(name in sys.modules for name in RUN_MODULES)

    def _prepare(self) -> None:
        with gc_paused():  # a full collection here would hold the GIL (and the loop) for ~0.2 s
            _import_run_modules()
            _ = self.tools

    async def _start_mcp(self) -> None:
        """Start configured MCP servers not running yet (first use); a failure is reported and
        the run goes on without that server's tools."""
        for reason in (await self.mcp.start()).values():
            print(f"MCP: {reason} (see %mcp list)")

    def _branch_for_cell(self, cell_key: str | None) -> None:
        """A re-run cell starts a sibling branch where its first run started."""
        if cell_key is None:
            return
        if cell_key in self._cell_starts:
            start = self._cell_starts[cell_key]
            if self.session.leaf_id != start:
                self.session.set_leaf(start)
        else:
            self._cell_starts[cell_key] = self.session.leaf_id

    async def _prompt(self, run: Run, text: str) -> AssistantMessage | None:
        harness = self.harness
        run.state = "running"
        run.view.set_model(harness.model, harness.thinking_level)
        unsubscribe = harness.subscribe(run.view.handle)
        unwatch = harness.subscribe(lambda event: self._watch_writes(run, event))
        self._active = run
        self._note_session_writes(run)  # e.g. the change summary just before could not be written
        self.write_tools.begin_run(run.number, self._run_cells.get(run.number))
        self.repeat_guard.begin_run()
        if self._harness is not None and self._pushed != [t.name for t in self.offered_tools()]:
            self._push_tools()  # a notebook frontend connected or went away since the last run
        try:
            task = asyncio.ensure_future(harness.prompt(text))
            # Messages sent while the run was queued go in as soon as it is underway (steering
            # queued before the first model call is injected right after the prompt).
            while harness.phase == "idle" and not task.done():
                await asyncio.sleep(0)
            if not task.done():
                for kind, queued in run.take_pending():
                    (harness.steer if kind == "steer" else harness.follow_up)(queued)
            return await task
        finally:
            self._active = None
            unsubscribe()
            unwatch()
            self._note_session_writes(run)
            self.refresh_tree_views()
            for _kind, late in run.take_pending():  # sent as the run ended: the next prompts
                self._follow_up_in(run, late)

    def _watch_writes(self, run: Run, event: object) -> None:
        """A listener of the run's events: after each saved message, how the file stands."""
        if getattr(event, "type", None) in ("message_end", "turn_end", "agent_end"):
            self._note_session_writes(run)

    def _note_session_writes(self, run: Run) -> None:
        """Show in ``run``'s view that a session write failed (the session keeps the entries in
        memory and retries with the next write), and tell every view that said so once the
        retry has put them in the file. The harness goes on after such a failure, so nothing
        else reports it: checked while the run streams and when it ends."""
        error = self.session.write_error
        if error is not None and self.session.unsaved_entries:
            from ..ai.producer import describe_error

            reason = (
                f"Could not write the session {error.path}: {describe_error(error.cause)}; "
                "this turn is not in the file yet (kept in memory, written as soon as the "
                "file can be written again)"
            )
            if self._unsaved_views.get(run.view) != reason:
                self._unsaved_views[run.view] = reason
                run.view.note_unsaved(reason)
        elif self._unsaved_views:
            for view in self._unsaved_views:
                view.note_saved()
            self._unsaved_views.clear()

    def _follow_up_in(self, run: Run, text: str) -> None:
        """The view's box after its run ended: continue in the same view."""
        if self._active is not None:
            self.follow_up(text)
            return
        future = self.enqueue(lambda: self._prompt(run, text))
        run.start(lambda _run: future)

    # --- steering --------------------------------------------------------------------------------

    def _target_run(self) -> Run | None:
        """The run a steer/follow-up/abort is for: the live one, else the next queued one."""
        if self._active is not None:
            return self._active
        return next((r for r in self.runs if r.state == "queued" and not r.finished), None)

    def steer(self, text: str) -> bool:
        """Send a steering message into the live (or next queued) run; False when none."""
        return self._queue_message("steer", text)

    def follow_up(self, text: str) -> bool:
        """Queue a follow-up for the live (or next queued) run; False when none."""
        return self._queue_message("follow_up", text)

    def _queue_message(self, kind: str, text: str) -> bool:
        run = self._target_run()
        if run is None:
            return False
        if run is self._active and self.harness.phase != "idle":
            (self.harness.steer if kind == "steer" else self.harness.follow_up)(text)
        else:  # the run has not reached the harness yet: it takes them as soon as it does
            run.pending.append((kind, text))
        run.view.note_queued(kind, text)
        return True

    def abort(self) -> bool:
        """Abort the live run (its partial reply is kept) or drop the next queued one; False
        when there is neither."""
        run = self._target_run()
        if run is None:
            return False
        if run is self._active and self._harness is not None:
            self._harness.abort()
        else:
            run.cancel_before_start()
        return True

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one running tool call of the live run (its card's stop); the run goes on and
        the model sees an error result. False when that call is not running."""
        return self._harness is not None and self._harness.cancel_tool_call(tool_call_id)

    # --- tools -----------------------------------------------------------------------------------

    def register_tool(self, made: AgentTool) -> bool:
        """Add (or replace) a notebook tool; True if it replaced one."""
        replaced = self.tools.add_function(made)
        self._push_tools()
        return replaced

    def active_tools(self) -> list[AgentTool]:
        """What the agent gets: the registry's tools, then the MCP tools switched on."""
        return [*self.tools.active(), *self.mcp.tools()]

    def tool_listing(self) -> list[tuple[str, str, bool, str]]:
        """(name, kind, active, description) of every tool, MCP ones included."""
        rows = self.tools.listing()
        rows += [
            (t.name, f"mcp: {t.server}", self.mcp.is_enabled(t.name), t.description)
            for t in self.mcp.all_tools()
        ]
        return rows

    def add_tool_by_name(self, name: str) -> str:
        """``%tools add NAME``: a built-in, an MCP tool, or a function from the notebook."""
        if self.mcp.is_tool(name):
            self.mcp.enable(name)
            return f"Enabled the MCP tool {name}"
        if name in self._writers():
            self._write_pinned.add(name)
            self.tools.enable_builtin(name)
            self._push_tools()
            return f"Enabled the notebook tool {name} (also without a notebook frontend)"
        if self.tools.is_builtin(name):
            self.tools.enable_builtin(name)
            self._push_tools()
            return f"Enabled the built-in tool {name}"
        from ..agent.tools import AgentTool
        from ..tools.decorator import tool

        value = self.namespace.get(name)
        if value is None:
            raise KeyError(f"No function or built-in tool named {name!r}")
        if isinstance(value, AgentTool):
            made = value
        elif callable(value):
            made = tool(value)
        else:
            raise TypeError(f"{name!r} is a {type(value).__name__}, not a function")
        replaced = self.register_tool(made)
        return f"{'Updated' if replaced else 'Added'} the tool {made.name}"

    def refresh_function_tools(self) -> None:
        """Re-wrap notebook-function tools whose function was redefined in a later cell."""
        if self._tools is None:  # no tool registered yet: nothing to re-wrap
            return
        from ..tools.decorator import FunctionTool

        changed = False
        for name, _kind, _active, _desc in self.tools.listing():
            made = self.tools.function_tool(name)
            if not isinstance(made, FunctionTool):
                continue
            fn_name = getattr(made.fn, "__name__", name)
            current = self.namespace.get(fn_name)
            if current is None or current is made or current is made.fn:
                continue
            if isinstance(current, FunctionTool):
                self.tools.add_function(current)
            elif callable(current):
                self.tools.add_function(made.with_function(current))
            changed = True
        if changed:
            self._push_tools()

    def remove_tool(self, name: str) -> bool:
        """``%tools remove NAME``; False if no such tool was active."""
        if self.mcp.is_tool(name):
            return self.mcp.disable(name)
        removed = self.tools.remove(name)
        self._write_pinned.discard(name)
        if removed:
            self._push_tools()
        return removed

    def offered_tools(self) -> list[AgentTool]:
        """The active tools the model gets: the write tools only while a notebook frontend is
        connected (or when added with ``%tools add``), so an executed notebook (nbclient,
        papermill, a cassette replay) sees the same tools as before unless it asks for them."""
        from .workspace.edit_tools import WRITE_TOOL_NAMES

        connected = self.document.connected
        return [
            t
            for t in self.active_tools()
            if t.name not in WRITE_TOOL_NAMES or connected or t.name in self._write_pinned
        ]

    def _offer(self) -> list[AgentTool]:
        offered = self.offered_tools()
        self._pushed = [t.name for t in offered]
        return offered

    def _push_tools(self) -> None:
        if self._harness is not None:
            self._harness.set_tools(self._offer())

    async def _approve_tool_call(self, event: ToolCallEvent) -> ToolCallResult | None:
        """The ``tool_call`` hook: a call repeated too often in one run is refused (see
        :mod:`.repeat_guard`); tools marked ``requires_approval`` wait for Allow / Deny in the
        run view (denied after ``approval_timeout`` seconds without an answer)."""
        from ..harness.hooks import ToolCallResult
        from .workspace.edit_tools import WRITE_TOOL_NAMES

        name = event.tool_name
        verdict = self.repeat_guard.check(name, dict(event.input))
        if verdict.reason is not None:
            if verdict.stop and self._harness is not None:
                if self._active is not None:
                    self._active.view.note_stopped(f"Stopped: {verdict.reason}")
                self._harness.abort()
            return ToolCallResult(block=True, reason=verdict.reason)
        decision = self.approval_policy.decide(name)
        if decision == "deny":
            if self._active is not None:
                self._active.view.note_policy(event.tool_call_id, name, event.input, allowed=False)
            return ToolCallResult(
                block=True,
                reason=f"{name} was not run: the notebook's approval policy denies it "
                f"(%approve {name} deny). Do without it, or tell the user what you need.",
            )
        if name in WRITE_TOOL_NAMES:
            return await self._approve_write(event, by_policy=decision == "allow")
        made = next((t for t in self.active_tools() if t.name == name), None)
        if not getattr(made, "requires_approval", False):
            return None
        run = self._active
        if decision == "allow":
            if run is not None:
                run.view.note_policy(event.tool_call_id, name, event.input, allowed=True)
            return None
        if run is None:
            return ToolCallResult(block=True, reason=f"{name} needs approval, but no run is shown")
        allowed = await run.view.request_approval(
            event.tool_call_id, name, event.input, timeout=self.approval_timeout
        )
        if allowed is None:
            reason = f"Nobody approved {name} within {self.approval_timeout:.0f} s"
            return ToolCallResult(block=True, reason=reason)
        if not allowed:
            return ToolCallResult(block=True, reason=f"The user denied {name}")
        return None

    async def _approve_write(
        self, event: ToolCallEvent, *, by_policy: bool = False
    ) -> ToolCallResult | None:
        """A notebook write tool: the card shows what it would do (the cell's source, a diff);
        "always allow" is remembered for the session. Without a frontend nothing is written,
        so nothing is asked (the tool says what it would have done). ``by_policy``: allowed
        by ``%approve``, so nothing is asked either."""
        from ..harness.hooks import ToolCallResult
        from .workspace.document import DocumentError, NotebookNotConnected

        name, tools = event.tool_name, self.write_tools
        if not tools.needs_approval(name):
            return None
        run = self._active
        if by_policy:
            if run is not None:
                run.view.note_policy(event.tool_call_id, name, event.input, allowed=True)
            tools.approve(event.tool_call_id)
            return None
        if run is None:
            return ToolCallResult(block=True, reason=f"{name} needs approval, but no run is shown")
        try:
            preview = await tools.preview(name, dict(event.input))
        except (DocumentError, NotebookNotConnected) as exc:
            return ToolCallResult(block=True, reason=f"{exc} Nothing was changed.")
        allowed = await run.view.request_approval(
            event.tool_call_id, name, event.input, timeout=self.approval_timeout, preview=preview
        )
        if allowed is None:
            reason = f"Nobody approved {name} within {self.approval_timeout:.0f} s"
            return ToolCallResult(block=True, reason=f"{reason}; the notebook is unchanged.")
        if not allowed:
            return ToolCallResult(
                block=True, reason=f"The user denied {name}; the notebook is unchanged."
            )
        if run.view.answered_always(event.tool_call_id):
            tools.allow_always(name)
        tools.approve(event.tool_call_id)
        return None

    # --- the approval policy ------------------------------------------------------------------

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """The policy recorded last in the session, with ``PI_NOTEBOOK_APPROVE`` applied over
        it (and recorded, when it changes something)."""
        if self._approval is None:
            recorded = ApprovalPolicy()
            for entry in self.session.get_entries():
                if getattr(entry, "custom_type", None) == POLICY_ENTRY:
                    recorded = ApprovalPolicy.from_data(getattr(entry, "data", None)) or recorded
            self._approval = recorded
            configured = os.environ.get(APPROVE_ENV, "").strip()
            if configured:
                try:
                    wanted = recorded.merged(ApprovalPolicy.parse(configured))
                except ValueError as exc:
                    print(f"pi_notebook: {exc}; the approval policy is unchanged")
                else:
                    if wanted.rules != recorded.rules:
                        self._record_policy(wanted)
        return self._approval

    def set_approval(self, target: str, decision: Decision) -> ApprovalPolicy:
        """``%approve TARGET DECISION``: change the policy and record it in the session."""
        policy = ApprovalPolicy(self.approval_policy.rules)
        policy.set(target, decision)
        self._record_policy(policy)
        return policy

    def _record_policy(self, policy: ApprovalPolicy) -> None:
        self.session.append_custom(POLICY_ENTRY, policy.to_data())
        self._approval = policy

    # --- facts for %model / %session -------------------------------------------------------------

    def session_cost(self) -> float:
        """Dollars spent by every assistant message in the session file."""
        from ..ai.types import AssistantMessage

        total = 0.0
        for entry in self.session.get_entries():
            message = getattr(entry, "message", None)
            if isinstance(message, AssistantMessage):
                total += message.usage.cost.total
        return total

    def use_session(self, session: Session) -> None:
        """Work in another session from now on (``%session new`` / ``open``)."""
        model = self._harness.model if self._harness is not None else None
        self.session = session
        self._cell_starts.clear()
        self._harness = self._new_harness(model) if model is not None else None
        for view in self.tree_views:
            view.session = session

    def refresh_tree_views(self) -> None:
        for view in self.tree_views:
            view.refresh()

    def shutdown(self) -> None:
        """Abort what runs and stop the MCP servers (``%unload_ext``)."""
        self.abort()
        if self._mcp is not None and len(self.mcp):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.mcp.aclose())
            else:
                self._mcp_closing = asyncio.ensure_future(self.mcp.aclose())
