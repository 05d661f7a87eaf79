"""Each package's ``__all__`` is curated: exactly its public names, sorted, and all importable.
Some of these names are a fixed contract (tests outside the repository call them); the lists
below guard them."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "pi_notebook",
    "pi_notebook.ai",
    "pi_notebook.agent",
    "pi_notebook.tools",
    "pi_notebook.harness",
    "pi_notebook.mcp",
    "pi_notebook.notebook.workspace",
    "pi_notebook.notebook.checkpoints",
    "pi_notebook.eval",
]

REQUIRED = {
    "pi_notebook.ai": {
        "TextContent",
        "ThinkingContent",
        "ImageContent",
        "ToolCall",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "SystemMessage",
        "Usage",
        "Cost",
        "StopReason",
        "ThinkingLevel",
        "Model",
        "get_model",
        "get_models",
        "get_providers",
        "parse_model",
        "Context",
        "Tool",
        "AbortController",
        "AbortSignal",
        "stream",
        "complete",
        "stream_simple",
        "complete_simple",
        "AssistantMessageEventStream",
        "register_faux_provider",
        "FauxProvider",
        "faux_assistant_message",
        "faux_text",
        "faux_thinking",
        "faux_tool_call",
    },
    "pi_notebook.agent": {
        "Agent",
        "AgentContext",
        "AgentLoopConfig",
        "AgentTool",
        "AgentToolResult",
        "agent_loop",
        "agent_loop_continue",
        "tool",
    },
    "pi_notebook.harness": {  # pi 1.6 sessions included
        "Session",
        "SessionContext",
        "SessionEntry",
        "JsonlSessionStorage",
        "InMemorySessionStorage",
        "AgentHarness",
        "CompactionSettings",
    },
    "pi_notebook.mcp": {"McpServerConfig", "McpServers", "McpTool", "mcp_tool_name"},
}


def _isort_style(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_unique_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported in (
        sorted(exported, key=str.casefold),
        sorted(exported),
        sorted(exported, key=_isort_style),  # ruff's RUF022 order: CONSTANTS, Classes, functions
    )
    assert len(set(exported)) == len(exported)
    for symbol in exported:
        assert hasattr(module, symbol), f"{name}.{symbol} is listed but missing"


@pytest.mark.parametrize("name", PACKAGES)
def test_no_unlisted_public_names(name: str) -> None:
    module = importlib.import_module(name)
    submodules = {
        n
        for n, v in vars(module).items()
        if getattr(v, "__name__", "").startswith(name + ".") and type(v).__name__ == "module"
    }
    # "@py_builtins"/"@pytest_ar" appear when pytest rewrites the package's asserts (it does for
    # packages that register a pytest plugin, as pi_notebook does): not names of ours.
    # dir(), not vars(): a package may load some names lazily (PEP 562 __getattr__/__dir__).
    public = {n for n in dir(module) if (not n.startswith(("_", "@"))) or n == "__version__"}
    public -= submodules
    assert public == set(module.__all__)


@pytest.mark.parametrize(("name", "required"), sorted(REQUIRED.items()))
def test_design_contract_names_exist(name: str, required: set[str]) -> None:
    module = importlib.import_module(name)
    assert required <= set(module.__all__)
