"""The ``tool`` decorator: a plain Python function, sync or async, becomes an ``AgentTool``.

::

    @tool
    def add(a: int, b: int = 1) -> int:
        \"\"\"Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        \"\"\"
        return a + b

The JSON schema comes from the type hints (through pydantic: ``Literal``, enums, defaults,
``Optional``, lists, dicts, nested models, ``Annotated[..., Field(description=...)]``), the
description and per-parameter descriptions from the docstring (Google, NumPy or Sphinx style).
Parameters named ``signal`` and ``on_update`` are injected rather than shown to the model:
``signal`` receives the run's ``AbortSignal``, ``on_update`` a callable that reports progress
(any value, converted like a return value, or an ``AgentToolResult``). Before the call the
arguments are parsed into the annotated types (models instantiated, enums converted); a sync
function runs in a worker thread so the event loop never blocks. The return value becomes content
for the model as ``output.to_tool_result`` describes; exceptions propagate (the agent loop
turns them into error results).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import sys
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model

from ..agent.sync_tools import loop_awake, run_sync_tool
from ..agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from ..ai.abort import AbortSignal
from .docstrings import ParsedDocstring, parse_docstring
from .output import DEFAULT_MAX_OUTPUT_CHARS, is_cheap_to_convert, to_tool_result

__all__ = ["INJECTED_PARAMETERS", "FunctionTool", "ToolOptions", "tool"]

INJECTED_PARAMETERS: Final = frozenset({"signal", "on_update"})
"""Parameter names the tool receives from the agent loop instead of from the model."""

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """What was passed to ``tool(...)``; ``None`` means "derive from the function"."""

    name: str | None = None
    description: str | None = None
    label: str | None = None
    execution_mode: Literal["sequential", "parallel"] | None = None
    requires_approval: bool = False
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS


class FunctionTool(AgentTool):
    """An ``AgentTool`` made by ``tool`` from a Python function.

    ``fn`` is the original function (calling the tool calls it directly); ``with_function(new_fn)``
    wraps an updated version with the same options. ``requires_approval`` asks the host (the
    notebook) to confirm each call before it runs; ``max_output_chars`` bounds the text sent to
    the model.
    """

    fn: Callable[..., Any] = Field(exclude=True)
    arguments_model: type[BaseModel] = Field(exclude=True)
    requires_approval: bool = Field(default=False, exclude=True)
    max_output_chars: int | None = Field(default=DEFAULT_MAX_OUTPUT_CHARS, exclude=True)
    options: ToolOptions = Field(default_factory=ToolOptions, exclude=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def with_function(self, fn: Callable[..., Any]) -> FunctionTool:
        """A new tool wrapping ``fn`` with this tool's decorator options (e.g. after a notebook
        cell redefined the function)."""
        return _build(fn, self.options, None)


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: Literal["sequential", "parallel"] | None = None,
    requires_approval: bool = False,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
) -> FunctionTool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: Literal["sequential", "parallel"] | None = None,
    requires_approval: bool = False,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: Literal["sequential", "parallel"] | None = None,
    requires_approval: bool = False,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn ``fn`` into a ``FunctionTool``; usable as ``@tool``, ``@tool(...)`` or ``tool(fn)``.

    ``name`` defaults to the function's name, ``description`` to its docstring's prose, ``label``
    to the name. ``execution_mode="sequential"`` makes every batch containing this tool run one
    call at a time. ``max_output_chars`` (``None``: unbounded) cuts the text the model sees.
    """
    if execution_mode not in (None, "sequential", "parallel"):
        raise ValueError(
            f'execution_mode must be "sequential", "parallel" or None: {execution_mode!r}'
        )
    if max_output_chars is not None and (
        not isinstance(max_output_chars, int) or max_output_chars < 1
    ):
        raise ValueError(f"max_output_chars must be a positive int or None: {max_output_chars!r}")
    options = ToolOptions(
        name, description, label, execution_mode, requires_approval, max_output_chars
    )
    # The caller's namespace resolves string annotations of functions defined in a local scope.
    caller = sys._getframe(1).f_locals
    if fn is None:
        return lambda function: _build(function, options, caller)
    return _build(fn, options, caller)


# --- building the tool ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parameter:
    name: str
    field: str
    """The model's field for it (``p0``, ``p1`` …): parameter names may clash with BaseModel's."""


@dataclass(frozen=True, slots=True)
class _Signature:
    """How to call the function: what the model fills (parsed by ``model``), what is injected,
    and which parameters must be passed by position."""

    parameters: tuple[_Parameter, ...]
    injected: frozenset[str]
    positional: tuple[str, ...]
    model: type[BaseModel]


def _build(
    fn: Callable[..., Any], options: ToolOptions, namespace: Mapping[str, Any] | None
) -> FunctionTool:
    if isinstance(fn, FunctionTool):
        fn = fn.fn
    if isinstance(fn, str):
        raise TypeError(f"tool() takes its options as keywords: @tool(name={fn!r})")
    if inspect.isclass(fn):
        raise TypeError(f"tool() needs a function, not a class: {fn.__qualname__}")
    if not callable(fn):
        raise TypeError(f"tool() needs a function, not {type(fn).__name__}: {fn!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(f"tool() cannot wrap a generator function: {fn!r}")
    name: str = options.name or getattr(fn, "__name__", None) or ""
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"Invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-' (pass name=...)"
        )
    doc = parse_docstring(inspect.getdoc(_unwrap_partial(fn)))
    plan = _plan(fn, name, doc, namespace)
    try:
        schema = _clean_schema(plan.model.model_json_schema(by_alias=True))
    except PydanticUserError as exc:
        raise TypeError(f"Tool {name!r}: a parameter type has no JSON schema: {exc}") from exc
    invoker = _Invoker(fn, name, plan, options.max_output_chars)
    return FunctionTool(
        name=name,
        label=options.label or name,
        description=options.description if options.description is not None else doc.description,
        parameters=schema,
        execute=invoker,
        execution_mode=options.execution_mode,
        fn=fn,
        arguments_model=plan.model,
        requires_approval=options.requires_approval,
        max_output_chars=options.max_output_chars,
        options=options,
    )


def _plan(
    fn: Callable[..., Any],
    name: str,
    doc: ParsedDocstring,
    namespace: Mapping[str, Any] | None,
) -> _Signature:
    """Read the signature: the model's parameters and their pydantic model, the injected ones."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Tool {name!r}: cannot read the signature of {fn!r}: {exc}") from exc
    hints = _type_hints(fn, name, namespace)
    parameters: list[_Parameter] = []
    injected: set[str] = set()
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            star = "*" if parameter.kind == parameter.VAR_POSITIONAL else "**"
            raise TypeError(
                f"Tool {name!r}: {star}{parameter.name} is not supported; a tool's parameters "
                "must all be named"
            )
        if parameter.name in INJECTED_PARAMETERS:
            injected.add(parameter.name)
            continue
        field = f"p{len(parameters)}"
        parameters.append(_Parameter(parameter.name, field))
        annotation = _with_field_info(
            hints.get(parameter.name, Any), parameter.name, doc.params.get(parameter.name)
        )
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[field] = (annotation, default)
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="ignore"), **fields)
    except PydanticUserError as exc:
        raise TypeError(f"Tool {name!r}: unsupported parameter type: {exc}") from exc
    positional = tuple(p.name for p in signature.parameters.values() if p.kind == p.POSITIONAL_ONLY)
    return _Signature(tuple(parameters), frozenset(injected), positional, model)


def _type_hints(
    fn: Callable[..., Any], name: str, namespace: Mapping[str, Any] | None
) -> dict[str, Any]:
    target: Any = _unwrap_partial(fn)
    if not inspect.isroutine(target):
        target = type(target).__call__  # a callable object: its __call__ has the hints
    try:
        return typing.get_type_hints(target, include_extras=True)
    except NameError as exc:
        error: Exception = exc
    except Exception as exc:
        raise TypeError(f"Tool {name!r}: cannot resolve the type hints: {exc}") from exc
    if namespace is not None:  # an annotation naming something local to where ``tool`` was called
        try:
            return typing.get_type_hints(target, localns=dict(namespace), include_extras=True)
        except Exception as exc:
            error = exc
    raise TypeError(f"Tool {name!r}: cannot resolve the type hints: {error}") from error


def _unwrap_partial(fn: Callable[..., Any]) -> Callable[..., Any]:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _with_field_info(annotation: Any, alias: str, description: str | None) -> Any:
    """``annotation`` with a leading ``Field`` naming the parameter (and giving the docstring's
    description); the user's own ``Field`` metadata comes later, so it wins."""
    ours = Field(alias=alias, description=description) if description else Field(alias=alias)
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        return Annotated[(base, ours, *metadata)]
    return Annotated[annotation, ours]


# --- running it ----------------------------------------------------------------------------------


class _Invoker:
    """The ``execute`` of a ``FunctionTool``: parse the arguments, inject ``signal``/``on_update``,
    call the function (a sync one in a worker thread), convert what it returns."""

    __slots__ = ("fn", "is_async", "max_chars", "name", "plan")

    def __init__(
        self, fn: Callable[..., Any], name: str, plan: _Signature, max_chars: int | None
    ) -> None:
        self.fn = fn
        self.name = name
        self.plan = plan
        self.max_chars = max_chars
        self.is_async = inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
        )

    async def __call__(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal | None,
        on_update: ToolUpdateCallback,
    ) -> AgentToolResult:
        values = self.parse(params)
        if "signal" in self.plan.injected:
            values["signal"] = signal if signal is not None else AbortSignal()
        if "on_update" in self.plan.injected:
            values["on_update"] = _ProgressReporter(on_update, self.max_chars)
        args, kwargs = self.arrange(values)
        if self.is_async:
            with loop_awake():  # an interrupt is handled even while a deaf tool awaits
                result = await self.fn(*args, **kwargs)
        else:
            result = await run_sync_tool(self.fn, *args, **kwargs)  # hung ones can't starve it
        if inspect.isawaitable(result):
            result = await result
        if is_cheap_to_convert(result):
            return to_tool_result(result, self.max_chars)
        return await asyncio.to_thread(to_tool_result, result, self.max_chars)

    def parse(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments parsed into the annotated types, by parameter name; defaults filled in."""
        try:
            parsed = self.plan.model.model_validate(params)
        except ValidationError as exc:
            from ..ai.validation import SchemaIssue, ToolArgumentsError  # loads jsonschema

            issues = (
                SchemaIssue(e["type"], tuple(str(part) for part in e["loc"]), e["msg"])
                for e in exc.errors(include_url=False)
            )
            raise ToolArgumentsError(self.name, issues, params) from None
        return {p.name: getattr(parsed, p.field) for p in self.plan.parameters}

    def arrange(self, values: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional-only parameters by position (in signature order), the rest by keyword."""
        return [values.pop(name) for name in self.plan.positional], values


class _ProgressReporter:
    """The ``on_update`` a tool function receives: converts a value like a return value and
    delivers it on the event loop's thread, from whichever thread the tool runs in."""

    __slots__ = ("_loop", "_max_chars", "_on_update", "_thread")

    def __init__(self, on_update: ToolUpdateCallback | None, max_chars: int | None) -> None:
        self._on_update = on_update
        self._max_chars = max_chars
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def __call__(self, value: Any) -> None:
        if self._on_update is None:
            return
        result = (
            value if isinstance(value, AgentToolResult) else to_tool_result(value, self._max_chars)
        )
        if threading.get_ident() == self._thread:
            self._on_update(result)
        else:
            self._loop.call_soon_threadsafe(self._on_update, result)


# --- schema cleanup ------------------------------------------------------------------------------

_SUBSCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMAS: Final = ("items", "additionalProperties", "not", "contains", "propertyNames")


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema made self-contained and quiet: ``$ref``s inlined (``$defs`` kept only
    for recursive models), the generated ``title``s dropped, ``type``/``properties`` first."""
    inlined = _inline_refs(schema)
    _drop_titles(inlined)
    head = {"type": inlined.pop("type", "object"), "properties": inlined.pop("properties", {})}
    return {**head, **inlined}


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: dict[str, Any] = {}

    def resolve(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if name is None or name not in definitions:
            return {key: resolve(value, stack) for key, value in node.items() if key != "$defs"}
        if name in stack:  # recursive: keep the reference, and the definition
            if name not in kept:
                kept[name] = None
                kept[name] = resolve(definitions[name], frozenset({name}))
            return {key: resolve(value, stack) for key, value in node.items()}
        target = resolve(definitions[name], stack | {name})
        siblings = {key: resolve(value, stack) for key, value in node.items() if key != "$ref"}
        return {**target, **siblings}

    result: dict[str, Any] = resolve(schema, frozenset())
    if kept:
        result["$defs"] = kept
    return result


def _drop_titles(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if isinstance(node.get("title"), str):
        del node["title"]
    for key in _SUBSCHEMA_MAPS:
        for sub in (node.get(key) or {}).values():
            _drop_titles(sub)
    for key in _SUBSCHEMA_LISTS:
        for sub in node.get(key) or ():
            _drop_titles(sub)
    for key in _SUBSCHEMAS:
        _drop_titles(node.get(key))
