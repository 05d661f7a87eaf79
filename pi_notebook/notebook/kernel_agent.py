"""``NotebookAgent``: the kernel's agent — an ``AgentHarness`` over the notebook's session file,
and the rooms that serve it, each in its own module:

- the session worked in (:mod:`.session_slot`), the notebook it follows
  (:mod:`.notebook_follow`);
- which model runs, and the cassette (:mod:`.model_choice`);
- the tools (:mod:`.toolbox`), which of them are offered (:mod:`.tool_offer`) and the gate of each
  call (:mod:`.tool_gate`);
- the instructions (:mod:`.system_prompt`), the change summary (:mod:`.change_feed`) and the room
  in the context (:mod:`.room`);
- the live run, its steering and answer check (:mod:`.run_driver`), and the code-block buttons of
  its replies (:mod:`.reply_code`).

The agent makes the harness and puts the rooms together. Everything that touches the harness
(runs, compaction, tree moves, model changes) goes through one queue of operations on the
kernel's event loop (:mod:`.operations`), so cells behave in notebook order even when "Run All"
fires them at once: a second ``%%agent`` waits for the first run instead of failing.
``await agent.wait()`` returns when everything queued so far is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..ai.thinking_levels import THINKING_LEVELS
from .approval_policy import ApprovalPolicy, Decision
from .change_feed import ChangeFeed, Changes
from .data_preview import DataPreview
from .default_model import NoModelError
from .instructions import KEEP
from .model_choice import ModelChoice, cassette_from_env
from .notebook_follow import NotebookFollow
from .operations import OperationQueue
from .repeat_guard import RepeatGuard
from .reply_code import CodeBlockActions
from .room import RoomGuard, compaction_for
from .run_driver import RunDriver
from .session_slot import SessionSlot
from .system_prompt import SystemPrompt
from .tool_gate import ToolGate
from .tool_offer import ToolOffer
from .toolbox import NotebookToolbox
from .workspace.document import NotebookDocument
from .workspace.history import ExecutionHistory

if TYPE_CHECKING:
    from ..ai.cassette import Cassette
    from ..ai.types import AssistantMessage, Model, ThinkingLevel
    from ..harness import AgentHarness, BudgetSettings, Session
    from ..mcp import McpServers
    from .checkpoints import Checkpoints
    from .notebook_tools import ToolRegistry
    from .runs import Run
    from .widgets.tree_view import TreeView
    from .workspace.edit_tools import WriteTools
    from .workspace.review import ReplyChanges

__all__ = ["APPROVAL_TIMEOUT", "NotebookAgent"]

APPROVAL_TIMEOUT = 300.0
"""Seconds a tool that needs approval waits for a click before it is denied."""

T = TypeVar("T")


def _thinking_level(value: str) -> ThinkingLevel:
    return next((level for level in THINKING_LEVELS if level == value), "off")


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
        self.slot = SessionSlot(session_path)
        """The session file worked in (opened on first use) and its lock."""
        self.load_notice = self.slot.notice
        """What was wrong with the session file at load (None: nothing)."""
        self.runs: list[Run] = []
        self.approval_timeout = APPROVAL_TIMEOUT
        self.models = ModelChoice(lambda: self.slot.opened, stream_fn, cassette_from_env())
        """Which model runs (the session's own, else the default) and the cassette."""
        self._harness: AgentHarness | None = None
        self._mcp_closing: asyncio.Future[None] | None = None
        self.operations = OperationQueue()
        """Runs and the magics that change the harness, in cell order; the compaction a
        finished run called for runs in its background (:class:`RunDriver`)."""
        self.room = RoomGuard(lambda harness: self.prompt.overhead(harness))
        """Holds runs to the compaction line when a compaction could not make room."""
        self.cell_key: str | None = None
        """Identifies the cell being executed (its id, or its source); set by a pre-run hook."""
        self.tree_views: list[TreeView] = []
        self.history = ExecutionHistory()
        """What ran in this kernel (installed on the shell by ``%load_ext``)."""
        self.document = NotebookDocument(self.history)
        """The notebook open in a frontend (linked by the pi_notebook labextension)."""
        self.following = NotebookFollow(self)
        """The notebook this kernel serves, and the session that follows it."""
        self.document.follow = self.following.follow
        self.change_feed = ChangeFeed(self.history, self.document, self.takes_images)
        """The summary of cells run since the agent's previous turn, sent before each run."""
        self.data_preview = DataPreview()
        """The first rows of the data files a prompt names, sent before its run."""
        self.toolbox = NotebookToolbox(
            lambda: self.namespace,
            self.history,
            self.document,
            takes_images=self.takes_images,
            waited_on=lambda: self.operations.waited_on,
            on_mcp_change=lambda: self.tool_offer.push(),
        )
        """The notebook's tools, MCP servers and write tools, made on first use."""
        self.repeat_guard = RepeatGuard()
        """Refuses a tool call repeated with the same arguments in one run (small models loop)."""
        self.tool_offer = ToolOffer(self)
        """Which tools the model is offered (``%tools``, ``%model --tools``)."""
        self.prompt = SystemPrompt(
            lambda: self.session, self.tool_offer.offered_tools, lambda: self.document.connected
        )
        """The instructions before the conversation, kept up to date before each run."""
        self.code_actions = CodeBlockActions(self)
        """"Insert as cell" and "Apply as edit" on the code blocks of a run's replies."""
        self.runner = RunDriver(self)
        """The live run: its prompt, steering, answer check and the compaction after it."""
        self.approvals = ToolGate(self)
        """The ``tool_call`` hook: the repeat guard, the approval policy, Allow / Deny (made
        before the session lock, which may switch to a copy of the session)."""
        self.stall_ms: int | None = None
        """Silence of a model request after which the run view says "waiting for the model"
        (``None``: ``StreamOptions``' default, 5 s)."""
        self.read_only: Path | None = None
        """A session file opened only to look at (``%session open --read-only``): runs and
        other writes are refused."""
        self.session_lock = self.slot.lock
        held = self.session_lock.acquire(self.session_path)
        if held is not None:
            copied = self.following.continue_in_copy(held)
            notice = self.load_notice
            self.load_notice = f"{notice}; {copied}" if notice else copied
        self._checkpoints: Checkpoints | None = None

    # --- the session and the rooms' faces that the magics, widgets and tools use -----------------

    @property
    def session(self) -> Session:
        """The notebook's session. A new notebook's is opened on first use (``%load_ext`` only
        wrote its file's header, see ``session_files``)."""
        return self.slot.session

    @session.setter
    def session(self, session: Session) -> None:
        self.slot.put(session)
        self.approvals.forget()  # the other session's recorded policy applies

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
        """See :attr:`SessionSlot.restored_entries`."""
        return self.slot.restored_entries

    @property
    def tools(self) -> ToolRegistry:
        """See :attr:`NotebookToolbox.registry`."""
        return self.toolbox.registry

    @property
    def mcp(self) -> McpServers:
        """See :attr:`NotebookToolbox.mcp`."""
        return self.toolbox.mcp

    @property
    def write_tools(self) -> WriteTools:
        """See :attr:`NotebookToolbox.write_tools`."""
        return self.toolbox.write_tools

    @property
    def reply_changes(self) -> ReplyChanges:
        """See :attr:`NotebookToolbox.reply_changes`."""
        return self.toolbox.reply_changes

    @property
    def context_enabled(self) -> bool:
        """Send the change summary before each run (``%agent_context on|off``)."""
        return self.change_feed.enabled

    @context_enabled.setter
    def context_enabled(self, enabled: bool) -> None:
        self.change_feed.enabled = enabled

    def takes_images(self) -> bool:
        """Whether the model in use takes images: the plots the tools and the change summary
        give are sent as images, else as a one-line note each."""
        model = self._harness.model if self._harness is not None else None
        return model is not None and "image" in model.input

    # --- the harness -----------------------------------------------------------------------------

    @property
    def session_path(self) -> Path:
        """The session's file."""
        return self.slot.path

    @property
    def harness(self) -> AgentHarness:
        """The harness (created when the first model is known: ``%model`` or the first run)."""
        if self._harness is None:
            model = self.models.known()
            if model is None:
                raise NoModelError()
            self._harness = self._new_harness(model)
        return self._harness

    def knows_model(self) -> bool:
        """Whether a model is known without starting one (the harness is made with it on the
        first run, after its imports in a thread: see :meth:`prepare_run`)."""
        return self._harness is not None or self.models.known() is not None

    def session_model_ref(self) -> str | None:
        """See :meth:`ModelChoice.session_ref`."""
        return self.models.session_ref()

    def session_model_problem(self) -> str | None:
        """See :meth:`ModelChoice.problem` (None once a harness has a model)."""
        return None if self._harness is not None else self.models.problem()

    def pending_model_note(self) -> str | None:
        """See :meth:`ModelChoice.pending_note` (None once a harness has a model)."""
        return None if self._harness is not None else self.models.pending_note()

    def _new_harness(self, model: Model) -> AgentHarness:
        from ..harness.harness import AgentHarness

        context = self.session.build_context()
        harness = AgentHarness(
            self.session,
            model,
            tools=self.tool_offer.offer_to(model),
            thinking_level=_thinking_level(context.thinking_level),
            stream_fn=self.models.stream(),
            compaction=compaction_for(model),
            system_prompt=self.default_prompt(model),
        )
        harness.on("tool_call", self.approvals.on_tool_call)
        harness.defer_threshold_compaction = True  # done after the run by the RunDriver
        harness.subscribe(self.runner.check_room)
        harness.on("tool_result", self.runner.note_tool_result)
        harness.on("finish_turn", self.runner.ask_for_answer)
        harness.on("context", self.runner.on_context)
        return harness

    @property
    def cassette(self) -> Cassette | None:
        """The cassette model calls are recorded into or replayed from (``None``: live)."""
        return self.models.cassette

    @cassette.setter
    def cassette(self, cassette: Cassette | None) -> None:
        self.models.cassette = cassette
        if self._harness is not None:
            self._harness.stream_fn = self.models.stream()

    async def resolve_model(self, ref: str | None = None) -> Model:
        """See :meth:`ModelChoice.resolve`."""
        return await self.models.resolve(ref)

    def resolve_model_now(self, ref: str) -> Model | None:
        """See :meth:`ModelChoice.resolve_now`."""
        return self.models.resolve_now(ref)

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
            self._harness = self._new_harness(await self.models.first(model))
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
        return self.runner.active

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
        run.cell_id = key[3:] if key and key.startswith("id:") else None
        changes = self.change_feed.take()
        view.on_stop = self.abort
        view.on_stop_tool = self.cancel_tool_call
        view.on_steer = self.steer
        view.on_follow_up = lambda text: self.runner.follow_up_in(run, text)
        view.on_code_action = lambda action, source: self.code_actions.clicked(run, action, source)
        future = self.enqueue(lambda: self._execute(run, key, model_ref, thinking, changes))
        run.start(lambda _run: future)
        return run

    async def _execute(
        self,
        run: Run,
        cell_key: str | None,
        model_ref: str | None,
        thinking: ThinkingLevel | None,
        changes: Changes | None = None,
    ) -> AssistantMessage | None:
        if run.cancelled:
            return None
        chosen = await self.resolve_model(model_ref) if model_ref else None
        harness = await self.ensure_harness(chosen)
        if chosen is not None:
            harness.set_model(chosen)
        if thinking:
            harness.set_thinking_level(thinking)
        self.slot.branch_for_cell(cell_key)
        self.update_instructions()
        self.room.fit(harness)
        refusal = self.room.refusal(harness, run.prompt)
        if refusal is not None:
            raise RuntimeError(refusal)
        _ = self.approval_policy  # one set by the environment is recorded before the run
        await self.toolbox.start_mcp()
        await self.change_feed.append(self.session, changes, run.cell_id)
        if self.tool_offer.model_calls_tools():  # for code with the real names; not an answer
            await self.data_preview.append(self.session, run.prompt)
        self.checkpoints.capture_soon("run_start")
        return await self.runner.prompt(run, run.prompt)

    def update_instructions(self, *, preamble: object = KEEP, addendum: object = KEEP) -> bool:
        """See :meth:`SystemPrompt.update`."""
        return self.prompt.update(self._harness, preamble=preamble, addendum=addendum)

    def default_prompt(self, model: Model | None = None) -> str:
        """See :meth:`SystemPrompt.default` (``model`` defaults to the harness's)."""
        if model is None and self._harness is not None:
            model = self._harness.model
        return self.prompt.default(model)

    def _overhead(self, harness: AgentHarness) -> int:
        """See :meth:`SystemPrompt.overhead`."""
        return self.prompt.overhead(harness)

    async def prepare_run(self) -> None:
        """Import what a run needs beyond ``%load_ext`` and make the notebook's tools in a
        thread (:meth:`NotebookToolbox.prepare`), then open the session if it is not open yet:
        the first run must not stall the event loop for the imports (the pydantic models of the
        harness, agent and tools layers) while its view is live."""
        if not self.toolbox.prepared():
            await asyncio.to_thread(self.toolbox.prepare)
        _ = self.session

    def prepare_now(self) -> None:
        """:meth:`prepare_run`'s work in the calling cell: a magic whose change is made at once
        (``%model`` with nothing queued) ends with the harness ready, as the cells after it
        expect, instead of leaving an operation in progress."""
        if not self.toolbox.prepared():
            self.toolbox.prepare()
        _ = self.session

    # --- steering --------------------------------------------------------------------------------

    def steer(self, text: str) -> bool:
        """Send a steering message into the live (or next queued) run; False when none."""
        return self.runner.queue_message("steer", text)

    def follow_up(self, text: str) -> bool:
        """Queue a follow-up for the live (or next queued) run; False when none."""
        return self.runner.queue_message("follow_up", text)

    def abort(self) -> bool:
        """See :meth:`RunDriver.abort`."""
        return self.runner.abort()

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one running tool call of the live run (its card's stop); the run goes on and
        the model sees an error result. False when that call is not running."""
        return self._harness is not None and self._harness.cancel_tool_call(tool_call_id)

    # --- tools -----------------------------------------------------------------------------------

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
        return self.slot.id

    def _follow_notebook(
        self, path: str, session_id: str | None, hello: bool
    ) -> tuple[str | None, list[str]]:
        """See :meth:`NotebookFollow.follow`."""
        return self.following.follow(path, session_id, hello)

    def session_moved(self, target: Path) -> None:
        """The session file was moved to ``target`` (its notebook was renamed): write there,
        with its checkpoints and lock."""
        from .checkpoints.store import move_store

        move_store(self.slot.moved(target), target)
        if self._checkpoints is not None:
            self._checkpoints.session_changed()

    def use_session(self, session: Session) -> None:
        """Work in another session from now on (``%session new`` / ``open``)."""
        model = self._harness.model if self._harness is not None else None
        if session.path is not None and self.read_only != session.path:
            self.session_lock.acquire(session.path)
        self.session = session
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
        if self.toolbox.mcp_if_made is not None and len(self.mcp):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.mcp.aclose())
            else:
                self._mcp_closing = asyncio.ensure_future(self.mcp.aclose())
