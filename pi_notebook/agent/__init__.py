"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues."""

import importlib as _importlib
from typing import Any as _Any

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
_core_getattr, _core_dir, _core_all = _lazy.attach_stub(__name__, __file__)

# The one name from a layer above: `pi_notebook.agent.tool` is a fixed public name for the
# decorator of `pi_notebook.tools` (which builds on this package). It is looked up only when
# asked for; nothing in the core imports that layer.
_FROM_TOOLS = ("FunctionTool", "tool")
__all__ = sorted([*_core_all, *_FROM_TOOLS])


def __getattr__(name: str) -> _Any:
    if name in _FROM_TOOLS:
        return getattr(_importlib.import_module("pi_notebook.tools"), name)
    return _core_getattr(name)


def __dir__() -> list[str]:
    return __all__.copy()
