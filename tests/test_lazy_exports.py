"""The packages re-export lazily with lazy-loader: each lists its public names once, in its
``__init__.pyi``; importing the package imports none of its submodules, and each name resolves to
the object of the submodule the stub names."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = [
    "pi_notebook.ai",
    "pi_notebook.agent",
    "pi_notebook.harness",
    "pi_notebook.tools",
    "pi_notebook.mcp",
    "pi_notebook.notebook.workspace",
]


def _stub_exports(name: str) -> dict[str, tuple[str, ...]]:
    """``{".module": names}`` of the stub's imports from the package's own submodules."""
    package = importlib.import_module(name)
    assert package.__file__ is not None
    stub = Path(package.__file__).with_suffix(".pyi")
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1, ast.unparse(node)
            for alias in node.names:
                assert alias.asname == alias.name, "a stub re-exports a name as itself"
            found[f".{node.module}"] = tuple(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_all_is_what_the_stub_lists(name: str) -> None:
    package = importlib.import_module(name)
    listed = {n for names in _stub_exports(name).values() for n in names}
    extra = {"FunctionTool", "tool"} if name == "pi_notebook.agent" else set()
    assert set(package.__all__) == listed | extra


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_each_name_is_the_object_of_its_submodule(name: str) -> None:
    package = importlib.import_module(name)
    for module, names in _stub_exports(name).items():
        home = importlib.import_module(module, name)
        for symbol in names:
            assert getattr(package, symbol) is getattr(home, symbol), f"{name}.{symbol}"


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_no_export_is_named_like_a_submodule(name: str) -> None:
    package = importlib.import_module(name)
    submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    assert not submodules & set(package.__all__)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_importing_a_package_imports_none_of_its_submodules(name: str) -> None:
    code = f"import sys, {name}\nprint(sorted(m for m in sys.modules if m.startswith('{name}.')))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_agent_reaches_the_tools_layer_only_for_the_decorator() -> None:
    """``pi_notebook.agent.tool`` is a fixed public name for the decorator of
    ``pi_notebook.tools``; the core itself never imports that layer."""
    agent = importlib.import_module("pi_notebook.agent")
    tools = importlib.import_module("pi_notebook.tools")
    assert agent.tool is tools.tool and agent.FunctionTool is tools.FunctionTool
    core = Path(agent.__file__ or "").parent
    for path in core.glob("*.py"):
        if path.name != "__init__.py":
            text = path.read_text(encoding="utf-8")
            assert "..tools" not in text and "pi_notebook.tools" not in text, path


def test_an_unknown_name_is_an_attribute_error() -> None:
    harness = importlib.import_module("pi_notebook.harness")
    with pytest.raises(AttributeError, match="Sesion"):
        _ = harness.Sesion
