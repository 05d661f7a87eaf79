"""pi-schema's coercion of tool arguments: what the model obviously meant, as the schema asks.

Three passes, as pi-schema runs them: a ``null`` in an optional property whose schema rejects
``null`` is dropped; then TypeBox's conversions by keyword (``const``/``enum`` take the member the
value converts to, unions keep a value a branch accepts or take the first branch's conversion the
union accepts, numeric strings become numbers and integers are truncated, ``"true"``/``"1"``
become booleans, a single value becomes a one-item array …); then Ajv's primitive coercion by
``type`` for what is left (type lists such as ``["integer", "null"]``).
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeGuard

from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from .js_json import js_number

__all__ = ["Coercion", "holds_float", "js_regex", "pattern_matches"]

_Resolver = Any  # referencing's Resolver (not exported by the package)
_Passes = Callable[[Any, _Resolver, Any], bool]
"""Whether a value passes a subschema, in a resolver's scope."""
_ATOMS: Final = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=1024)
def js_regex(pattern: str) -> re.Pattern[str] | None:
    """A JavaScript pattern as a Python regex; ``None`` (keyword ignored) if Python rejects it."""
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    try:
        return re.compile(translated)
    except re.error:
        return None


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether a JavaScript ``pattern`` finds a match in ``text`` (an unreadable one never does)."""
    regex = js_regex(pattern)
    return regex is not None and regex.search(text) is not None


class Coercion:
    """The three passes over one schema; ``passes`` checks a value against a subschema."""

    __slots__ = ("_passes", "_resolver", "_schema")

    def __init__(self, schema: Any, resolver: _Resolver, passes: _Passes) -> None:
        self._schema = schema
        self._resolver = resolver
        self._passes = passes

    def __call__(self, value: Any) -> Any:
        """The coerced value; containers in ``value`` may be changed in place."""
        value = self._drop_optional_nulls(self._schema, self._resolver, value)
        value = self._convert(self._schema, self._resolver, value, ())
        return self._coerce_types(self._schema, self._resolver, value)

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
        properties, patterns, extra = _member_schemas(schema)
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
            for sub in _undeclared_member_schemas(key, properties, patterns, extra):
                value[key] = self._drop_optional_nulls(sub, resolver, value[key])
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
        properties, patterns, extra = _member_schemas(node)
        for key, item in value.items():
            if key in properties:
                item = self._convert(properties[key], resolver, item, entered)
            for sub in _undeclared_member_schemas(key, properties, patterns, extra):
                item = self._convert(sub, resolver, item, entered)
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
            properties, patterns, extra = _member_schemas(schema)
            for key, sub in properties.items():
                if key in value:
                    value[key] = self._coerce_types(sub, resolver, value[key])
            for key in list(value):
                for sub in _undeclared_member_schemas(key, properties, patterns, extra):
                    value[key] = self._coerce_types(sub, resolver, value[key])
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


class _Nothing:
    """No conversion applies (``None`` is a value: JSON ``null``)."""


_NO: Final = _Nothing()


def holds_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        return any(holds_float(item) for item in value.values())
    if kind is list:
        return any(holds_float(item) for item in value)
    return kind not in _ATOMS  # something else: take the full path


def _scope(node: Mapping[str, Any], resolver: _Resolver) -> _Resolver:
    if "$id" in node:
        return resolver.in_subresource(DRAFT202012.create_resource(node))
    return resolver


def _member_schemas(node: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any], Any]:
    """An object schema's ``properties``, ``patternProperties`` and ``additionalProperties``
    (``None`` unless it is a schema)."""
    extra = node.get("additionalProperties")
    return (
        _mapping(node.get("properties")),
        _mapping(node.get("patternProperties")),
        extra if isinstance(extra, Mapping) else None,
    )


def _undeclared_member_schemas(
    key: str, properties: Mapping[str, Any], patterns: Mapping[str, Any], extra: Any
) -> list[Any]:
    """The schemas a member applies beyond ``properties``: those of the patterns its name
    matches, else ``additionalProperties`` (when it is a schema) for a name nothing declares."""
    matching = [sub for pattern, sub in patterns.items() if pattern_matches(pattern, key)]
    if not matching and key not in properties and extra is not None:
        return [extra]
    return matching


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
