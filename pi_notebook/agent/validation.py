"""Tool-argument validation as pi does it: coerce what the model obviously meant, check the result
against the tool's JSON Schema, and report failures in pi's (TypeBox's) words.

``validate_tool_arguments(tool, arguments)`` works on a deep copy and returns the coerced
arguments (the tool receives these; events and messages keep the raw ones). Coercion follows pi:
numeric strings become numbers, numbers and booleans become strings, ``null`` becomes ``"null"``,
``0`` or ``false`` where that type is expected, ``"true"``/``"false"``/``1``/``0`` become booleans,
``""``/``0``/``false`` become ``null`` for null types, and unions take the first member that
validates after coercion. One deliberate difference: a value that already satisfies some member of
a union is left alone (pi would turn ``null`` in ``int | None`` into ``0``).

The checker is a small JSON-Schema validator covering what tool schemas use (type, properties,
required, additionalProperties, patternProperties, items, prefixItems, enum, const, numeric and
length bounds, pattern, uniqueItems, anyOf/oneOf/allOf/not, ``$ref`` into ``$defs``/``definitions``;
``format`` is ignored). Compiled validators are cached per schema object, as pi caches per schema.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final
from urllib.parse import unquote

from ..ai.types import Tool, ToolCall

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


# --- public API ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """One validation failure: the keyword that failed, where, and pi's message for it."""

    keyword: str
    path: tuple[str, ...]
    message: str
    missing: tuple[str, ...] = ()
    """For ``required``: the missing property names."""

    @property
    def location(self) -> str:
        """pi's rendering of the path: ``a.0.b``; for ``required`` the first missing property is
        appended; ``root`` for the top level."""
        parts = [_escape_pointer(p) for p in self.path]
        if self.keyword == "required" and self.missing:
            parts.append(self.missing[0])
        return ".".join(parts) or "root"


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
    issues = validator.errors(coerced)
    if issues:
        raise ToolArgumentsError(tool.name, issues, arguments)
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


def js_number(value: float) -> str:
    """A number spelled as JavaScript's ``String(n)`` spells it: ``1``, ``0.5``, ``1e+21``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if -7 < power < 21:
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


# --- the validator -------------------------------------------------------------------------------

_TYPE_TESTS: Final[dict[str, Callable[[Any], bool]]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class _Node:
    """One compiled schema: the keywords it uses, with sub-schemas compiled too."""

    __slots__ = (
        "additional",
        "all_of",
        "any_of",
        "const",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "fixed",
        "has_const",
        "items",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "negated",
        "one_of",
        "pattern",
        "pattern_properties",
        "prefix_items",
        "properties",
        "ref",
        "required",
        "type_message",
        "types",
        "unique_items",
    )

    def __init__(self) -> None:
        self.fixed: bool | None = None  # a boolean schema (``true`` / ``false``)
        self.types: tuple[str, ...] | None = None
        self.type_message = ""
        self.required: tuple[str, ...] = ()
        self.properties: dict[str, _Node] = {}
        self.additional: _Node | None = None
        self.pattern_properties: tuple[tuple[re.Pattern[str], _Node], ...] = ()
        self.min_properties: float | None = None
        self.max_properties: float | None = None
        self.items: _Node | None = None
        self.prefix_items: tuple[_Node, ...] = ()
        self.min_items: float | None = None
        self.max_items: float | None = None
        self.unique_items = False
        self.min_length: float | None = None
        self.max_length: float | None = None
        self.pattern: tuple[re.Pattern[str], str] | None = None
        self.minimum: float | None = None
        self.maximum: float | None = None
        self.exclusive_minimum: float | None = None
        self.exclusive_maximum: float | None = None
        self.multiple_of: float | None = None
        self.ref: _Node | None = None
        self.has_const = False
        self.const: Any = None
        self.enum: tuple[Any, ...] | None = None
        self.negated: _Node | None = None
        self.all_of: tuple[_Node, ...] = ()
        self.any_of: tuple[_Node, ...] = ()
        self.one_of: tuple[_Node, ...] = ()


class _Compiler:
    """Turns a schema (and every schema it references) into ``_Node`` trees, once per sub-schema."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.memo: dict[int, _Node] = {}

    def compile(self, schema: Any) -> _Node:
        key = id(schema)
        node = self.memo.get(key)
        if node is not None:
            return node
        node = _Node()
        self.memo[key] = node  # before recursing: recursive ``$ref``s find it
        if isinstance(schema, bool):
            node.fixed = schema
        elif isinstance(schema, Mapping):
            self._fill(node, schema)
        else:
            raise ValueError(f"Invalid JSON schema: expected an object or a boolean: {schema!r}")
        return node

    def _fill(self, node: _Node, s: Mapping[str, Any]) -> None:
        kind = s.get("type")
        if isinstance(kind, str):
            node.types, node.type_message = (kind,), f"must be {kind}"
        elif isinstance(kind, list) and all(isinstance(k, str) for k in kind):
            node.types = tuple(kind)
            node.type_message = f"must be either {' or '.join(kind)}"
        required = s.get("required")
        if isinstance(required, list):
            node.required = tuple(r for r in required if isinstance(r, str))
        properties = s.get("properties")
        if isinstance(properties, Mapping):
            node.properties = {k: self.compile(v) for k, v in properties.items()}
        additional = s.get("additionalProperties")
        if isinstance(additional, bool | Mapping):
            node.additional = self.compile(additional)
        patterns = s.get("patternProperties")
        if isinstance(patterns, Mapping):
            node.pattern_properties = tuple(
                (regex, self.compile(sub))
                for pattern, sub in patterns.items()
                if (regex := _regex(pattern)) is not None
            )
        items = s.get("items")
        prefix = s.get("prefixItems")
        if isinstance(items, list):  # draft-04 tuple form
            node.prefix_items = tuple(self.compile(i) for i in items)
            extra = s.get("additionalItems")
            if isinstance(extra, bool | Mapping):
                node.items = self.compile(extra)
        else:
            if isinstance(items, bool | Mapping):
                node.items = self.compile(items)
            if isinstance(prefix, list):
                node.prefix_items = tuple(self.compile(i) for i in prefix)
        node.unique_items = s.get("uniqueItems") is True
        node.min_properties = _number(s.get("minProperties"))
        node.max_properties = _number(s.get("maxProperties"))
        node.min_items = _number(s.get("minItems"))
        node.max_items = _number(s.get("maxItems"))
        node.min_length = _number(s.get("minLength"))
        node.max_length = _number(s.get("maxLength"))
        pattern = s.get("pattern")
        if isinstance(pattern, str) and (regex := _regex(pattern)) is not None:
            node.pattern = (regex, pattern)
        node.minimum = _number(s.get("minimum"))
        node.maximum = _number(s.get("maximum"))
        node.exclusive_minimum = _number(s.get("exclusiveMinimum"))
        node.exclusive_maximum = _number(s.get("exclusiveMaximum"))
        if s.get("exclusiveMinimum") is True:  # draft-04 spelling
            node.exclusive_minimum, node.minimum = node.minimum, None
        if s.get("exclusiveMaximum") is True:
            node.exclusive_maximum, node.maximum = node.maximum, None
        node.multiple_of = _number(s.get("multipleOf"))
        ref = s.get("$ref")
        if isinstance(ref, str):
            node.ref = self.compile(self._resolve(ref))
        if "const" in s:
            node.has_const, node.const = True, s["const"]
        enum = s.get("enum")
        if isinstance(enum, list):
            node.enum = tuple(enum)
        negated = s.get("not")
        if isinstance(negated, bool | Mapping):
            node.negated = self.compile(negated)
        for keyword, attribute in (("allOf", "all_of"), ("anyOf", "any_of"), ("oneOf", "one_of")):
            members = s.get(keyword)
            if isinstance(members, list):
                setattr(node, attribute, tuple(self.compile(m) for m in members))

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise ValueError(f'Cannot resolve "$ref": "{ref}" (only local references work)')
        target: Any = self.root
        for part in filter(None, unquote(ref[1:]).split("/")):
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and key in target:
                target = target[key]
            elif isinstance(target, list) and key.isdigit() and int(key) < len(target):
                target = target[int(key)]
            else:
                raise ValueError(f'Cannot resolve "$ref": "{ref}" in the parameter schema')
        return target


class _Errors:
    """Issues found so far, up to a limit; validation stops once the limit is reached."""

    __slots__ = ("issues", "limit")

    def __init__(self, limit: int) -> None:
        self.issues: list[SchemaIssue] = []
        self.limit = limit

    @property
    def full(self) -> bool:
        return len(self.issues) >= self.limit

    def add(
        self, keyword: str, path: tuple[str, ...], message: str, missing: tuple[str, ...] = ()
    ) -> bool:
        if not self.full:
            self.issues.append(SchemaIssue(keyword, path, message, missing))
        return False

    def extend(self, issues: Iterable[SchemaIssue]) -> None:
        for issue in issues:
            if self.full:
                return
            self.issues.append(issue)


class SchemaValidator:
    """A compiled JSON schema: ``coerce`` (pi's coercion), ``errors`` and ``is_valid``."""

    __slots__ = ("_root", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        root = schema if isinstance(schema, Mapping) else {}
        self._root = _Compiler(root).compile(schema)

    def is_valid(self, value: Any) -> bool:
        return self._check(self._root, value, (), _Errors(1))

    def errors(self, value: Any, limit: int = MAX_ERRORS) -> list[SchemaIssue]:
        """The issues of ``value`` (empty when valid), in TypeBox's order, at most ``limit``."""
        found = _Errors(limit)
        self._check(self._root, value, (), found)
        return found.issues

    def coerce(self, value: Any) -> Any:
        """pi's coercion; containers in ``value`` may be changed in place. Returns the result."""
        return self._coerce(self._root, value)

    # --- checking --------------------------------------------------------------------------------

    def _valid(self, node: _Node, value: Any) -> bool:
        return self._check(node, value, (), _Errors(1))

    def _check(self, node: _Node, value: Any, path: tuple[str, ...], out: _Errors) -> bool:
        if out.full:
            return False
        if node.fixed is not None:
            return node.fixed or out.add("false", path, "schema is false")
        ok = True
        if node.types is not None and not _matches_any(value, node.types):
            ok = out.add("type", path, node.type_message)
        if isinstance(value, dict):
            ok = self._check_object(node, value, path, out) and ok
        elif isinstance(value, list | tuple):
            ok = self._check_array(node, value, path, out) and ok
        elif isinstance(value, str):
            ok = _check_string(node, value, path, out) and ok
        elif isinstance(value, int | float) and not isinstance(value, bool):
            ok = _check_number(node, value, path, out) and ok
        return self._check_logic(node, value, path, out) and ok

    def _check_object(
        self, node: _Node, value: dict[str, Any], path: tuple[str, ...], out: _Errors
    ) -> bool:
        ok = True
        missing = tuple(name for name in node.required if name not in value)
        if missing:
            message = f"must have required properties {', '.join(missing)}"
            ok = out.add("required", path, message, missing)
        if node.additional is not None:
            failed = False
            for key, item in value.items():
                if key in node.properties or any(r.search(key) for r, _ in node.pattern_properties):
                    continue
                if not self._check(node.additional, item, (*path, key), out):
                    failed = True
            if failed:
                ok = out.add("additionalProperties", path, "must not have additional properties")
        for regex, sub in node.pattern_properties:
            for key, item in value.items():
                if regex.search(key):
                    ok = self._check(sub, item, (*path, key), out) and ok
        for key, sub in node.properties.items():
            if key in value:
                ok = self._check(sub, value[key], (*path, key), out) and ok
        count = len(value)
        if node.min_properties is not None and count < node.min_properties:
            limit = js_number(node.min_properties)
            ok = out.add("minProperties", path, f"must not have fewer than {limit} properties")
        if node.max_properties is not None and count > node.max_properties:
            limit = js_number(node.max_properties)
            ok = out.add("maxProperties", path, f"must not have more than {limit} properties")
        return ok

    def _check_array(
        self, node: _Node, value: list[Any] | tuple[Any, ...], path: tuple[str, ...], out: _Errors
    ) -> bool:
        ok = True
        if node.items is not None:
            for index in range(len(node.prefix_items), len(value)):
                ok = self._check(node.items, value[index], (*path, str(index)), out) and ok
        if node.min_items is not None and len(value) < node.min_items:
            limit = js_number(node.min_items)
            ok = out.add("minItems", path, f"must not have fewer than {limit} items")
        if node.max_items is not None and len(value) > node.max_items:
            limit = js_number(node.max_items)
            ok = out.add("maxItems", path, f"must not have more than {limit} items")
        for index, sub in enumerate(node.prefix_items[: len(value)]):
            ok = self._check(sub, value[index], (*path, str(index)), out) and ok
        if node.unique_items and _has_duplicates(value):
            ok = out.add("uniqueItems", path, "must not have duplicate items")
        return ok

    def _check_logic(self, node: _Node, value: Any, path: tuple[str, ...], out: _Errors) -> bool:
        ok = True
        if node.ref is not None:
            ok = self._check(node.ref, value, path, out)
        if node.has_const and not _js_equal(value, node.const):
            ok = out.add("const", path, "must be equal to constant")
        if node.enum is not None and not any(_js_equal(value, option) for option in node.enum):
            ok = out.add("enum", path, "must be equal to one of the allowed values")
        if node.negated is not None and self._valid(node.negated, value):
            ok = out.add("not", path, "must not be valid")
        if node.all_of:
            failures = self._branches(node.all_of, value, path)[1]
            for issues in failures:
                out.extend(issues)
            ok = ok and not failures
        if node.any_of:
            passed, failures = self._branches(node.any_of, value, path)
            if not passed:
                for issues in failures:
                    out.extend(issues)
                ok = out.add("anyOf", path, "must match a schema in anyOf")
        if node.one_of:
            passed, failures = self._branches(node.one_of, value, path)
            if passed != 1:
                for issues in failures if passed == 0 else ():
                    out.extend(issues)
                ok = out.add("oneOf", path, "must match exactly one schema in oneOf")
        return ok

    def _branches(
        self, members: tuple[_Node, ...], value: Any, path: tuple[str, ...]
    ) -> tuple[int, list[list[SchemaIssue]]]:
        """Check each member on its own: how many passed, and the issues of those that failed."""
        passed = 0
        failures: list[list[SchemaIssue]] = []
        for member in members:
            found = _Errors(MAX_ERRORS)
            if self._check(member, value, path, found):
                passed += 1
            else:
                failures.append(found.issues)
        return passed, failures

    # --- coercion --------------------------------------------------------------------------------

    def _coerce(self, node: _Node, value: Any) -> Any:
        if node.fixed is not None:
            return value
        if node.ref is not None:
            value = self._coerce(node.ref, value)
        for member in node.all_of:
            value = self._coerce(member, value)
        if node.any_of:
            value = self._coerce_union(node.any_of, value)
        if node.one_of:
            value = self._coerce_union(node.one_of, value)
        if node.types is not None:
            value = _coerce_to_types(value, node.types)
        accepts = node.types is None or "object" in node.types
        if accepts and isinstance(value, dict):
            for key, item in value.items():
                sub = node.properties.get(key)
                if sub is None:
                    sub = next((s for r, s in node.pattern_properties if r.search(key)), None)
                if sub is None:
                    sub = node.additional
                if sub is not None:
                    value[key] = self._coerce(sub, item)
        accepts = node.types is None or "array" in node.types
        if accepts and isinstance(value, list):
            for index, item in enumerate(value):
                if index < len(node.prefix_items):
                    value[index] = self._coerce(node.prefix_items[index], item)
                elif node.items is not None:
                    value[index] = self._coerce(node.items, item)
        return value

    def _coerce_union(self, members: tuple[_Node, ...], value: Any) -> Any:
        if any(self._valid(member, value) for member in members):
            return value
        for member in members:
            candidate = self._coerce(member, copy.deepcopy(value))
            if self._valid(member, candidate):
                return candidate
        return value


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


def _never(_: Any) -> bool:
    return False


def _matches_any(value: Any, types: tuple[str, ...]) -> bool:
    return any(_TYPE_TESTS.get(kind, _never)(value) for kind in types)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def _regex(pattern: str) -> re.Pattern[str] | None:
    """A JavaScript pattern as a Python regex; ``None`` (keyword ignored) if Python rejects it."""
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    try:
        return re.compile(translated)
    except re.error:
        return None


def _escape_pointer(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _check_string(node: _Node, value: str, path: tuple[str, ...], out: _Errors) -> bool:
    ok = True
    if node.min_length is not None and len(value) < node.min_length:
        limit = js_number(node.min_length)
        ok = out.add("minLength", path, f"must not have fewer than {limit} characters")
    if node.max_length is not None and len(value) > node.max_length:
        limit = js_number(node.max_length)
        ok = out.add("maxLength", path, f"must not have more than {limit} characters")
    if node.pattern is not None and not node.pattern[0].search(value):
        ok = out.add("pattern", path, f'must match pattern "{node.pattern[1]}"')
    return ok


def _check_number(node: _Node, value: float, path: tuple[str, ...], out: _Errors) -> bool:
    ok = True
    bounds = (
        ("exclusiveMinimum", node.exclusive_minimum, ">"),
        ("exclusiveMaximum", node.exclusive_maximum, "<"),
        ("minimum", node.minimum, ">="),
        ("maximum", node.maximum, "<="),
    )
    for keyword, limit, comparison in bounds:
        if limit is not None and not _compare(value, comparison, limit):
            ok = out.add(keyword, path, f"must be {comparison} {js_number(limit)}")
    if node.multiple_of is not None and not _is_multiple(value, node.multiple_of):
        ok = out.add("multipleOf", path, f"must be multiple of {js_number(node.multiple_of)}")
    return ok


def _compare(value: float, comparison: str, limit: float) -> bool:
    if comparison == ">":
        return value > limit
    if comparison == "<":
        return value < limit
    if comparison == ">=":
        return value >= limit
    return value <= limit


def _is_multiple(value: float, divisor: float) -> bool:
    if divisor == 0:
        return True
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    quotient = value / divisor
    return math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9


def _js_equal(a: Any, b: Any) -> bool:
    """Deep equality with JSON semantics: ``1 == 1.0`` but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_js_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_js_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _has_duplicates(items: list[Any] | tuple[Any, ...]) -> bool:
    return any(_js_equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


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
