"""Tool-argument validation as pi 1.6 does it (pi-ai's ``validateToolArguments`` over pi-schema):
coerce what the model obviously meant, check the result against the tool's JSON Schema, and
report failures in pi-schema's words.

``validate_tool_arguments(tool, arguments)`` works on a deep copy and returns the coerced
arguments (the tool receives these; events and messages keep the raw ones). Coercion follows
pi-schema's three passes: a ``null`` in an optional property whose schema rejects ``null`` is
dropped; then TypeBox's conversions by keyword (``const``/``enum`` take the member the value
converts to, unions keep a value a branch accepts or take the first branch's conversion the union
accepts, numeric strings become numbers and integers are truncated, ``"true"``/``"1"`` become
booleans, a single value becomes a one-item array …); then primitive coercion by ``type`` for
what is left (type lists such as ``["integer", "null"]``).

Checking is ``schema_check``: jsonschema for the boolean answer and a walk in pi-schema's order
for the errors. References resolve within the schema only (never fetched); one that names nothing
rejects only the values at its place, as pi compiles tool schemas (``unresolvedRefs: "reject"``).
Compiled validators are cached per schema object, as pi caches per schema.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeGuard

from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ..ai.types import Tool, ToolCall
from .schema_check import (
    KNOWN_TYPES,
    SchemaChecker,
    SchemaIssue,
    explain,
    js_number,
    pattern_matches,
)

__all__ = [
    "SchemaIssue",
    "SchemaValidator",
    "ToolArgumentsError",
    "arguments_error_for",
    "format_arguments",
    "js_number",
    "schema_validator",
    "validate_tool_arguments",
]

_RAW_ARGUMENTS_LIMIT: Final = 2_000
_Resolver = Any  # referencing's Resolver (not exported by the package)


# --- public API ----------------------------------------------------------------------------------


class ToolArgumentsError(ValueError):
    """The arguments of a tool call do not match the tool's schema.

    ``str(error)`` is pi's message: ``Validation failed for tool "<name>":``, one ``  - path:
    message`` line per issue (every issue, as pi-schema reports them), a blank line, ``Received
    arguments:`` and the original arguments as 2-space-indented JSON.
    """

    def __init__(
        self, tool_name: str, issues: Iterable[SchemaIssue], arguments: Mapping[str, Any]
    ) -> None:
        self.tool_name = tool_name
        self.issues = tuple(issues)
        self.arguments = arguments
        lines = "\n".join(f"  - {i.location}: {i.message}" for i in self.issues)
        super().__init__(
            f'Validation failed for tool "{tool_name}":\n{lines or "Unknown validation error"}'
            f"\n\nReceived arguments:\n{format_arguments(arguments)}"
        )


def validate_tool_arguments(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Coerce and check ``arguments`` against ``tool.parameters``; return the coerced copy.

    Raises ``ToolArgumentsError`` (pi's message) when they do not validate, and ``ValueError`` when
    the schema itself cannot be used (a ``type`` that is no JSON type).
    """
    validator = schema_validator(tool.parameters)
    if type(arguments) is dict and not arguments and validator.accepts_empty_object():
        return {}  # a call without arguments, the commonest of all: its answer is known already
    given: Any = arguments
    if isinstance(given, Mapping):
        given = {key: _copy(value) for key, value in given.items()}
    else:
        given = _copy(given)
    valid, coerced = validator.parse(given)
    if not valid:
        raise ToolArgumentsError(tool.name, validator.errors(coerced), arguments)
    return coerced  # type: ignore[no-any-return]


def arguments_error_for(tool_call: ToolCall) -> str | None:
    """The error text for a tool call whose streamed arguments were not a JSON object, else None.

    The agent loop checks this before validation: a call with ``parse_error`` set carries only
    the part of its arguments that could be salvaged, so it must not run.
    """
    if tool_call.parse_error is None:
        return None
    raw = tool_call.raw_arguments or ""
    if len(raw) > _RAW_ARGUMENTS_LIMIT:
        cut = len(raw) - _RAW_ARGUMENTS_LIMIT
        raw = f"{raw[:_RAW_ARGUMENTS_LIMIT]}\n[... {cut} more characters not shown]"
    return (
        f'Invalid arguments for tool "{tool_call.name}": {tool_call.parse_error}'
        f"\n\nReceived arguments:\n{raw}"
    )


def format_arguments(arguments: Any) -> str:
    """Arguments as ``JSON.stringify(value, null, 2)`` prints them (``1.0`` prints as ``1``)."""
    return json.dumps(_js_json_value(arguments), indent=2, ensure_ascii=False, default=repr)


# --- the compiled validator ----------------------------------------------------------------------


class SchemaValidator:
    """A compiled JSON schema: ``coerce`` (pi-schema's coercion), ``errors`` and ``is_valid``.

    Raises ``ValueError`` at construction when a ``type`` is not a JSON type.
    """

    __slots__ = ("_checker", "_checkers", "_empty_object_valid", "_resolver", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        self._resolver: _Resolver = _NO_FETCHING.resolver_with_root(
            DRAFT202012.create_resource(schema)
        )
        _check_types(schema)
        self._checker: Validator = SchemaChecker(
            schema, registry=_NO_FETCHING, format_checker=SchemaChecker.FORMAT_CHECKER
        )
        self._checkers: dict[tuple[int, int], Validator] = {}
        self._empty_object_valid: bool | None = None

    def is_valid(self, value: Any) -> bool:
        return self._checker.is_valid(value)

    def accepts_empty_object(self) -> bool:
        """Whether ``{}`` is valid as it is (checked once: a schema's answer for one value never
        changes). Then no pass of ``parse`` changes ``{}`` either: it holds nothing to coerce."""
        valid = self._empty_object_valid
        if valid is None:
            valid = self._empty_object_valid = bool(self._checker.is_valid({}))
        return valid

    def errors(self, value: Any) -> list[SchemaIssue]:
        """The issues of ``value`` (empty when valid), in pi-schema's order."""
        if self.is_valid(value):
            return []
        return explain(self._checker, self.schema, self._resolver, value)

    def coerce(self, value: Any) -> Any:
        """pi-schema's coercion of ``value``; containers in it may be changed in place."""
        return self.parse(value)[1]

    def parse(self, value: Any) -> tuple[bool, Any]:
        """Coerce ``value``, then check it (pi-schema's ``parse``): whether the result is valid,
        and the result.

        A value that is already valid and holds no float comes back as it is without the three
        passes: none of pi's rules changes such a value (a float may be an integral number an
        ``integer`` schema accepts, which pi truncates to an int)."""
        if not _holds_float(value) and self._checker.is_valid(value):
            return True, value
        value = self._drop_optional_nulls(self.schema, self._resolver, value)
        value = self._convert(self.schema, self._resolver, value, ())
        value = self._coerce_types(self.schema, self._resolver, value)
        return self._checker.is_valid(value), value

    # checks of subschemas, cached per (schema node, scope)

    def _passes(self, node: Any, resolver: _Resolver, value: Any) -> bool:
        key = (id(node), id(resolver))
        checker = self._checkers.get(key)
        if checker is None:
            checker = self._checker.evolve(schema=node, _resolver=resolver)
            self._checkers[key] = checker
        return checker.is_valid(value)

    # pass 1: optional nulls

    def _drop_optional_nulls(self, schema: Any, resolver: _Resolver, value: Any) -> Any:
        if not isinstance(schema, Mapping):
            return value
        resolver = _scope(schema, resolver)
        if isinstance(value, list):
            for index, item in enumerate(value):
                sub = _item_schema(schema, index)
                if sub is not None:
                    value[index] = self._drop_optional_nulls(sub, resolver, item)
            return value
        if not isinstance(value, dict):
            return value
        properties = _mapping(schema.get("properties"))
        patterns = _mapping(schema.get("patternProperties"))
        extra = schema.get("additionalProperties")
        extra = extra if isinstance(extra, Mapping) else None
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        for key, sub in properties.items():
            if key not in value:
                continue
            is_ref = isinstance(sub, Mapping) and isinstance(sub.get("$ref"), str)
            if (
                value[key] is None
                and key not in required
                and not is_ref
                and not self._passes(sub, resolver, None)
            ):
                del value[key]
                continue
            value[key] = self._drop_optional_nulls(sub, resolver, value[key])
        for key in list(value):
            matched = key in properties
            for pattern, sub in patterns.items():
                if pattern_matches(pattern, key):
                    matched = True
                    value[key] = self._drop_optional_nulls(sub, resolver, value[key])
            if not matched and extra is not None:
                value[key] = self._drop_optional_nulls(extra, resolver, value[key])
        return value

    # pass 2: TypeBox's conversions

    def _convert(self, node: Any, resolver: _Resolver, value: Any, entered: _Entered) -> Any:
        if not isinstance(node, Mapping):
            return value
        resolver = _scope(node, resolver)
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable:
                return value
            return self._reenter(resolved.contents, resolved.resolver, value, entered)
        if "const" in node:
            return _convert_literal(node["const"], value)
        if isinstance(node.get("enum"), list):
            return self._convert_enum(node, resolver, value)
        for keyword in ("anyOf", "oneOf"):
            if isinstance(node.get(keyword), list):
                return self._convert_union(node, node[keyword], resolver, value, entered)
        if isinstance(node.get("allOf"), list):
            for member in node["allOf"]:
                value = self._convert(member, resolver, value, entered)
            return self._convert_members(node, resolver, value, entered)
        kind = node.get("type")
        if kind == "integer":
            number = _try_number(value)
            return value if number is _NO else _truncate(number)
        convert = _CONVERSIONS.get(kind) if isinstance(kind, str) else None
        if convert is not None:
            result = convert(value)
            return value if result is _NO else result
        if kind == "array" or (
            kind is None
            and "properties" not in node
            and "patternProperties" not in node
            and ("items" in node or "prefixItems" in node)
        ):
            return self._convert_array(node, resolver, value, entered)
        if kind == "object" or (
            kind is None and ("properties" in node or "patternProperties" in node)
        ):
            return self._convert_object(node, resolver, value, entered)
        return value

    def _reenter(self, node: Any, resolver: _Resolver, value: Any, entered: _Entered) -> Any:
        """Convert through a re-entry point (a ``$ref``, a wrapped item), unless this very pair of
        schema and value is already being converted (a recursive schema would never end)."""
        mark = (id(node), id(value) if isinstance(value, dict | list) else repr(value))
        if mark in entered:
            return value
        return self._convert(node, resolver, value, (*entered, mark))

    def _convert_enum(self, node: Mapping[str, Any], resolver: _Resolver, value: Any) -> Any:
        members = node["enum"]
        if any(_same(member, value) for member in members):
            return value
        for member in members:
            candidate = _convert_literal(member, value)
            if candidate is not value and self._passes(node, resolver, candidate):
                return candidate
        return value

    def _convert_union(
        self,
        node: Mapping[str, Any],
        branches: list[Any],
        resolver: _Resolver,
        value: Any,
        entered: _Entered,
    ) -> Any:
        if any(self._passes(branch, resolver, value) for branch in branches):
            return self._convert_members(node, resolver, value, entered)
        for branch in branches:
            candidate = self._convert(branch, resolver, copy.deepcopy(value), entered)
            candidate = self._convert_members(node, resolver, candidate, entered)
            if self._passes(node, resolver, candidate):
                return candidate
        return self._convert_members(node, resolver, value, entered)

    def _convert_members(
        self, node: Mapping[str, Any], resolver: _Resolver, value: Any, entered: _Entered
    ) -> Any:
        declares = any(
            k in node for k in ("properties", "patternProperties", "additionalProperties")
        )
        return self._convert_object(node, resolver, value, entered) if declares else value

    def _convert_array(
        self, node: Mapping[str, Any], resolver: _Resolver, value: Any, entered: _Entered
    ) -> Any:
        items = node.get("items")
        prefix = items if isinstance(items, list) else node.get("prefixItems")
        if isinstance(prefix, list):  # a tuple converts its items and never wraps
            if not isinstance(value, list):
                return value
            rest = None if isinstance(items, list) else items
            for index, item in enumerate(value):
                sub = prefix[index] if index < len(prefix) else rest
                if sub is not None:
                    value[index] = self._convert(sub, resolver, item, entered)
            return value
        if isinstance(value, list):
            if items is not None:
                value[:] = [self._convert(items, resolver, item, entered) for item in value]
            return value
        if isinstance(items, Mapping):
            return [self._reenter(items, resolver, value, entered)]
        return [value]

    def _convert_object(
        self, node: Mapping[str, Any], resolver: _Resolver, value: Any, entered: _Entered
    ) -> Any:
        if not isinstance(value, dict):
            return value
        properties = _mapping(node.get("properties"))
        patterns = _mapping(node.get("patternProperties"))
        extra = node.get("additionalProperties")
        extra = extra if isinstance(extra, Mapping) else None
        for key, item in value.items():
            matched = key in properties
            if matched:
                item = self._convert(properties[key], resolver, item, entered)
            for pattern, sub in patterns.items():
                if pattern_matches(pattern, key):
                    matched = True
                    item = self._convert(sub, resolver, item, entered)
            if not matched and extra is not None:
                item = self._convert(extra, resolver, item, entered)
            value[key] = item
        return value

    # pass 3: primitive coercion by type

    def _coerce_types(self, schema: Any, resolver: _Resolver, value: Any) -> Any:
        if not isinstance(schema, Mapping):
            return value
        resolver = _scope(schema, resolver)
        if isinstance(schema.get("allOf"), list):
            for member in schema["allOf"]:
                value = self._coerce_types(member, resolver, value)
        for keyword in ("anyOf", "oneOf"):
            if isinstance(schema.get(keyword), list):
                value = self._coerce_union(schema[keyword], resolver, value)
        types = _types(schema.get("type"))
        if types and not (len(types) > 1 and any(_matches(value, kind) for kind in types)):
            for kind in types:
                candidate = _coerce_primitive(value, kind)
                if candidate is not value:
                    value = candidate
                    break
        if "object" in types and isinstance(value, dict):
            properties = _mapping(schema.get("properties"))
            patterns = _mapping(schema.get("patternProperties"))
            extra = schema.get("additionalProperties")
            extra = extra if isinstance(extra, Mapping) else None
            for key, sub in properties.items():
                if key in value:
                    value[key] = self._coerce_types(sub, resolver, value[key])
            for key in list(value):
                matched = key in properties
                for pattern, sub in patterns.items():
                    if pattern_matches(pattern, key):
                        matched = True
                        value[key] = self._coerce_types(sub, resolver, value[key])
                if not matched and extra is not None:
                    value[key] = self._coerce_types(extra, resolver, value[key])
        if "array" in types and isinstance(value, list):
            for index, item in enumerate(value):
                sub = _item_schema(schema, index)
                if isinstance(sub, Mapping):
                    value[index] = self._coerce_types(sub, resolver, item)
        return value

    def _coerce_union(self, branches: list[Any], resolver: _Resolver, value: Any) -> Any:
        if any(self._passes(branch, resolver, value) for branch in branches):
            return value
        for branch in branches:
            candidate = self._coerce_types(branch, resolver, copy.deepcopy(value))
            if self._passes(branch, resolver, candidate):
                return candidate
        return value


_Entered = tuple[tuple[int, Any], ...]
_NO_FETCHING: Final[Registry[Any]] = Registry()
"""References resolve within the schema; anything else rejects its values, never a download."""

# Keywords whose values are data, not schemas.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples", "required"})


def _check_types(schema: Any) -> None:
    """Read every ``type`` now, so a broken schema is a clear error before any call."""
    stack: list[Any] = [schema]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        kind = node.get("type")
        for name in [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else ():
            if name not in KNOWN_TYPES:
                raise ValueError(f"Unknown type {name!r} in the parameter schema")
        stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)


_CACHE_SIZE: Final = 512
_cache: OrderedDict[int, SchemaValidator] = OrderedDict()
_cache_lock = threading.Lock()


def schema_validator(schema: Mapping[str, Any]) -> SchemaValidator:
    """The compiled validator of ``schema``, cached per schema object (LRU of 512).

    The cache holds the schema itself, so an id is never reused while its entry lives; a schema
    dict that is changed after its first use keeps its old validator.
    """
    key = id(schema)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None and cached.schema is schema:
            _cache.move_to_end(key)
            return cached
    validator = SchemaValidator(schema)
    with _cache_lock:
        _cache[key] = validator
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return validator


# --- helpers -------------------------------------------------------------------------------------

_ATOMS: Final = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, atoms) without ``copy.deepcopy``'s memo, which
    costs more than the copying; anything else is handed to ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return copy.deepcopy(value)


class _Nothing:
    """No conversion applies (``None`` is a value: JSON ``null``)."""


_NO: Final = _Nothing()


def _holds_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        return any(_holds_float(item) for item in value.values())
    if kind is list:
        return any(_holds_float(item) for item in value)
    return kind not in _ATOMS  # something else: take the full path


def _scope(node: Mapping[str, Any], resolver: _Resolver) -> _Resolver:
    if "$id" in node:
        return resolver.in_subresource(DRAFT202012.create_resource(node))
    return resolver


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _item_schema(schema: Mapping[str, Any], index: int) -> Any:
    items = schema.get("items")
    if isinstance(items, list):
        return items[index] if index < len(items) else None
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return items


def _types(kind: Any) -> tuple[str, ...]:
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list):
        return tuple(k for k in kind if isinstance(k, str))
    return ()


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    """JavaScript's ``===`` for JSON atoms (``true`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b if not isinstance(a, dict | list) else a is b


def _truncate(number: Any) -> Any:
    return math.trunc(number) if _finite(number) else number


# JavaScript's Number(text) for the texts a model plausibly sends: decimal and 0x/0o/0b literals.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def _js_number_of(text: str) -> int | float | None:
    """``Number(text)`` when it is finite (``""`` and blanks are 0), else ``None``."""
    stripped = text.strip()
    if not stripped:
        return 0
    if _RADIX.fullmatch(stripped):
        return int(stripped, 0)
    if not _DECIMAL.fullmatch(stripped):
        return None
    number = float(stripped)
    if not math.isfinite(number):
        return None
    if number.is_integer() and not any(c in stripped for c in ".eE"):
        return int(stripped)
    return int(number) if number.is_integer() else number


def _try_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if _finite(value):
        return js_number(value)
    if value is None:
        return "null"
    return value if isinstance(value, str) else _NO


def _try_number(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if _finite(value):
        return value
    if value is None:
        return 0
    if not isinstance(value, str):
        return _NO
    number = _js_number_of(value)
    if number is not None:
        return number
    lowered = value.lower()
    if lowered in ("true", "false"):
        return int(lowered == "true")
    match = re.fullmatch(r"(-?(?:0|[1-9]\d*))(?:n|\.\d+)?", value)
    return int(match.group(1)) if match else _NO


def _try_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if _finite(value):
        return {0: False, 1: True}.get(value, _NO)
    if value is None:
        return False
    if not isinstance(value, str):
        return _NO
    lowered = value.lower()
    if lowered == "false" or value == "0":
        return False
    if lowered == "true" or value == "1":
        return True
    return _NO


def _try_null(value: Any) -> Any:
    if value is None or value is False or (_finite(value) and value == 0):
        return None
    if isinstance(value, str) and (value.lower() in ("undefined", "null") or value in ("", "0")):
        return None
    return _NO


_CONVERSIONS: Final[dict[str, Callable[[Any], Any]]] = {
    "string": _try_string,
    "number": _try_number,
    "boolean": _try_boolean,
    "null": _try_null,
}


def _convert_literal(literal: Any, value: Any) -> Any:
    """A ``const``/``enum`` member taken from a value of another type that converts to it."""
    if _same(literal, value):
        return value
    if isinstance(literal, bool):
        result = _try_boolean(value)
    elif isinstance(literal, str):
        result = _try_string(value)
    elif _is_number(literal):
        result = _try_number(value)
    else:
        return value
    return result if result is not _NO and _same(result, literal) else value


def _matches(value: Any, kind: str) -> bool:
    if kind == "number":
        return _finite(value)
    if kind == "integer":
        return _finite(value) and float(value).is_integer()
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _coerce_primitive(value: Any, kind: str) -> Any:
    """Ajv's ``coerceTypes`` step: ``value`` as JSON type ``kind``, or ``value`` itself."""
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and value.strip():
            number = _js_number_of(value)
            if number is not None and (kind == "number" or float(number).is_integer()):
                return int(number) if float(number).is_integer() else number
        if isinstance(value, bool):
            return int(value)
    elif kind == "boolean":
        if value is None:
            return False
        if value == "true" or (_is_number(value) and value == 1):
            return True
        if value == "false" or (_is_number(value) and value == 0):
            return False
    elif kind == "string":
        if value is None:
            return ""
        if isinstance(value, bool | int | float):
            return _try_string(value) if isinstance(value, bool) or _finite(value) else value
    elif kind == "null" and (value == "" or value is False or (_is_number(value) and value == 0)):
        return None
    return value


def _js_json_value(value: Any) -> Any:
    """``value`` with floats as JavaScript would print them in JSON (integral → int, NaN → null)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, Mapping):
        return {str(k): _js_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_json_value(v) for v in value]
    return value
