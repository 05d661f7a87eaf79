"""pi_notebook.ai — the LLM layer: message model, event streams, providers, model catalogue.

Knows nothing of agents. Every provider streams through one ``AssistantMessageEventStream`` and
never raises once the stream exists.
"""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
