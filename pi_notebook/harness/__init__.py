"""pi_notebook.harness — the session tree and its storage (pi's JSONL v3), harness messages,
compaction, branch summaries, skills and prompt templates, and the ``AgentHarness``."""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
