"""``NotebookAgent``: the kernel's agent — an ``AgentHarness`` over the notebook's session file,
plus the runs, tools and cell bookkeeping the magics need.

Everything that touches the harness (runs, compaction, tree moves, model changes) goes through one
queue of operations on the kernel's event loop, so cells behave in notebook order even when
"Run All" fires them at once: a second ``%%agent`` waits for the first run instead of failing.
``await agent.wait()`` returns when everything queued so far is done.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, get_args

from ..agent.decorator import FunctionTool, tool
from ..agent.tools import AgentTool
from ..ai.models import parse_model
from ..ai.types import AssistantMessage, Model, ThinkingLevel
from ..harness import AgentHarness, JsonlSessionStorage, Session
from ..harness.hooks import ToolCallEvent, ToolCallResult
from .default_model import NoModelError, model_from_api_keys, resolve_default_model, resolve_model
from .notebook_tools import ToolRegistry, builtin_tools
from .run_view import RunView
from .runs import Run
from .tree_view import TreeView

__all__ = ["APPROVAL_TIMEOUT", "NotebookAgent", "open_session"]

APPROVAL_TIMEOUT = 300.0
"""Seconds a tool that needs approval waits for a click before it is denied."""

T = TypeVar("T")


def _thinking_level(value: str) -> ThinkingLevel:
    levels: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
    return next((level for level in levels if level == value), "off")


def open_session(path: Path) -> Session:
    """The session stored at ``path``, created (with its directory) when missing."""
    if path.exists() and path.stat().st_size > 0:
        return Session.open(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return Session.create(JsonlSessionStorage(path), cwd=str(path.parent))


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
        self.session = open_session(session_path)
        self.tools = ToolRegistry(builtin_tools(lambda: self.namespace))
        self.runs: list[Run] = []
        self.approval_timeout = APPROVAL_TIMEOUT
        self._stream_fn = stream_fn
        self._harness: AgentHarness | None = None
        self._tail: asyncio.Future[Any] | None = None
        self._active: Run | None = None
        self._cell_starts: dict[str, str | None] = {}
        self.cell_key: str | None = None
        """Identifies the cell being executed (its id, or its source); set by a pre-run hook."""
        self.tree_views: list[TreeView] = []

    # --- the harness -----------------------------------------------------------------------------

    @property
    def session_path(self) -> Path:
        path = self.session.path
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

    def _known_model(self) -> Model | None:
        """A model known without starting anything: the session's, the environment's."""
        ref = self.session.build_context().model
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
        context = self.session.build_context()
        harness = AgentHarness(
            self.session,
            model,
            tools=self.tools.active(),
            thinking_level=_thinking_level(context.thinking_level),
            stream_fn=self._stream_fn,
        )
        harness.on("tool_call", self._approve_tool_call)
        return harness

    async def ensure_harness(self) -> AgentHarness:
        if self._harness is None:
            model = self._known_model() or await resolve_default_model()
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
        while self._tail is not None and not self._tail.done():
            await asyncio.wait([asyncio.shield(self._tail)])
        return self.last_run.result if self.last_run is not None else None

    @property
    def busy(self) -> bool:
        return self._tail is not None and not self._tail.done()

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
        view = RunView(thinking_level=thinking or "off")
        run = Run(len(self.runs) + 1, prompt, view)
        self.runs.append(run)
        key = self.cell_key
        view.on_stop = self.abort
        view.on_steer = self.steer
        view.on_follow_up = lambda text: self._follow_up_in(run, text)
        future = self.enqueue(lambda: self._execute(run, key, model_ref, thinking))
        run.start(lambda _run: future)
        return run

    async def _execute(
        self, run: Run, cell_key: str | None, model_ref: str | None, thinking: ThinkingLevel | None
    ) -> AssistantMessage | None:
        harness = await self.ensure_harness()
        if model_ref:
            harness.set_model(await resolve_model(model_ref))
        if thinking:
            harness.set_thinking_level(thinking)
        self._branch_for_cell(cell_key)
        return await self._prompt(run, run.prompt)

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
        self._active = run
        try:
            return await harness.prompt(text)
        finally:
            self._active = None
            unsubscribe()
            self.refresh_tree_views()

    def _follow_up_in(self, run: Run, text: str) -> None:
        """The view's box after its run ended: continue in the same view."""
        if self._active is not None:
            self.follow_up(text)
            return
        future = self.enqueue(lambda: self._prompt(run, text))
        run.start(lambda _run: future)

    # --- steering --------------------------------------------------------------------------------

    def steer(self, text: str) -> bool:
        """Send a steering message into the live run; False when no run is live."""
        if self._active is None:
            return False
        self.harness.steer(text)
        self._active.view.note_queued("steer", text)
        return True

    def follow_up(self, text: str) -> bool:
        """Queue a follow-up for the live run; False when no run is live."""
        if self._active is None:
            return False
        self.harness.follow_up(text)
        self._active.view.note_queued("follow_up", text)
        return True

    def abort(self) -> bool:
        """Abort the live run (its partial reply is kept); False when nothing runs."""
        if self._active is None or self._harness is None:
            return False
        self._harness.abort()
        return True

    # --- tools -----------------------------------------------------------------------------------

    def register_tool(self, made: AgentTool) -> bool:
        """Add (or replace) a notebook tool; True if it replaced one."""
        replaced = self.tools.add_function(made)
        self._push_tools()
        return replaced

    def add_tool_by_name(self, name: str) -> str:
        """``%tools add NAME``: a built-in, or a function from the notebook namespace."""
        if self.tools.is_builtin(name):
            self.tools.enable_builtin(name)
            self._push_tools()
            return f"Enabled the built-in tool {name}"
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
        removed = self.tools.remove(name)
        if removed:
            self._push_tools()
        return removed

    def _push_tools(self) -> None:
        if self._harness is not None:
            self._harness.set_tools(self.tools.active())

    async def _approve_tool_call(self, event: ToolCallEvent) -> ToolCallResult | None:
        """The ``tool_call`` hook: tools marked ``requires_approval`` wait for Allow / Deny in
        the run view (denied after ``approval_timeout`` seconds without an answer)."""
        name = event.tool_name
        made = next((t for t in self.tools.active() if t.name == name), None)
        if not getattr(made, "requires_approval", False):
            return None
        run = self._active
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

    # --- facts for %model / %session -------------------------------------------------------------

    def session_cost(self) -> float:
        """Dollars spent by every assistant message in the session file."""
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
        """Abort what runs (``%unload_ext``)."""
        self.abort()
