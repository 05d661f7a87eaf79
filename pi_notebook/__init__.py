"""pi_notebook — a Jupyter-native agent kernel extension.

``%load_ext pi_notebook`` embeds an agent harness in the kernel: ``%%agent`` cells drive it, runs
stream into live widgets, notebook functions become tools (``@pi_notebook.tool``), and the
conversation is a session tree stored next to the notebook.

The layers import one way: ``ai`` ← ``agent`` ← ``harness`` ← ``notebook``; only ``notebook``
touches Jupyter, and importing this package loads none of it.
"""

from ._api import current, load_ipython_extension, tool, unload_ipython_extension

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "current",
    "load_ipython_extension",
    "tool",
    "unload_ipython_extension",
]
