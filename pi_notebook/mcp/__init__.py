"""pi_notebook.mcp — MCP servers as a source of agent tools, through the official ``mcp`` SDK.

It builds on ``pi_notebook.ai`` and ``pi_notebook.agent`` only (no IPython), so ``Agent`` and
``AgentHarness`` users pass ``McpServers(...).tools()`` like any other tools. The SDK is imported
when the first server starts, never by ``import pi_notebook``.
"""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
