"""The notebook as the agent's workspace: what ran in the kernel (``history``), what changed
between turns (``summary``), the read tools, and (from the frontend side) the open document and
the tools that write to it."""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
