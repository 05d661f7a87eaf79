"""The cell that made a name: the newest cell in the kernel's history whose code binds it.

A value that cannot be pickled (an open file, a connection, a generator) can only come back by
running its cell again, so a checkpoint lists that cell with it. "Binds" is read from the
cell's syntax tree (after IPython's own transformation of magics): an assignment,
``for``/``with … as``, ``import``, ``def``/``class``, a walrus. Cells that still do not parse
are matched on ``name =`` at a line's start.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence

from .store import ValueOrigin

__all__ = ["bound_names", "find_origins"]

_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)", re.M)


def bound_names(source: str) -> set[str]:
    """The top-level names ``source`` assigns (not those inside its functions)."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError:
        return set(_ASSIGNMENT.findall(source))
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue  # what its body binds is local to it
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.comprehension):  # its target is local to the comprehension
            pending.extend([node.iter, *node.ifs])
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".", 1)[0])
        elif isinstance(node, ast.Global):
            names.update(node.names)
        pending.extend(ast.iter_child_nodes(node))
    return names


def _python(source: str) -> str:
    """A cell's source as IPython runs it (magics and ``!commands`` become calls)."""
    if "%" not in source and "!" not in source:
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return str(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call]


def find_origins(
    names: Iterable[str], cells: Sequence[tuple[int | None, str | None, str]]
) -> dict[str, ValueOrigin]:
    """For each name, the newest of ``cells`` (``(execution_count, cell_id, source)``, oldest
    first) that binds it; names no cell binds are left out."""
    wanted = set(names)
    found: dict[str, ValueOrigin] = {}
    for count, cell_id, source in reversed(cells):
        if not wanted:
            break
        hits = wanted & bound_names(source)
        for name in hits:
            found[name] = ValueOrigin(count, cell_id, source)
        wanted -= hits
    return found
