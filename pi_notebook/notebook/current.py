"""The kernel's one ``NotebookAgent``, reachable without importing IPython.

``%load_ext pi_notebook`` installs it; ``pi_notebook.current()`` returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kernel_agent import NotebookAgent

__all__ = ["NotLoadedError", "current", "install", "uninstall"]

_agent: NotebookAgent | None = None


class NotLoadedError(RuntimeError):
    def __init__(self) -> None:
        super().__init__("pi_notebook is not loaded in this kernel: run `%load_ext pi_notebook`")


def current() -> NotebookAgent:
    """This kernel's notebook agent (after ``%load_ext pi_notebook``)."""
    if _agent is None:
        raise NotLoadedError()
    return _agent


def install(agent: NotebookAgent) -> None:
    global _agent
    _agent = agent


def uninstall() -> NotebookAgent | None:
    global _agent
    agent, _agent = _agent, None
    return agent
