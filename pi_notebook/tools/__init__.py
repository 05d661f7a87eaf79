"""pi_notebook.tools — plain Python functions as agent tools.

This is not the agent core (pi has no such layer): it builds ``AgentTool`` objects from functions
— a JSON schema from the type hints, descriptions from the docstring, return values (text, images,
DataFrames, rich reprs) turned into content for the model — and hands them to the core. It imports
``pi_notebook.agent``; the core reaches it only through the lazily re-exported ``tool``.
"""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
