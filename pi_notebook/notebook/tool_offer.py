"""Which tools the notebook agent's model is offered: the registry's and the MCP servers' tools
switched on, less what the model cannot use: none for a model that cannot call tools, the write
tools only with a notebook frontend (or when added by name), a lean read set for a small model
(:mod:`.tool_choice`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agent.tools import AgentTool
    from ..ai.types import Model
    from .kernel_agent import NotebookAgent

__all__ = ["ToolOffer"]


class ToolOffer:
    """The tools of ``agent``: adding and removing them (``%tools``), and what a model gets."""

    def __init__(self, agent: NotebookAgent) -> None:
        self._agent = agent
        self.tool_calls_override: bool | None = None
        """The user's word on whether the model calls tools (``%model --tools yes|no``); None:
        as known of the model (``ai.tool_support``)."""
        self.pushed: list[str] = []
        """The tool names the harness was last given."""
        self.write_pinned: set[str] = set()
        """Write tools added with ``%tools add`` (offered without a frontend too)."""
        self.pinned: set[str] = set()
        """Read tools added by name (offered to a small model too)."""

    def register_tool(self, made: AgentTool) -> bool:
        """Add (or replace) a notebook tool; True if it replaced one."""
        agent = self._agent
        replaced = agent.tools.add_function(made)
        self.push()
        return replaced

    def active_tools(self) -> list[AgentTool]:
        """What the agent gets: the registry's tools, then the MCP tools switched on."""
        agent = self._agent
        return [*agent.tools.active(), *agent.mcp.tools()]

    def tool_listing(self) -> list[tuple[str, str, bool, str]]:
        """(name, kind, active, description) of every tool, MCP ones included."""
        agent = self._agent
        rows = agent.tools.listing()
        rows += [
            (t.name, f"mcp: {t.server}", agent.mcp.is_enabled(t.name), t.description)
            for t in agent.mcp.all_tools()
        ]
        return rows

    def add_tool_by_name(self, name: str) -> str:
        """``%tools add NAME``: a built-in, an MCP tool, or a function from the notebook."""
        agent = self._agent
        if agent.mcp.is_tool(name):
            agent.mcp.enable(name)
            return f"Enabled the MCP tool {name}"
        if name in agent.toolbox.writers():
            self.write_pinned.add(name)
            agent.tools.enable_builtin(name)
            self.push()
            return f"Enabled the notebook tool {name} (also without a notebook frontend)"
        if agent.tools.is_builtin(name):
            agent.tools.enable_builtin(name)
            self.pinned.add(name)  # asked for by name: offered to a small model too
            self.push()
            return f"Enabled the built-in tool {name}"
        from ..agent.tools import AgentTool
        from ..tools.decorator import tool

        value = agent.namespace.get(name)
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
        agent = self._agent
        if not agent.toolbox.made:  # no tool registered yet: nothing to re-wrap
            return
        from ..tools.decorator import FunctionTool

        changed = False
        for name, _kind, _active, _desc in agent.tools.listing():
            made = agent.tools.function_tool(name)
            if not isinstance(made, FunctionTool):
                continue
            fn_name = getattr(made.fn, "__name__", name)
            current = agent.namespace.get(fn_name)
            if current is None or current is made or current is made.fn:
                continue
            if isinstance(current, FunctionTool):
                agent.tools.add_function(current)
            elif callable(current):
                agent.tools.add_function(made.with_function(current))
            changed = True
        if changed:
            self.push()

    def remove_tool(self, name: str) -> bool:
        """``%tools remove NAME``; False if no such tool was active."""
        agent = self._agent
        if agent.mcp.is_tool(name):
            return agent.mcp.disable(name)
        removed = agent.tools.remove(name)
        self.write_pinned.discard(name)
        self.pinned.discard(name)
        if removed:
            self.push()
        return removed

    def model_calls_tools(self, model: Model | None = None) -> bool:
        """Whether ``model`` (default: the harness's) is offered tools: the user's override,
        else what is known of the model."""
        agent = self._agent
        if self.tool_calls_override is not None:
            return self.tool_calls_override
        if model is None and agent.harness_if_made is not None:
            model = agent.harness_if_made.model
        if model is None:
            return True
        from ..ai.tool_support import calls_tools

        return calls_tools(model)

    def offered_tools(self, model: Model | None = None) -> list[AgentTool]:
        """The active tools ``model`` (default: the harness's) gets: none for a model that
        cannot call tools; the write tools only while a notebook frontend is connected (or when
        added with ``%tools add``), so an executed notebook (nbclient, papermill, a cassette
        replay) sees the same tools as before unless it asks for them."""
        agent = self._agent
        from .workspace.edit_tools import WRITE_TOOL_NAMES

        if not self.model_calls_tools(model):
            return []
        connected = agent.document.connected
        lean = self.held_back_tools(model)
        return [
            t
            for t in self.active_tools()
            if (t.name not in WRITE_TOOL_NAMES or connected or t.name in self.write_pinned)
            and t.name not in lean
        ]

    def held_back_tools(self, model: Model | None = None) -> dict[str, str]:
        """Read tools on but not offered to ``model`` (a small one gets a lean set), with why."""
        agent = self._agent
        from .tool_choice import held_back

        if model is None and agent.harness_if_made is not None:
            model = agent.harness_if_made.model
        return held_back(model, frontend=agent.document.connected, pinned=self.pinned)

    def offer_to(self, model: Model | None = None) -> list[AgentTool]:
        offered = self.offered_tools(model)
        self.pushed = [t.name for t in offered]
        return offered

    def push(self) -> None:
        agent = self._agent
        if agent.harness_if_made is not None:
            agent.harness_if_made.set_tools(self.offer_to())
