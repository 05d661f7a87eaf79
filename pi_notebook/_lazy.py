"""Lazy re-exports for the packages' ``__init__`` modules (PEP 562).

A package re-exports names from its submodules so users write ``from pi_notebook.harness import
Session``. Importing every submodule up front would build every pydantic model and dataclass of
the layer — most of ``%load_ext``'s time (issue 15, ``bench/kernel_bench.py``) — although a
kernel that only opens its session needs a few of them. So a package lists where each name
lives, and the submodule is imported when one of its names is first asked for; the value is then
stored on the package, so later lookups are plain attribute reads.

Each package also imports the same names under ``TYPE_CHECKING``, for type checkers and readers;
``tests/test_lazy_exports.py`` checks that the two lists agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which re-exports, for each relative
    submodule name in ``exports`` (``".session"``), the names listed with it."""
    home = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
