"""Tool-argument validation as pi does it: coerce what the model obviously meant, check the result
against the tool's JSON Schema, and report failures in pi's (TypeBox's) words.

``validate_tool_arguments(tool, arguments)`` works on a deep copy and returns the coerced
arguments (the tool receives these; events and messages keep the raw ones). Coercion follows pi:
numeric strings become numbers, numbers and booleans become strings, ``null`` becomes ``"null"``,
``0`` or ``false`` where that type is expected, ``"true"``/``"false"``/``1``/``0`` become booleans,
``""``/``0``/``false`` become ``null`` for null types, and unions take the first member that
validates after coercion. One deliberate difference: a value that already satisfies some member of
a union is left alone (pi would turn ``null`` in ``int | None`` into ``0``).

Checking is ``jsonschema``, adapted to TypeBox's order and words in ``schema_check``, as pi
delegates checking to its schema library and keeps only coercion. References are resolved within
the schema only (never fetched) and checked when a schema is first compiled; compiled validators
are cached per schema object, as pi caches per schema.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ..ai.types import Tool, ToolCall
from .schema_check import (
    KNOWN_TYPES,
    SchemaIssue,
    TypeBoxValidator,
    issues,
    js_number,
    pattern_matches,
)

__all__ = [
    "MAX_ERRORS",
    "SchemaIssue",
    "SchemaValidator",
    "ToolArgumentsError",
    "arguments_error_for",
    "format_arguments",
    "js_number",
    "schema_validator",
    "validate_tool_arguments",
]

MAX_ERRORS: Final = 8
"""At most this many errors are reported for one value (TypeBox's default)."""

_RAW_ARGUMENTS_LIMIT: Final = 2_000
_Resolver = Any  # referencing's Resolver (not exported by the package)


# --- public API ----------------------------------------------------------------------------------


class ToolArgumentsError(ValueError):
    """The arguments of a tool call do not match the tool's schema.

    ``str(error)`` is pi's message: ``Validation failed for tool "<name>":``, one ``  - path:
    message`` line per issue, a blank line, ``Received arguments:`` and the original arguments as
    2-space-indented JSON.
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
    the schema itself cannot be used (an unresolvable ``$ref``).
    """
    validator = schema_validator(tool.parameters)
    coerced = validator.coerce({key: _copy(value) for key, value in arguments.items()})
    if not validator.is_valid(coerced):
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
    """A compiled JSON schema: ``coerce`` (pi's coercion), ``errors`` and ``is_valid``.

    Raises ``ValueError`` at construction when a ``$ref`` does not resolve within the schema or a
    ``type`` is not a JSON type.
    """

    __slots__ = ("_checker", "_members", "_refs", "_resolver", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        self._resolver: _Resolver = _NO_FETCHING.resolver_with_root(
            DRAFT202012.create_resource(schema)
        )
        self._refs: dict[int, tuple[Any, _Resolver]] = {}
        self._members: dict[int, Validator] = {}
        _check_schema(schema, self._resolver, self._refs)
        self._checker: Validator = TypeBoxValidator(schema, registry=_NO_FETCHING)

    def is_valid(self, value: Any) -> bool:
        return self._checker.is_valid(value)

    def errors(self, value: Any, limit: int = MAX_ERRORS) -> list[SchemaIssue]:
        """The issues of ``value`` (empty when valid), in TypeBox's order, at most ``limit``."""
        return issues(self._checker.iter_errors(value), limit)

    def coerce(self, value: Any) -> Any:
        """pi's coercion; containers in ``value`` may be changed in place. Returns the result."""
        return self._coerce(self.schema, value, self._resolver)

    def _coerce(self, schema: Any, value: Any, resolver: _Resolver) -> Any:
        if not isinstance(schema, Mapping):
            return value
        if "$id" in schema:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(schema))
        if isinstance(schema.get("$ref"), str):
            target, target_resolver = self._refs[id(schema)]
            value = self._coerce(target, value, target_resolver)
        for member in _members(schema, "allOf"):
            value = self._coerce(member, value, resolver)
        for keyword in ("anyOf", "oneOf"):
            if members := _members(schema, keyword):
                value = self._coerce_union(members, value, resolver)
        types = _types(schema.get("type"))
        if types:
            value = _coerce_to_types(value, types)
        if isinstance(value, dict) and (not types or "object" in types):
            self._coerce_properties(schema, value, resolver)
        if isinstance(value, list) and (not types or "array" in types):
            self._coerce_items(schema, value, resolver)
        return value

    def _coerce_properties(
        self, schema: Mapping[str, Any], value: dict[str, Any], resolver: _Resolver
    ) -> None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, Mapping) else {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                sub = next((s for p, s in patterns.items() if pattern_matches(p, key)), extra)
            if sub is not None:
                value[key] = self._coerce(sub, item, resolver)

    def _coerce_items(self, schema: Mapping[str, Any], value: list[Any], resolver: Any) -> None:
        items = schema.get("items")
        if isinstance(items, list):  # draft-04's tuple form
            prefix, rest = items, schema.get("additionalItems")
        else:
            prefix, rest = _members(schema, "prefixItems"), items
        for index, item in enumerate(value):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is not None:
                value[index] = self._coerce(sub, item, resolver)

    def _coerce_union(self, members: list[Any], value: Any, resolver: _Resolver) -> Any:
        checkers = [self._member(member, resolver) for member in members]
        if any(checker.is_valid(value) for checker in checkers):
            return value
        for member, checker in zip(members, checkers, strict=True):
            candidate = self._coerce(member, copy.deepcopy(value), resolver)
            if checker.is_valid(candidate):
                return candidate
        return value

    def _member(self, member: Any, resolver: _Resolver) -> Validator:
        checker = self._members.get(id(member))
        if checker is None:
            checker = self._checker.evolve(schema=member, _resolver=resolver)
            self._members[id(member)] = checker
        return checker


_NO_FETCHING: Final[Registry[Any]] = Registry()
"""References resolve within the schema; anything else is an error, never a download."""

# Keywords whose values are data, not schemas: a ``$ref`` key inside them is not a reference.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples", "required"})


def _check_schema(
    schema: Any, resolver: _Resolver, found: dict[int, tuple[Any, _Resolver]]
) -> None:
    """Resolve every ``$ref`` in ``schema`` and read every ``type`` now, so a broken schema is a
    clear error before any arguments are checked; ``found`` keeps each reference's target by the
    id of the schema holding it."""
    stack: list[tuple[Any, _Resolver]] = [(schema, resolver)]
    seen: set[int] = set()
    while stack:
        node, scope = stack.pop()
        if isinstance(node, list):
            stack.extend((item, scope) for item in node)
            continue
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        if "$id" in node:
            scope = scope.in_subresource(DRAFT202012.create_resource(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            found[id(node)] = _resolve(ref, scope)
        kind = node.get("type")
        for name in [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else ():
            if name not in KNOWN_TYPES:
                raise ValueError(f"Unknown type {name!r} in the parameter schema")
        stack.extend((v, scope) for k, v in node.items() if k not in _DATA_KEYWORDS)


def _resolve(ref: str, scope: _Resolver) -> tuple[Any, _Resolver]:
    try:
        resolved = scope.lookup(ref)
    except Unresolvable:
        if ref.startswith("#"):
            raise ValueError(f'Cannot resolve "$ref": "{ref}" in the parameter schema') from None
        raise ValueError(f'Cannot resolve "$ref": "{ref}" (only local references work)') from None
    return resolved.contents, resolved.resolver


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


def _members(schema: Mapping[str, Any], keyword: str) -> list[Any]:
    members = schema.get(keyword)
    return members if isinstance(members, list) else []


def _types(kind: Any) -> tuple[str, ...]:
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return tuple(kind)
    return ()


def _matches_any(value: Any, types: tuple[str, ...]) -> bool:
    checker = TypeBoxValidator.TYPE_CHECKER
    return any(kind in KNOWN_TYPES and checker.is_type(value, kind) for kind in types)


# JavaScript's Number(text) for the texts a model plausibly sends: decimal and 0x/0o/0b literals.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def _parse_number(text: str) -> int | float | None:
    stripped = text.strip()
    if _RADIX.fullmatch(stripped):
        return int(stripped, 0)
    if not _DECIMAL.fullmatch(stripped):
        return None
    number = float(stripped)
    if not math.isfinite(number):
        return None
    if number.is_integer() and not any(c in stripped for c in ".eE"):
        return int(stripped)
    return number


def _coerce_primitive(value: Any, kind: str) -> Any:
    """``value`` converted to JSON type ``kind`` when pi would convert it; else ``value`` itself."""
    if kind == "string":
        if value is None:
            return "null"
        if isinstance(value, bool | int | float):
            return js_number(value)
    elif kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, bool):
            return int(value)
        number = _parse_number(value) if isinstance(value, str) else value
        if kind == "integer" and isinstance(number, float):
            return int(number) if number.is_integer() else value
        if isinstance(number, int | float) and number is not value:
            return number
    elif kind == "boolean":
        if value is None:
            return False
        if value in ("true", "false"):
            return value == "true"
        if isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1):
            return value == 1
    elif kind == "null" and (value == "" or value is False or _is_zero(value)):
        return None
    return value


def _is_zero(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _coerce_to_types(value: Any, types: tuple[str, ...]) -> Any:
    """pi's rule for ``type``: keep a value matching one of several types; otherwise take the first
    type whose conversion changes it. Integral floats for an integer type become ints."""
    if len(types) > 1 and _matches_any(value, types):
        if "integer" in types and isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    for kind in types:
        candidate = _coerce_primitive(value, kind)
        if candidate is not value:
            return candidate
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
