"""The notebook agent's tools, made on first use: the registry (built-ins, the workspace's read
and write tools, the notebook's functions), the MCP servers, the write tools with the review of
a reply's cell writes, and the imports a first run needs beyond ``%load_ext``.

``%load_ext`` makes none of these: each needs the pydantic models of its layer. The first run
imports them and builds the registry in a thread (:meth:`NotebookToolbox.prepare`), so the
kernel's event loop goes on with widgets and interrupts meanwhile. Which of the tools the model
is offered is :mod:`.tool_offer`'s.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._gc import gc_paused

if TYPE_CHECKING:
    from ..agent.tools import AgentTool
    from ..mcp import McpServers
    from .notebook_tools import ToolRegistry
    from .workspace.document import NotebookDocument
    from .workspace.edit_tools import WriteTools
    from .workspace.history import ExecutionHistory
    from .workspace.review import ReplyChanges

__all__ = ["RUN_MODULES", "NotebookToolbox"]

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
the HTTP layer and its transport)."""


def _import_run_modules() -> None:
    for name in RUN_MODULES:
        importlib.import_module(name)
    from ..ai.http import preload_transport

    preload_transport()  # aiohttp's import would otherwise stall the loop at the first request


class NotebookToolbox:
    """The tools of a notebook agent over ``namespace`` (the user's), ``history`` (what ran in
    the kernel) and ``document`` (the notebook in a frontend). ``takes_images`` says whether the
    model takes the plots as images, ``waited_on`` whether a cell waits for the agent (a
    ``run_cell`` then would wait for itself), ``on_mcp_change`` hears of MCP tools coming and
    going."""

    def __init__(
        self,
        namespace: Callable[[], dict[str, Any]],
        history: ExecutionHistory,
        document: NotebookDocument,
        *,
        takes_images: Callable[[], bool],
        waited_on: Callable[[], bool],
        on_mcp_change: Callable[[], None],
    ) -> None:
        self._namespace = namespace
        self._history = history
        self._document = document
        self._takes_images = takes_images
        self._waited_on = waited_on
        self._on_mcp_change = on_mcp_change
        self._registry: ToolRegistry | None = None
        self._lock = threading.Lock()
        """The first run builds the registry in a thread (:meth:`prepare`); a cell asking for
        it meanwhile waits for that one instead of building another."""
        self._mcp: McpServers | None = None
        self._writes: WriteTools | None = None
        self._writer_tools: dict[str, AgentTool] | None = None
        self._reply_changes: ReplyChanges | None = None

    @property
    def registry(self) -> ToolRegistry:
        """The notebook's tools: built-ins, the workspace's read and write tools, functions
        (made on first use: a pydantic model for each tool's parameters)."""
        if self._registry is None:
            with self._lock:
                if self._registry is None:
                    self._registry = self._new_registry()
        return self._registry

    @property
    def made(self) -> bool:
        """Whether the registry is made (no tool was registered before that)."""
        return self._registry is not None

    def _new_registry(self) -> ToolRegistry:
        from .notebook_tools import ToolRegistry, builtin_tools
        from .workspace.reading_tools import read_tools

        history, document = self._history, self._document
        registry = ToolRegistry(builtin_tools(self._namespace, history.note_agent_failure))
        for reader in read_tools(history, lambda: document, self._takes_images).values():
            registry.add_builtin(reader, enabled=True)
        from .verify import verify_tool

        # Off until `%tools add verify_notebook`: a new default tool changes every request.
        registry.add_builtin(verify_tool(lambda: document, history), enabled=False)
        for writer in self.writers().values():  # offered while a notebook is connected
            registry.add_builtin(writer, enabled=True)
        return registry

    @property
    def mcp(self) -> McpServers:
        """The MCP servers (``%mcp``); they start with the first run that follows."""
        if self._mcp is None:
            from ..mcp.servers import McpServers

            self._mcp = McpServers(on_change=self._on_mcp_change)
        return self._mcp

    @property
    def mcp_if_made(self) -> McpServers | None:
        """The MCP servers if ``%mcp`` or a run made them (None: none yet)."""
        return self._mcp

    async def start_mcp(self) -> None:
        """Start configured MCP servers not running yet (first use); a failure is reported and
        the run goes on without that server's tools."""
        for reason in (await self.mcp.start()).values():
            print(f"MCP: {reason} (see %mcp list)")

    @property
    def write_tools(self) -> WriteTools:
        """Insert, edit, delete and run cells (each approved in the run view)."""
        if self._writes is None:
            from .workspace.edit_tools import WriteTools

            self._writes = WriteTools(
                self._document,
                self._history,
                waited_on=self._waited_on,
                takes_images=self._takes_images,
            )
        return self._writes

    def writers(self) -> dict[str, AgentTool]:
        """The write tools by name (made once, with the registry)."""
        if self._writer_tools is None:
            self._writer_tools = self.write_tools.tools()
        return self._writer_tools

    @property
    def reply_changes(self) -> ReplyChanges:
        """The cell writes of the model's latest reply, reviewed together."""
        if self._reply_changes is None:
            from .workspace.review import ReplyChanges

            self._reply_changes = ReplyChanges()
        return self._reply_changes

    def prepared(self) -> bool:
        """Whether a run's imports are done and the registry is made."""
        return self.made and all(name in sys.modules for name in RUN_MODULES)

    def prepare(self) -> None:
        """Import what a run needs and make the registry (in a thread for the first run)."""
        with gc_paused():  # a full collection here would hold the GIL (and the loop) noticeably
            _import_run_modules()
            _ = self.registry
