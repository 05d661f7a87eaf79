"""Tools that look into the kernel: built-in ones and the registry of notebook functions made
into tools with ``@pi_notebook.tool`` or ``%tools add``.

Built-ins see the live user namespace; the read-only ones are on by default (``%tools remove
NAME`` turns one off, ``%tools add NAME`` back on), ``run_python`` is off until added:

- ``list_variables``: the notebook's variables with their types and shapes;
- ``describe_variable``: one variable's summary (DataFrame shape, dtypes and head; array shape
  and dtype; length and a preview of sequences and mappings; otherwise a bounded repr);
- ``run_python``: run code in the kernel namespace and return its output — it always asks for
  approval in the run view first.

The workspace adds its read tools (``workspace.reading_tools``) and the frontend's write tools to
the same registry with ``add_builtin``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import linecache
import os
import sysconfig
import traceback
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..agent.tools import AgentTool, AgentToolResult
from ..ai.types import TextContent
from ..tools import FunctionTool, tool
from .error_hints import error_hint

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "READ_ONLY_BUILTINS",
    "ToolRegistry",
    "builtin_tools",
    "describe_value",
]

BUILTIN_TOOL_NAMES = ("list_variables", "describe_variable", "run_python")
READ_ONLY_BUILTINS = ("list_variables", "describe_variable")
"""Built-ins that only read, and so are on by default."""
_PREVIEW = 2_000


def _is_user_variable(name: str, value: Any) -> bool:
    if name.startswith("_") or name in {"In", "Out", "exit", "quit", "get_ipython"}:
        return False
    return not isinstance(value, types.ModuleType | type) and not callable(value)


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return "×".join(str(n) for n in shape)
    try:
        return f"len {len(value)}"
    except TypeError:
        return ""


def describe_value(value: Any, limit: int = _PREVIEW) -> str:
    """A bounded, model-friendly summary of ``value``."""
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    lines = [f"type: {kind}"]
    shape = _shape(value)
    if shape:
        lines.append(f"shape: {shape}")
    dtypes = getattr(value, "dtypes", None)
    if dtypes is not None and hasattr(value, "head"):
        lines.append("dtypes:\n" + str(dtypes))
        lines.append("head:\n" + str(value.head()))
    elif getattr(value, "dtype", None) is not None:
        lines.append(f"dtype: {value.dtype}")
        lines.append("preview:\n" + repr(value))
    else:
        lines.append("value: " + repr(value))
    text = "\n".join(lines)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters]"
    return text


_AGENT_FILE = "<agent>"
_LIBRARY_FRAMES = 2
"""Innermost frames outside the model's code kept in a traceback (where it failed)."""


def _run_code(code: str, namespace: dict[str, Any]) -> tuple[str, bool]:
    """Execute ``code`` like a REPL cell: output printed, value of a final expression shown.
    Returns the output and whether the code failed.

    An error is reported so the model can act on it: a syntax error with its line and a caret,
    a traceback with every frame of the model's code and the innermost library frames (none of
    this module's)."""
    # The source in linecache: tracebacks then quote the model's lines, not only their numbers.
    linecache.cache[_AGENT_FILE] = (len(code), None, code.splitlines(keepends=True), _AGENT_FILE)
    try:
        tree = ast.parse(code, filename=_AGENT_FILE, mode="exec")
    except SyntaxError as exc:
        return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n"), True
    last: ast.Expression | None = None
    if tree.body and isinstance(final := tree.body[-1], ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    out = io.StringIO()
    failed = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            # The user approved this code (or a policy they set did).
            exec(compile(tree, _AGENT_FILE, "exec"), namespace)
            if last is not None:
                value = eval(compile(last, _AGENT_FILE, "eval"), namespace)
                if value is not None:
                    print(repr(value))
        except (Exception, SystemExit) as exc:  # sys.exit() in the code ends it, not the kernel
            failed = True
            print(_agent_traceback(exc))
            hint = error_hint(exc)
            if hint is not None:
                print(hint)
    ending = tree.body[-1] if tree.body and last is None else None
    return out.getvalue() or _no_output(ending), failed


def _no_output(final: ast.stmt | None) -> str:
    """What code that printed nothing gives back: when its last statement assigned a value,
    how to see it (a model told only "(no output)" states a value it never saw)."""
    targets: list[ast.expr] = []
    if isinstance(final, ast.Assign):
        targets = final.targets
    elif isinstance(final, (ast.AugAssign, ast.AnnAssign)):
        targets = [final.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    if not names:
        return "(no output)"
    return f"(no output: the code printed nothing. To see the value, print it: print({names[0]}))"


def _short_path(filename: str) -> str:
    """A library file as its package path (``pandas/core/frame.py``): the same text on every
    machine, so a replayed conversation matches its recording."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in filename:
            return filename.rsplit(marker, 1)[1]
    stdlib = sysconfig.get_paths()["stdlib"] + os.sep
    if filename.startswith(stdlib):
        return filename.removeprefix(stdlib)
    return filename


def _agent_traceback(exc: BaseException) -> str:
    """The traceback of an error in the model's code: its own frames, then the innermost
    library frames; the ones between are counted."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if os.path.abspath(frame.filename) != os.path.abspath(__file__)
    ]
    tail = len(frames) - _LIBRARY_FRAMES
    kept: list[traceback.FrameSummary | int] = []
    for index, frame in enumerate(frames):
        if frame.filename == _AGENT_FILE or index >= tail:
            kept.append(frame)
        elif kept and isinstance(kept[-1], int):
            kept[-1] += 1
        else:
            kept.append(1)
    lines = ["Traceback (most recent call last):"]
    for item in kept:
        if isinstance(item, int):
            lines.append(f"  [... {item} more frame{'s' if item > 1 else ''}]")
        else:
            item.filename = _short_path(item.filename)
            lines.extend(traceback.format_list([item])[0].rstrip("\n").split("\n"))
    lines.extend(line.rstrip("\n") for line in traceback.format_exception_only(type(exc), exc))
    return "\n".join(lines)


def builtin_tools(
    namespace: Callable[[], dict[str, Any]],
    on_failure: Callable[[str, str], None] | None = None,
) -> dict[str, FunctionTool]:
    """The built-in notebook tools, reading the namespace through ``namespace()``;
    ``on_failure(code, output)`` hears of each ``run_python`` call that failed."""

    def list_variables() -> str:
        """List the notebook's variables with their types and shapes."""
        rows = [
            f"{name}: {type(value).__name__}" + (f" ({_shape(value)})" if _shape(value) else "")
            for name, value in namespace().items()
            if _is_user_variable(name, value)
        ]
        return "\n".join(rows) or "(no variables)"

    def describe_variable(name: str) -> str:
        """Describe one notebook variable: type, shape, dtypes and the first rows of tables.

        Args:
            name: The variable's name in the notebook.
        """
        ns = namespace()
        if name not in ns:
            raise KeyError(f"No variable named {name!r} in the notebook")
        return describe_value(ns[name])

    def run_python(code: str) -> AgentToolResult:
        """Run Python code in the notebook's namespace and return what it prints (and the
        value of a final expression). Variables it defines stay in the notebook.

        Args:
            code: The Python source to run.
        """
        output, failed = _run_code(code, namespace())
        if failed and on_failure is not None:
            on_failure(code, output)
        return AgentToolResult(content=[TextContent(text=output)], is_error=failed)

    return {
        "list_variables": tool(list_variables),
        "describe_variable": tool(describe_variable),
        "run_python": tool(run_python, requires_approval=True, execution_mode="sequential"),
    }


class ToolRegistry:
    """The notebook's tools by name, and which of them the agent may use."""

    def __init__(
        self, builtins: Mapping[str, AgentTool], enabled: Iterable[str] = READ_ONLY_BUILTINS
    ) -> None:
        self._builtins = dict(builtins)
        self._functions: dict[str, AgentTool] = {}
        self._enabled_builtins: set[str] = {name for name in enabled if name in self._builtins}

    def add_builtin(self, made: AgentTool, *, enabled: bool) -> None:
        """Offer another built-in (a workspace tool), on or off to begin with."""
        self._builtins[made.name] = made
        if enabled:
            self._enabled_builtins.add(made.name)
        else:
            self._enabled_builtins.discard(made.name)

    def add_function(self, made: AgentTool) -> bool:
        """Register (or replace) a notebook function's tool; True if it replaced one."""
        replaced = made.name in self._functions
        self._functions[made.name] = made
        return replaced

    def enable_builtin(self, name: str) -> None:
        if name not in self._builtins:
            raise KeyError(name)
        self._enabled_builtins.add(name)

    def remove(self, name: str) -> bool:
        """Remove a function tool or disable a built-in; False if neither was active."""
        if name in self._functions:
            del self._functions[name]
            return True
        if name in self._enabled_builtins:
            self._enabled_builtins.discard(name)
            return True
        return False

    def is_builtin(self, name: str) -> bool:
        return name in self._builtins

    def function_tool(self, name: str) -> AgentTool | None:
        return self._functions.get(name)

    def active(self) -> list[AgentTool]:
        """What the agent gets: enabled built-ins, then notebook functions."""
        enabled = [t for n, t in self._builtins.items() if n in self._enabled_builtins]
        return [*enabled, *self._functions.values()]

    def listing(self) -> list[tuple[str, str, bool, str]]:
        """(name, kind, active, description) for every known tool."""
        rows = [
            (name, "built-in", name in self._enabled_builtins, t.description)
            for name, t in self._builtins.items()
        ]
        rows += [(name, "notebook", True, t.description) for name, t in self._functions.items()]
        return rows
