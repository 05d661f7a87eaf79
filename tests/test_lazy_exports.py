"""The packages re-export lazily (``pi_notebook._lazy``): the names a package lists in
``_EXPORTS`` are the names it imports for type checkers, each resolves to the object of the
submodule it names, and no re-exported name is also the name of a submodule of the package
(importing that submodule would replace the re-exported object on the package)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
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


def _type_checking_imports(path: Path) -> dict[str, tuple[str, ...]]:
    """``{".module": names}`` of the imports under ``if _typing.TYPE_CHECKING:``."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for item in node.body:
                assert isinstance(item, ast.ImportFrom), ast.unparse(item)
                module = "." * item.level + (item.module or "")
                found[module] = found.get(module, ()) + tuple(a.name for a in item.names)
    return found


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_exports_match_the_type_checking_imports(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__file__ is not None
    assert _type_checking_imports(Path(package.__file__)) == package._EXPORTS
    listed = [n for names in package._EXPORTS.values() for n in names]
    assert sorted(listed) == sorted(package.__all__)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_each_name_is_the_object_of_its_submodule(name: str) -> None:
    package = importlib.import_module(name)
    for module, names in package._EXPORTS.items():
        home = importlib.import_module(module, name)
        for symbol in names:
            assert getattr(package, symbol) is getattr(home, symbol), f"{name}.{symbol}"


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_no_export_is_named_like_a_submodule(name: str) -> None:
    package = importlib.import_module(name)
    submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    assert not submodules & set(package.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    harness = importlib.import_module("pi_notebook.harness")
    with pytest.raises(AttributeError, match="has no attribute 'Sesion'"):
        _ = harness.Sesion
