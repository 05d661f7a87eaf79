"""``%load_ext pi_notebook`` / ``%unload_ext pi_notebook``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .current import current, install, uninstall
from .kernel_agent import NotebookAgent
from .locations import latest_session_path, session_path_for
from .magics.base import AgentMagics, Outcomes
from .magics.checkpoint import CheckpointMagics
from .magics.core import PiMagics
from .magics.guard import GuardMagics
from .magics.input_rewrite import rewrite_input
from .magics.mcp import McpMagics, load_configured_servers
from .magics.model import ModelMagics
from .magics.session import SessionMagics
from .magics.system import SystemMagics
from .magics.tools import ToolMagics
from .magics.tree import TreeMagics

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

_AGENT_MAGICS: tuple[type[AgentMagics], ...] = (
    PiMagics,
    TreeMagics,
    SessionMagics,
    ModelMagics,
    ToolMagics,
    SystemMagics,
    McpMagics,
    GuardMagics,
    CheckpointMagics,
)
"""The families of magics, each a ``Magics`` class of its own; they share the agent and the
displays of queued magics (``Outcomes``)."""

HELP = "%%agent?"
"""What the banner names for help: ``%%agent`` is a cell magic, so ``%agent?`` finds nothing."""

_Shadowed = dict[str, dict[str, Callable[..., Any] | None]]
"""For each kind of magic (``line``, ``cell``) and name the extension registered, the magic it
replaced (IPython's ``%system``, the shell command, is one), ``None`` where there was none."""


def _register_magics(ip: Any, families: list[AgentMagics]) -> _Shadowed:
    tables = ip.magics_manager.magics
    before = {kind: dict(table) for kind, table in tables.items()}
    for family in families:
        ip.register_magics(family)
    return {
        kind: {name: before[kind].get(name) for family in families for name in family.magics[kind]}
        for kind in ("line", "cell")
    }


def _restore_magics(ip: Any, shadowed: _Shadowed) -> None:
    tables = ip.magics_manager.magics
    for kind, names in shadowed.items():
        table = tables[kind]
        for name, previous in names.items():
            # a magic the user defined since the load is theirs: left as it is
            if not isinstance(getattr(table.get(name), "__self__", None), AgentMagics):
                continue
            if previous is None:
                del table[name]
            else:
                table[name] = previous


class _Hooks:
    """The IPython event handlers of one loaded extension."""

    def __init__(self, agent: NotebookAgent, outcomes: Outcomes, shadowed: _Shadowed) -> None:
        self.agent = agent
        self.outcomes = outcomes
        self.shadowed = shadowed

    def pre_run_cell(self, info: Any) -> None:
        cell_id = getattr(info, "cell_id", None)
        if cell_id:
            self.agent.cell_key = f"id:{cell_id}"
        else:
            raw = getattr(info, "raw_cell", "") or ""
            self.agent.cell_key = "src:" + hashlib.sha256(raw.encode()).hexdigest()[:16]

    def post_run_cell(self, _result: Any) -> None:
        # nbclient keeps only messages sent while a cell runs: re-send the views' state now,
        # so an executed notebook stores every run as it stands. A JupyterLab page linked by
        # the labextension applies the run views' patches to its models, which it saves: it
        # has the state already (only the text fallback is refreshed).
        patched = self.agent.document.connected
        for run in self.agent.runs:
            run.view.resync(content=not patched)
        for view in self.agent.tree_views:
            view.resync()
        self.outcomes.resync()


_hooks: _Hooks | None = None


def load_ipython_extension(ip: Any) -> None:
    global _hooks
    if _hooks is not None:
        print("pi_notebook is already loaded.")
        return
    path = latest_session_path(session_path_for())
    agent = NotebookAgent(path, ip.user_ns)
    if agent.load_notice:
        print(f"pi_notebook: {agent.load_notice}")
    path = agent.session_path
    install(agent)
    agent.history.install(ip)
    outcomes = Outcomes(agent)
    shadowed = _register_magics(ip, [family(ip, agent, outcomes) for family in _AGENT_MAGICS])
    for problem in load_configured_servers(agent):
        print(f"pi_notebook: MCP configuration skipped: {problem}")
    agent.document.install()  # a notebook view with the pi_notebook labextension links now
    ip.input_transformers_cleanup.append(rewrite_input)
    _hooks = _Hooks(agent, outcomes, shadowed)
    ip.events.register("pre_run_cell", _hooks.pre_run_cell)
    ip.events.register("post_run_cell", _hooks.post_run_cell)
    entries = agent.restored_entries
    restored = f", restored {entries} entries" if entries else ""
    print(f"pi_notebook: session {path.name}{restored}. Start with %%agent; help: {HELP}")


def unload_ipython_extension(ip: Any) -> None:
    global _hooks
    if _hooks is None:
        return
    agent = current()
    agent.shutdown()
    agent.history.uninstall()
    agent.document.uninstall()
    _restore_magics(ip, _hooks.shadowed)
    for family in _AGENT_MAGICS:
        ip.magics_manager.registry.pop(family.__name__, None)
    if rewrite_input in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(rewrite_input)
    ip.events.unregister("pre_run_cell", _hooks.pre_run_cell)
    ip.events.unregister("post_run_cell", _hooks.post_run_cell)
    _hooks = None
    uninstall()
