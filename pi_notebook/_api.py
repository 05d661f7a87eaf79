"""The top-level entry points: the IPython extension hooks, ``current()`` and ``tool``.

Nothing here imports Jupyter until it is called.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from .notebook.kernel_agent import NotebookAgent
    from .tools.decorator import FunctionTool

__all__ = ["current", "load_ipython_extension", "tool", "unload_ipython_extension"]


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext pi_notebook``."""
    from .notebook.extension import load_ipython_extension as load

    load(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext pi_notebook``."""
    from .notebook.extension import unload_ipython_extension as unload

    unload(ip)


def current() -> NotebookAgent:
    """This kernel's agent (``.harness``, ``.session``, ``.last_run``, ``await .wait()``)."""
    from .notebook.current import current as get

    return get()


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(**options: Any) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None, /, **options: Any
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a tool (see ``pi_notebook.agent.tool``) and, when the extension is loaded,
    give it to this kernel's agent. Redefining the function in a later cell updates the tool."""
    from .tools.decorator import tool as make_tool

    def register(function: Callable[..., Any]) -> FunctionTool:
        made: FunctionTool = make_tool(function, **options)
        # Only a loaded extension has imported its registry: plain scripts stay Jupyter-free.
        registry = sys.modules.get("pi_notebook.notebook.current")
        agent = getattr(registry, "_agent", None)
        if agent is not None:
            agent.tool_offer.register_tool(made)
        return made

    if fn is not None:
        return register(fn)
    return register
