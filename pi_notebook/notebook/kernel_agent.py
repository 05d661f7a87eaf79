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
from .approval_policy import ApprovalPolicy, Decision
from .default_model import (
    LOCAL_ALIASES,
    NoModelError,
    SessionModelMissing,
    local_model_available,
    model_from_api_keys,
    resolve_default_model,
    resolve_model,
    server_model_of,
)
from .instructions import KEEP
from .locations import notebook_location, session_path_beside, sibling_session_path
from .operations import OperationQueue
from .repeat_guard import RepeatGuard
from .room import compacted_size, compaction_for, no_room_words, request_overhead, request_size
from .session_files import open_notebook_session, open_session, start_notebook_session
from .session_follow import (
    claimed_by,
    find_session_file,
    header_id,
    move_no_clobber,
    notebook_stem,
    renamed_session_file,
    session_owner,
)
from .session_lock import SessionLock, lock_holder
from .tool_gate import ToolGate
from .tool_offer import ToolOffer
from .workspace.document import NotebookDocument
from .workspace.history import ExecutionHistory

if TYPE_CHECKING:
    from ..agent.tools import AgentTool
    from ..agent.types import StreamFn
    from ..ai.cassette import Cassette
    from ..ai.types import AssistantMessage, Model, ThinkingLevel
    from ..harness import AgentHarness, BudgetSettings, Session
    from ..harness.hooks import FinishTurnEvent, ToolResultEvent
    from ..mcp import McpServers
    from .checkpoints import Checkpoints
    from .notebook_tools import ToolRegistry
    from .runs import Run
    from .widgets.run_view import RunView
    from .widgets.tree_view import TreeView
    from .workspace.edit_tools import WriteTools
    from .workspace.history import ExecutionRecord
    from .workspace.review import ReplyChanges

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
    "pi_notebook.notebook.workspace.review",
    "pi_notebook.notebook.workspace.summary",
    "pi_notebook.mcp.servers",
    "pi_notebook.ai.http",
    "pi_notebook.notebook.checkpoints.recorder",
)
"""What a run needs that ``%load_ext`` does not import (the harness, the agent loop, the tools,
the HTTP layer and its transport): the first run imports them in a thread
(:meth:`NotebookAgent._execute`), so the kernel's event loop goes on with widgets and interrupts
meanwhile."""


def _import_run_modules() -> None:
    for name in RUN_MODULES:
        importlib.import_module(name)
    from ..ai.http import preload_transport

    preload_transport()  # aiohttp's import would otherwise stall the loop at the first request


def _thinking_level(value: str) -> ThinkingLevel:
    return next((level for level in THINKING_LEVELS if level == value), "off")


def _cassette_from_env() -> Cassette | None:
    """``Cassette.from_env()``, importing the cassette module (pydantic models) only
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
        self._cassette: Cassette | None = _cassette_from_env()
        """Records or replays every model call (``PI_NOTEBOOK_RECORD`` / ``PI_NOTEBOOK_REPLAY``,
        ``%model --record`` / ``--replay``); None talks to the models directly."""
        self._harness: AgentHarness | None = None
        self._mcp_closing: asyncio.Future[None] | None = None
        self.operations = OperationQueue()
        """Runs and the magics that change the harness, in cell order; the compaction a
        finished run called for runs in its background (:meth:`_settle_after`)."""
        self._no_room: tuple[str, int, str] | None = None
        """(model, request overhead, what to tell the user) after a compaction that could not
        bring the context under the line: the next run starts only if its request fits."""
        self._active: Run | None = None
        self._cell_starts: dict[str, str | None] = {}
        self.cell_key: str | None = None
        """Identifies the cell being executed (its id, or its source); set by a pre-run hook."""
        self.tree_views: list[TreeView] = []
        self.history = ExecutionHistory()
        """What ran in this kernel (installed on the shell by ``%load_ext``)."""
        self.document = NotebookDocument(self.history)
        """The notebook open in a frontend (linked by the pi_notebook labextension)."""
        self.document.follow = self._follow_notebook
        self._writes: WriteTools | None = None
        self._writer_tools: dict[str, AgentTool] | None = None
        self._reply_changes: ReplyChanges | None = None
        self._run_cells: dict[int, str | None] = {}
        self._code_anchors: dict[int, str] = {}
        """Per run: the cell its view's "Insert as cell" inserted last (the next goes below)."""
        self._code_clicks = 0
        self.repeat_guard = RepeatGuard()
        """Refuses a tool call repeated with the same arguments in one run (small models loop)."""
        self.tool_offer = ToolOffer(self)
        """Which tools the model is offered (``%tools``, ``%model --tools``)."""
        self.approvals = ToolGate(self)
        """The ``tool_call`` hook: the repeat guard, the approval policy, Allow / Deny (made
        before the session lock, which may switch to a copy of the session)."""
        self._run_tool_results = 0
        """Tool results in the live run."""
        self._answer_asked = False
        self._numbers_asked = False
        """Whether the live run was asked to state its answer (once a run)."""
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
        self.notebook, self._root = notebook_location()
        """The notebook's file (None: unknown) and the server root its frontend path is
        relative to; the labextension says when the notebook is renamed or moved."""
        self.read_only: Path | None = None
        """A session file opened only to look at (``%session open --read-only``): runs and
        other writes are refused."""
        self.session_lock = SessionLock()
        held = self.session_lock.acquire(self.session_path)
        if held is not None:
            copied = self._continue_in_copy(held)
            self.load_notice = f"{notice}; {copied}" if notice else copied
        self._checkpoints: Checkpoints | None = None

    # --- built on first use ----------------------------------------------------------------------
    # %load_ext builds none of these: each needs the pydantic models of its layer.

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
        self.approvals.forget()  # the other session's recorded policy applies
        if session.path is not None:
            self._session_file = session.path

    @property
    def checkpoints(self) -> Checkpoints:
        """Checkpoints of the namespace beside the session file (``%checkpoint``)."""
        if self._checkpoints is None:
            from .checkpoints import Checkpoints

            self._checkpoints = Checkpoints(
                lambda: self.session, lambda: self.session_path, self.namespace, self.history
            )
        return self._checkpoints

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

        registry = ToolRegistry(
            builtin_tools(lambda: self.namespace, self.history.note_agent_failure)
        )
        for reader in read_tools(self.history, lambda: self.document, self.takes_images).values():
            registry.add_builtin(reader, enabled=True)
        from .verify import verify_tool

        # Off until `%tools add verify_notebook`: a new default tool changes every request.
        registry.add_builtin(verify_tool(lambda: self.document, self.history), enabled=False)
        for writer in self._writers().values():  # offered while a notebook is connected
            registry.add_builtin(writer, enabled=True)
        return registry

    @property
    def mcp(self) -> McpServers:
        """The MCP servers (``%mcp``); they start with the first run that follows."""
        if self._mcp is None:
            from ..mcp.servers import McpServers

            self._mcp = McpServers(on_change=self.tool_offer.push)
        return self._mcp

    @property
    def write_tools(self) -> WriteTools:
        """Insert, edit, delete and run cells (each approved in the run view)."""
        if self._writes is None:
            from .workspace.edit_tools import WriteTools

            self._writes = WriteTools(
                self.document,
                self.history,
                waited_on=lambda: self.operations.waited_on,
                takes_images=self.takes_images,
            )
        return self._writes

    def takes_images(self) -> bool:
        """Whether the model in use takes images: the plots the tools and the change summary
        give are sent as images, else as a one-line note each."""
        model = self._harness.model if self._harness is not None else None
        return model is not None and "image" in model.input

    @property
    def reply_changes(self) -> ReplyChanges:
        """The cell writes of the model's latest reply, reviewed together."""
        if self._reply_changes is None:
            from .workspace.review import ReplyChanges

            self._reply_changes = ReplyChanges()
        return self._reply_changes

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

    async def _session_server_model(self) -> Model | None:
        """The session's model when it is one on a local server (``ollama/…``): asked of that
        server, which says its context window. None when the server does not answer (the
        default model is used, as for a model of another machine)."""
        from ..ai.server_refs import is_server_ref

        ref = None if self._session is None else self._session.build_context().model
        if ref is None or not is_server_ref(f"{ref.provider}/{ref.model_id}"):
            return None
        try:
            return await server_model_of(f"{ref.provider}/{ref.model_id}")
        except (LookupError, ValueError):
            # never a silent switch to another model: its window may not hold the session
            raise SessionModelMissing(f"{ref.provider}/{ref.model_id}") from None

    def _known_model(self) -> Model | None:
        """A model known without starting anything: the session's, else the environment's. (A
        session only started by ``%load_ext`` is not opened for this: it holds no entries.)
        A session whose own model this kernel lacks raises :class:`SessionModelMissing`: a
        run never goes on silently with another model. None when the session's model is the
        embedded local one, not started yet (:meth:`ensure_harness` starts it)."""
        from ..ai.models import parse_model
        from ..ai.server_refs import is_server_ref

        own = self.session_model_ref()
        if own is not None:
            try:
                return parse_model(own)
            except (KeyError, ValueError):
                if is_server_ref(own):
                    return None  # asked of its server when the harness is made
                if own in LOCAL_ALIASES and local_model_available():
                    return None
                raise SessionModelMissing(own) from None
        configured = os.environ.get("PI_NOTEBOOK_MODEL", "").strip()
        if is_server_ref(configured):
            return None  # asked of its server when the harness is made
        if configured and configured not in LOCAL_ALIASES:
            return parse_model(configured)
        return model_from_api_keys()

    def session_model_ref(self) -> str | None:
        """The session's own model as ``provider/model-id``: the last one set on its branch
        (pi restores the same after a restart); None for a session without one."""
        if self._session is None:
            return None
        ref = self._session.build_context().model
        return None if ref is None else f"{ref.provider}/{ref.model_id}"

    def session_model_problem(self) -> str | None:
        """Why a run cannot use the session's own model in this kernel (see
        :class:`SessionModelMissing`); None when it can, or once a harness has a model."""
        if self._harness is not None:
            return None
        try:
            self._known_model()
        except SessionModelMissing as exc:
            return str(exc)
        except (KeyError, ValueError):  # a bad PI_NOTEBOOK_MODEL: the run reports it
            return None
        return None

    def pending_model_note(self) -> str | None:
        """What the first run will use when no model is chosen yet and nothing needs
        configuring: the embedded local model, started then. None otherwise."""
        if self._harness is not None or not local_model_available():
            return None
        if self.session_model_ref() in LOCAL_ALIASES:
            return (
                "This session's model is the embedded local model (local/smollm2-135m); it "
                "starts with the next run."
            )
        if self._known_model() is None:
            return (
                "No model chosen yet: the next run starts the embedded local model (SmolLM2 "
                "135M). Choose another with `%model PROVIDER/MODEL-ID`."
            )
        return None

    def _new_harness(self, model: Model) -> AgentHarness:
        from ..harness.harness import AgentHarness

        context = self.session.build_context()
        harness = AgentHarness(
            self.session,
            model,
            tools=self.tool_offer.offer_to(model),
            thinking_level=_thinking_level(context.thinking_level),
            stream_fn=self._model_stream(),
            compaction=compaction_for(model),
            system_prompt=self.default_prompt(model),
        )
        harness.on("tool_call", self.approvals.on_tool_call)
        harness.defer_threshold_compaction = True  # done after the run: _settle_after
        harness.subscribe(self._check_room)
        harness.on("tool_result", self._note_tool_result)
        harness.on("finish_turn", self._ask_for_answer)
        return harness

    def _model_stream(self) -> StreamFn | None:
        """The harness's stream function: the one given to this agent, through the cassette if
        any (``None``: the provider's own)."""
        if self._cassette is None:
            return self._stream_fn  # type: ignore[no-any-return]
        return self._cassette.wrap(self._stream_fn)

    @property
    def cassette(self) -> Cassette | None:
        """The cassette model calls are recorded into or replayed from (``None``: live)."""
        return self._cassette

    @cassette.setter
    def cassette(self, cassette: Cassette | None) -> None:
        self._cassette = cassette
        if self._harness is not None:
            self._harness.stream_fn = self._model_stream()

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

    def resolve_model_now(self, ref: str) -> Model | None:
        """``ref`` as a ``Model`` when nothing has to start for it (as :meth:`resolve_model`
        would give it), else None: the embedded local model starts in the background, a local
        server's model is looked up there."""
        from ..ai.local import MODEL_ID as LOCAL_MODEL_ID
        from ..ai.models import parse_model
        from ..ai.server_refs import is_server_ref

        ref = ref.strip()
        if is_server_ref(ref):
            return None  # its server is asked (on the loop) for the model's window
        if ref not in LOCAL_ALIASES:
            return parse_model(ref)
        cassette = self.cassette
        if cassette is not None and cassette.mode == "replay":
            return cassette.recorded_model(f"local/{LOCAL_MODEL_ID}")
        return None

    def use_model_now(self, model: Model) -> AgentHarness:
        """Switch to ``model`` in the calling cell (nothing queued): the harness is made now if
        there is none yet, so the code after ``%model`` sees it whether the magic was typed or
        called with ``run_line_magic``."""
        self.prepare_now()
        if self._harness is None:
            self._harness = self._new_harness(model)
        self._harness.set_model(model)
        return self._harness

    async def ensure_harness(self, model: Model | None = None) -> AgentHarness:
        """The harness, created on first use with ``model`` (else the known or default one),
        after :meth:`prepare_run`: the queued operations (a run, ``%model``) make it on the
        event loop."""
        if self._harness is None:
            await self.prepare_run()
            own = self.session_model_ref()
            local = own if own in LOCAL_ALIASES else None  # the session's, not the default
            model = (
                model
                or await self._session_server_model()
                or self._known_model()
                or await self.resolve_model(local)
            )
            self._harness = self._new_harness(model)
        return self._harness

    # --- the operation queue ---------------------------------------------------------------------

    def enqueue(self, operation: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """Run ``operation`` after everything queued before it (errors don't block the queue)."""
        return self.operations.enqueue(operation)

    async def wait(self) -> AssistantMessage | None:
        """Wait until everything queued so far is done; the last run's final message."""
        await self.operations.wait()
        return self.last_run.result if self.last_run is not None else None

    @property
    def busy(self) -> bool:
        """Something is queued or running (a compaction after a run included)."""
        return self.operations.busy

    def run_inline(self, future: asyncio.Future[Any]) -> None:
        """See :meth:`OperationQueue.run_inline`."""
        self.operations.run_inline(future)

    async def settled(self) -> None:
        """See :meth:`OperationQueue.settled`."""
        await self.operations.settled()

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
        budget: dict[str, float] | None = None,
        edit_cell: str | None = None,
    ) -> Run:
        """Queue a run of ``prompt``; it starts when the queue reaches it. ``budget``: this
        run's caps (``max_cost``, ``max_tokens``, ``max_turns``) over the run defaults;
        ``edit_cell``: the cell the run is about (default: the last cell whose latest run
        failed), which "Apply as edit" on a reply's code block proposes to change."""
        # anywidget + ipywidgets load with the first view, not at %load_ext (bench/kernel_bench)
        from .runs import Run
        from .widgets.run_view import RunView
        from .workspace.code_actions import edit_target

        view = RunView(thinking_level=thinking or "off")
        run = Run(len(self.runs) + 1, prompt, view)
        run.budget = dict(budget or {})
        run.edit_cell = edit_cell or edit_target(self.history)
        self.runs.append(run)
        key = self.cell_key
        self._run_cells[run.number] = key[3:] if key and key.startswith("id:") else None
        changes = self._take_changes()
        view.on_stop = self.abort
        view.on_stop_tool = self.cancel_tool_call
        view.on_steer = self.steer
        view.on_follow_up = lambda text: self._follow_up_in(run, text)
        view.on_code_action = lambda action, source: self._code_action(run, action, source)
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
            from ..ai.types import TextContent
            from .workspace.images import record_images

            plots = await asyncio.to_thread(record_images, summary.shown, self.takes_images())
            content = [TextContent(text=summary.text), *plots] if plots else summary.text
            # A failed write keeps it in memory (``unsaved_entries``): the run goes on and its
            # view says what is not saved (``_note_session_writes``).
            with contextlib.suppress(SessionWriteError):
                self.session.append_custom_message(
                    CUSTOM_TYPE, content, display=True, details=summary.details
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
        chosen = await self.resolve_model(model_ref) if model_ref else None
        harness = await self.ensure_harness(chosen)
        if chosen is not None:
            harness.set_model(chosen)
        if thinking:
            harness.set_thinking_level(thinking)
        self._branch_for_cell(cell_key)
        self.update_instructions()
        self._fit_compaction(harness)
        refusal = self._no_room_for(harness, run.prompt)
        if refusal is not None:
            raise RuntimeError(refusal)
        _ = self.approval_policy  # one set by the environment is recorded before the run
        await self._start_mcp()
        await self._append_change_summary(changes, self._run_cells.get(run.number))
        self.checkpoints.capture_soon("run_start")
        return await self._prompt(run, run.prompt)

    def update_instructions(self, *, preamble: object = KEEP, addendum: object = KEEP) -> bool:
        """Bring the session's instruction sections up to date (the context files may have
        changed; ``preamble``/``addendum`` replace the session's, None removes the addendum).
        True when a system message was written."""
        from .instructions import current_sections, desired_instructions, write_instructions

        base = self.default_prompt()
        current = current_sections(self.session)
        wanted = desired_instructions(current, base, preamble=preamble, addendum=addendum)
        written = write_instructions(self.session, current, wanted)
        if self._harness is not None:
            # The harness's prompt goes ahead of the session's: only for a session without one.
            own = self.session.build_context().system_prompt is not None
            self._harness.system_prompt = None if own else base
        return written

    def default_prompt(self, model: Model | None = None) -> str:
        """The analyst prompt for what the next request offers ``model`` (default: the
        harness's): its tools, whether a notebook is connected, whether it takes images."""
        from .analyst_prompt import analyst_prompt

        if model is None and self._harness is not None:
            model = self._harness.model
        tools = [t.name for t in self.tool_offer.offered_tools(model)]
        images = model is not None and "image" in model.input
        return analyst_prompt(tools, frontend=self.document.connected, images=images)

    def _fit_compaction(self, harness: AgentHarness) -> None:
        """Size the compaction for the model and what each request carries besides the
        conversation (a model switch, tools or instructions changed since the last run)."""
        harness.compaction_settings = compaction_for(harness.model, self._overhead(harness))

    def _overhead(self, harness: AgentHarness) -> int:
        """Tokens each request spends on the system prompt and the tools offered."""
        prompt = self.session.build_context().system_prompt
        if prompt is None:
            configured = harness.system_prompt
            prompt = (
                configured if isinstance(configured, str) else self.default_prompt(harness.model)
            )
        return request_overhead(prompt, self.tool_offer.offered_tools(harness.model))

    def _check_room(self, event: object) -> None:
        """A harness listener: after an automatic compaction, whether the context is under the
        line now. When it is not, compacting again would cost another summary each turn and
        free nothing: the live run stops, the view says what to do, and the next run starts
        only if its request fits (:meth:`_no_room_for`)."""
        if getattr(event, "type", None) != "compaction_end":
            return
        after = getattr(event, "tokens_after", None)
        harness = self._harness
        if harness is None or getattr(event, "result", None) is None or after is None:
            return
        overhead = self._overhead(harness)
        words = no_room_words(harness, after + overhead, overhead)
        if words is None:
            self._no_room = None
            return
        model = harness.model
        self._no_room = (f"{model.provider}/{model.id}", overhead, words)
        run = self._active or self.last_run
        if getattr(event, "reason", None) == "manual":
            return  # %compact says so itself; the next run is held to the line all the same
        if run is not None:
            run.view.note_stopped(words)
        if self._active is not None:
            harness.abort()

    def _no_room_for(self, harness: AgentHarness, prompt: str) -> str | None:
        """Why a run cannot start: a compaction left the context over the line, and with this
        prompt the request still is (the same model and tools). None: it may start."""
        if self._no_room is None:
            return None
        model, overhead, _words = self._no_room
        now = self._overhead(harness)
        if model != f"{harness.model.provider}/{harness.model.id}" or now != overhead:
            self._no_room = None  # another model or other tools: the line moved
            return None
        words = no_room_words(harness, compacted_size(harness, prompt) + now, now)
        if words is None:
            self._no_room = None
        return words

    def _settle_after(self, run: Run) -> None:
        """Compact after a run if its size calls for it, off the run's path: the run's reply
        is out and ``%%agent --wait`` returns at once; the next queued operation (the next
        run, a ``%model``) waits for the compaction, which shows in ``run``'s view."""
        harness = self._harness
        if harness is None or harness.phase != "idle":
            return
        from ..harness import AgentHarnessError

        async def settle() -> None:
            unsubscribe = harness.subscribe(run.view.handle)
            try:
                await harness.settle()
            except AgentHarnessError as exc:  # busy: something else began first
                run.view.note_stopped(f"Compacting after the run failed: {exc}")
            finally:
                unsubscribe()
                self._note_session_writes(run)
                self.refresh_tree_views()

        self.operations.in_background(settle())

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
        with gc_paused():  # a full collection here would hold the GIL (and the loop) noticeably
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
        run.view.set_context_tokens(request_size(harness, text))
        unsubscribe = harness.subscribe(run.view.handle)
        unwatch = harness.subscribe(lambda event: self._watch_writes(run, event))
        self._active = run
        self._note_session_writes(run)  # e.g. the change summary just before could not be written
        self.write_tools.begin_run(run.number, self._run_cells.get(run.number))
        self.repeat_guard.begin_run()
        self._run_tool_results, self._answer_asked, self._numbers_asked = 0, False, False
        run.view.set_answers_only(not self.tool_offer.model_calls_tools())
        connected = self.document.connected
        target = self._cell_words(run.edit_cell) if connected and run.edit_cell else ""
        run.view.set_code_actions(insert=connected, edit_target=target)
        if self._harness is not None and self.tool_offer.pushed != [
            t.name for t in self.tool_offer.offered_tools()
        ]:
            self.tool_offer.push()  # a frontend connected or went away, or the model changed
        try:
            # the run's view hears of stalls (``StreamOptions.on_stall``) until the run ends
            harness.stream_options = dataclasses.replace(
                harness.stream_options, on_stall=run.view.note_stall, stall_ms=self.stall_ms
            )
            from ..harness.budget import BudgetCaps

            caps = BudgetCaps(**run.budget) if run.budget else None  # type: ignore[arg-type]
            run.budget = {}  # a follow-up in the same view is a new run with the defaults

            def deliver_pending() -> None:
                # Messages sent while the run was queued go in as soon as the harness has the
                # prompt (steering queued before the first model call comes right after it).
                for kind, queued in run.take_pending():
                    (harness.steer if kind == "steer" else harness.follow_up)(queued)

            return await harness.prompt(text, budget=caps, on_start=deliver_pending)
        finally:
            harness.stream_options = dataclasses.replace(
                harness.stream_options, on_stall=None, stall_ms=None
            )
            self._active = None
            unsubscribe()
            unwatch()
            self._note_session_writes(run)
            self.refresh_tree_views()
            for _kind, late in run.take_pending():  # sent as the run ended: the next prompts
                self._follow_up_in(run, late)
            self._settle_after(run)

    def _watch_writes(self, run: Run, event: object) -> None:
        """A listener of the run's events: after each saved message, how the file stands; a
        finished reply's cell writes are noted to be reviewed together."""
        kind = getattr(event, "type", None)
        if kind == "message_end":
            from ..ai.types import AssistantMessage

            message = getattr(event, "message", None)
            if isinstance(message, AssistantMessage):
                self.reply_changes.note_reply(message)
            self.checkpoints.after_message(message)
        if kind in ("message_end", "turn_end", "agent_end"):
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

    def _cell_words(self, cell_id: str) -> str:
        """A cell as the "Apply as edit" button names it: its last execution count here."""
        count = self._kernel_count(cell_id)
        return f"In [{count}]" if count is not None else f"cell {cell_id[:8]}"

    async def _code_action(self, run: Run, action: str, source: str) -> None:
        """The user clicked "Insert as cell" or "Apply as edit" on a code block of ``run``'s
        replies (:mod:`.workspace.code_actions`): an insert happens at once (the click is the
        approval), an edit waits for Allow on its card; what was applied goes to the session."""
        from .workspace.code_actions import action_message, propose_edit
        from .workspace.document import DocumentError, NotebookNotConnected

        view, tools = run.view, self.write_tools
        self._code_clicks += 1
        call_id = f"pi-user-{action}-{self._code_clicks}"
        if action == "insert":
            after = self._code_anchors.get(run.number)
            if after is None:
                own = tools.run_number == run.number
                after = tools.anchor_cell_id if own else self._run_cells.get(run.number)
            try:
                cell_id, after, note = await tools.place_cell(source, "code", None, after)
            except (DocumentError, NotebookNotConnected) as exc:
                view.add_note("Insert as cell: nothing was inserted", str(exc))
                return
            self._code_anchors[run.number] = cell_id
            if tools.run_number == run.number:  # the agent's next insert goes below it
                tools.anchor_cell_id = cell_id
            where = f"below cell {after}" if after is not None else "at the end of the notebook"
            text, details = action_message("insert", cell_id, source, after=after)
            view.add_action_result(
                call_id,
                "insert_cell",
                f"Inserted code cell {cell_id} {where}{note}. It has not run yet.",
                details,
                {
                    "title": f"Insert a code cell {where}",
                    "language": "python",
                    "source": source,
                    "diff": "",
                    "always": False,
                },
                'By your click on "Insert as cell".',
            )
            self._record_action(text, details)
            return
        target = run.edit_cell
        if target is None:
            view.add_note("Apply as edit: nothing to do", "This run is about no cell to edit.")
            return
        proposal = await propose_edit(tools, target, source)
        if isinstance(proposal, str):
            view.add_note("Apply as edit: nothing to do", proposal)
            return
        args = {"cell_id": target, "source": source}
        allowed = await view.request_approval(
            call_id, "edit_cell", args, timeout=self.approval_timeout, preview=proposal.preview
        )
        if not allowed:
            view.finish_action(call_id, "edit_cell", "Not applied: the notebook is unchanged.")
            return
        try:
            await tools.document.edit_cell(target, source)
        except (DocumentError, NotebookNotConnected) as exc:
            refused = f"The notebook refused: {exc} Nothing was changed."
            view.finish_action(call_id, "edit_cell", refused, is_error=True)
            return
        text, details = action_message("edit", target, source, old=proposal.cell.source)
        done = f"Edited cell {target}. It has not run since the edit."
        view.finish_action(call_id, "edit_cell", done, details)
        self._record_action(text, details)

    def _record_action(self, text: str, details: dict[str, Any]) -> None:
        """Write what the user applied from a reply to the session, after what is queued (a
        live run's entries first), so the model's next context and ``%tree`` know of it."""
        from .workspace.code_actions import CUSTOM_TYPE

        async def record() -> None:
            from ..harness.session import SessionWriteError

            if self.read_only is not None:
                return
            with contextlib.suppress(SessionWriteError):  # kept in memory, written later
                self.session.append_custom_message(CUSTOM_TYPE, text, display=True, details=details)
            self.refresh_tree_views()

        self.enqueue(record)

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
            if self.operations.background_running:
                assert self._harness is not None
                self._harness.abort()  # the compaction after the last run
                return True
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

    def _note_tool_result(self, event: ToolResultEvent) -> None:
        """The ``tool_result`` hook: the repeat guard compares results too."""
        from ..ai.types import TextContent

        text = "".join(b.text for b in event.content if isinstance(b, TextContent))
        self.repeat_guard.record(event.tool_call_id, text, failed=event.is_error)
        self._run_tool_results += 1

    def _ask_for_answer(self, event: FinishTurnEvent) -> None:
        """The ``finish_turn`` hook: a run that called tools and is ending without its answer
        stated (no text, or not in the format the prompt asked for) gets one follow-up asking
        for it; a run ending with numbers but no code run, while a code tool is offered, gets
        one asking to compute them (see :mod:`.answer_check`)."""
        from .answer_check import (
            answer_format,
            code_tool_among,
            follow_up_text,
            lacks_answer,
            states_numbers,
            unchecked_numbers_text,
        )

        run, harness, message = self._active, self._harness, event.message
        if run is None or harness is None or self._answer_asked:
            return
        if message.stop_reason in ("error", "aborted") or message.tool_calls:
            return
        if not self._run_tool_results:
            offered = {t.name for t in self.tool_offer.offered_tools(harness.model)}
            code_tool = code_tool_among(offered)
            if code_tool and not self._numbers_asked and states_numbers(message.text):
                self._numbers_asked = True
                harness.follow_up(unchecked_numbers_text(code_tool))
            return
        form = answer_format(run.prompt)
        if lacks_answer(message.text, form):
            self._answer_asked = True
            harness.follow_up(follow_up_text(form))

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """See :attr:`ToolGate.policy`."""
        return self.approvals.policy

    def set_approval(self, target: str, decision: Decision) -> ApprovalPolicy:
        """``%approve TARGET DECISION``: change the policy and record it in the session."""
        return self.approvals.set(target, decision)

    # --- facts for %model / %session -------------------------------------------------------------

    def session_cost(self) -> float:
        """Dollars spent by every assistant message in the session file."""
        from ..ai.types import AssistantMessage

        total = 0.0
        for entry in self.session.entries_of("message"):
            message = getattr(entry, "message", None)
            if isinstance(message, AssistantMessage):
                total += message.usage.cost.total
        return total

    @property
    def harness_if_made(self) -> AgentHarness | None:
        """The harness if a run or ``%model`` made it already (``None``: none yet)."""
        return self._harness

    @property
    def budget(self) -> BudgetSettings:
        """The session's caps and the run defaults (``%budget``)."""
        if self._harness is not None:
            return self._harness.budget
        from ..harness.budget import latest_budget_settings

        return latest_budget_settings(self.session.entries_of("custom"))

    def set_budget(self, settings: BudgetSettings) -> None:
        """Store new caps in the session (through the harness when there is one: a run going
        on takes them from its next request)."""
        if self._harness is not None:
            self._harness.set_budget(settings)
            return
        from ..harness.budget import BUDGET_CUSTOM_TYPE

        self.session.append_custom(BUDGET_CUSTOM_TYPE, settings.to_data())

    # --- following the notebook ------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The session's id (read from the file's header while the session is not open)."""
        if self._session is not None:
            return self._session.id
        return header_id(self._session_file)

    def _continue_in_copy(self, held: str) -> str:
        """Another kernel holds the session file: fork it into a file of this notebook's own
        (the original is not written), and say so with the other choice."""
        original = self.session_path
        copy = sibling_session_path(original)
        self.session = self.session.fork(copy)
        self.session_lock.acquire(copy)
        return (
            f"{original.name} is open in {held}, so this notebook continues in a copy, "
            f"{copy.name} (the original is not written). To look at the original instead: "
            f"%session open {original} --read-only"
        )

    def _settled(self) -> bool:
        """Nothing was run or queued in this kernel yet: switching the session loses nothing."""
        return not self.runs and not self.busy

    def _follow_notebook(
        self, path: str, session_id: str | None, hello: bool
    ) -> tuple[str | None, list[str]]:
        notices = self.notebook_opened(path, session_id) if hello else self.notebook_moved(path)
        return (None if self.read_only is not None else self.session_id), notices

    def notebook_opened(self, path: str, session_id: str | None) -> list[str]:
        """A notebook view said hello: its path (relative to the server root) and the session
        id in its metadata. Follows a rename made while the kernel was away, reopens the
        notebook's own session after a move or copy, and never keeps another notebook's
        session. Returns what to tell the user."""
        notices = self.notebook_moved(path)
        own = self.session_id
        if not self._settled() or self.read_only is not None:
            return notices
        if session_id and session_id != own:
            notices += self._adopt(session_id)
        elif not session_id and own is not None and self.restored_entries:
            notices += self._leave_claimed(own)
        return notices

    def notebook_moved(self, path: str) -> list[str]:
        """The notebook is at ``path`` now (relative to the server root): its session file
        follows it when named for it, never over an existing file."""
        if not path:
            return []
        notebook = self._root / path
        old, self.notebook = self.notebook, notebook
        if old is None or old == notebook or self.read_only is not None:
            return []
        current = self.session_path
        renamed = renamed_session_file(current, notebook_stem(old), notebook_stem(notebook))
        if renamed is None:
            return []
        target = session_path_beside(notebook).with_name(renamed.name)
        if target == current:
            return []
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            move_no_clobber(current, target)
        except FileExistsError:
            return [f"{target.name} exists already: this notebook's session stays in {current}"]
        except OSError as exc:
            why = exc.strerror or exc
            return [f"could not move the session file ({why}); it stays in {current}"]
        self._relocate(target)
        return []

    def _relocate(self, target: Path) -> None:
        if self._session is not None:
            from ..harness.storage import JsonlSessionStorage

            storage = self._session.storage
            if isinstance(storage, JsonlSessionStorage):
                storage.relocate(target)
        from .checkpoints.store import move_store

        move_store(self._session_file, target)
        if self._checkpoints is not None:
            self._checkpoints.session_changed()
        self._session_file = target
        self.session_lock.move(target)

    def _adopt(self, session_id: str) -> list[str]:
        """The notebook's metadata names another session than the one opened by name: take
        that one (it was moved or renamed while this notebook was closed), or a copy of it when
        it is another notebook's (this notebook is a copy) or another kernel has it open."""
        mine = self.session_path
        found = find_session_file(mine.parent, session_id, skip=mine)
        if found is None:
            return [
                f"this notebook's session ({session_id[:8]}) is not beside it any more: "
                f"working in {mine.name}"
            ]
        held = lock_holder(found)
        owner = session_owner(found)
        is_copy = owner != self.notebook and owner.exists()
        # the file opened by name holds nothing yet: the found session takes its place
        empty = self.restored_entries == 0
        if empty:
            mine.unlink(missing_ok=True)
        if held is not None or is_copy:
            from ..harness.session import Session

            target = mine if empty else sibling_session_path(mine)
            self.use_session(Session.open(found).fork(target))
            why = f"open in {held}" if held else f"{owner.name}'s session"
            return [f"{found.name} is {why}: this notebook continues in a copy, {target.name}"]
        target = found
        if empty:
            with contextlib.suppress(OSError):  # else it is used where it is
                move_no_clobber(found, mine)
                target = mine
        self.use_session(open_session(target))
        return [f"reopened this notebook's session ({len(self.session)} entries) from {found.name}"]

    def _leave_claimed(self, own: str) -> list[str]:
        """A notebook without a session id opened a session another notebook here claims (a
        new ``Untitled`` finding an old ``Untitled.pi.jsonl``): start a session of its own."""
        notebook = self.notebook
        other = claimed_by(self.session_path.parent, own, skip=notebook)
        if other is None:
            return []
        claimed = self.session_path
        fresh = sibling_session_path(claimed)
        self.use_session(open_session(fresh))
        return [
            f"{other.name} owns the session in {claimed.name}: this notebook starts its own, "
            f"{fresh.name}"
        ]

    def use_session(self, session: Session) -> None:
        """Work in another session from now on (``%session new`` / ``open``)."""
        model = self._harness.model if self._harness is not None else None
        if session.path is not None and self.read_only != session.path:
            self.session_lock.acquire(session.path)
        self.session = session
        self._cell_starts.clear()
        if self._checkpoints is not None:
            self._checkpoints.session_changed()
        self._harness = self._new_harness(model) if model is not None else None
        for view in self.tree_views:
            view.session = session

    def refresh_tree_views(self) -> None:
        for view in self.tree_views:
            view.refresh()

    def shutdown(self) -> None:
        """Abort what runs, stop the MCP servers and let go of the session file
        (``%unload_ext``)."""
        self.abort()
        self.session_lock.release()
        if self._mcp is not None and len(self.mcp):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.mcp.aclose())
            else:
                self._mcp_closing = asyncio.ensure_future(self.mcp.aclose())
