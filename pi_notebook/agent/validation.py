"""Tool-argument validation as pi does it: coerce what the model obviously meant, check the result
against the tool's JSON Schema, and report failures in pi's (TypeBox's) words.

``validate_tool_arguments(tool, arguments)`` works on a deep copy and returns the coerced
arguments (the tool receives these; events and messages keep the raw ones). Coercion follows pi:
numeric strings become numbers, numbers and booleans become strings, ``null`` becomes ``"null"``,
``0`` or ``false`` where that type is expected, ``"true"``/``"false"``/``1``/``0`` become booleans,
``""``/``0``/``false`` become ``null`` for null types, and unions take the first member that
validates after coercion. One deliberate difference: a value that already satisfies some member of
a union is left alone (pi would turn ``null`` in ``int | None`` into ``0``).

Checking is ``jsonschema`` (draft 2020-12, as pydantic emits it; ``format`` is not checked), as pi
delegates checking to its schema library. This module adds only what pi's behaviour needs on top:
keywords visited in TypeBox's order, one ``required`` error naming every missing property, an
``additionalProperties`` schema checked per extra property, the draft-04 spellings
(``exclusiveMinimum: true``, ``items: [...]``), JavaScript regex groups, and TypeBox's message per
keyword. References are resolved within the schema only (never fetched) and checked when a schema
is first compiled; compiled validators are cached per schema object, as pi caches per schema.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import operator
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import Any, Final

import jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

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


# --- the jsonschema adapter: TypeBox's keyword order and the keywords pi reads differently -------

_Errors = Iterator[ValidationError]
_Resolver = Any  # referencing's Resolver (not exported by the package)
_Keyword = Callable[[Any, Any, Any, Any], _Errors]
"""A keyword function as jsonschema calls it: (validator, keyword value, instance, schema)."""

# fmt: off
_TYPEBOX_ORDER: Final = (
    "type", "required", "additionalProperties", "patternProperties", "properties",
    "minProperties", "maxProperties", "items", "minItems", "maxItems", "prefixItems",
    "uniqueItems", "minLength", "maxLength", "pattern", "exclusiveMinimum", "exclusiveMaximum",
    "minimum", "maximum", "multipleOf", "$ref", "const", "enum", "not", "allOf", "anyOf", "oneOf",
)
_LIMITS: Final = (
    "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
)
# fmt: on
_RANK: Final = {keyword: rank for rank, keyword in enumerate(_TYPEBOX_ORDER)}


def _rank(item: tuple[str, Any]) -> int:
    return _RANK.get(item[0], len(_RANK))


def _in_typebox_order(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The keywords of ``schema`` in the order TypeBox checks them (and so reports errors); sorted
    once per schema object (jsonschema asks on every descent)."""
    cached = _ordered.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_ordered) >= _ORDERED_SIZE:
        _ordered.clear()
    items = sorted(schema.items(), key=_rank)
    _ordered[id(schema)] = (schema, items)  # the schema is kept: its id is not reused meanwhile
    return items


_ORDERED_SIZE: Final = 8192
_ordered: dict[int, tuple[Mapping[str, Any], list[tuple[str, Any]]]] = {}


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> _Errors:
    """One error naming every missing property (jsonschema gives one error per property)."""
    if (
        validator.is_type(instance, "object")
        and isinstance(required, list)
        and any(name not in instance for name in required)
    ):
        yield ValidationError("required")


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> _Errors:
    """Each undeclared property checked against ``extra`` (``false`` included), then one summary
    error, as TypeBox reports it."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [r for p in schema.get("patternProperties", {}) if (r := _regex(p)) is not None]
    failed = False
    for key, item in instance.items():
        if key in declared or any(r.search(key) for r in patterns):
            continue
        for error in validator.descend(item, extra, path=key):
            failed = True
            yield error
    if failed:
        yield ValidationError("additionalProperties")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> _Errors:
    if not validator.is_type(instance, "object"):
        return
    for pattern, sub in patterns.items():
        regex = _regex(pattern)
        if regex is None:
            continue
        for key, item in instance.items():
            if regex.search(key):
                yield from validator.descend(item, sub, path=key)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, str) and isinstance(pattern, str):
        regex = _regex(pattern)
        if regex is not None and not regex.search(instance):
            yield ValidationError("pattern")


def _items(validator: Any, items: Any, instance: Any, schema: Any) -> _Errors:
    """``items`` as a schema (beyond ``prefixItems``) or draft-04's list with ``additionalItems``;
    every item past the tuple is checked, ``false`` included."""
    if not validator.is_type(instance, "array"):
        return
    if isinstance(items, list):
        for index, (item, sub) in enumerate(zip(instance, items, strict=False)):
            yield from validator.descend(item, sub, path=index)
        extra = schema.get("additionalItems")
        if not isinstance(extra, bool | Mapping):
            return
        start, items = len(items), extra
    else:
        start = len(schema.get("prefixItems", ()))
    for index in range(start, len(instance)):
        yield from validator.descend(instance[index], items, path=index)


def _bound(
    exclusive_keyword: str, failed: Callable[[float, float], bool], strict: Callable[..., bool]
) -> _Keyword:
    """``minimum``/``maximum``, exclusive when draft-04's ``exclusiveMinimum: true`` is beside."""

    def check(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if not (_is_number(limit) and validator.is_type(instance, "number")):
            return
        test = strict if schema.get(exclusive_keyword) is True else failed
        if test(instance, limit):
            yield ValidationError("bound")

    return check


def _exclusive(failed: Callable[[float, float], bool]) -> _Keyword:
    """``exclusiveMinimum``/``exclusiveMaximum`` as numbers; the draft-04 boolean is read by
    ``_bound``."""

    def check(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if _is_number(limit) and validator.is_type(instance, "number") and failed(instance, limit):
            yield ValidationError("bound")

    return check


def _dependent_required(validator: Any, dependencies: Any, instance: Any, schema: Any) -> _Errors:
    if not validator.is_type(instance, "object"):
        return
    for name, needed in dependencies.items():
        missing = [n for n in needed if n not in instance] if name in instance else []
        if missing:
            noun = "property" if len(missing) == 1 else "properties"
            text = f"must have {noun} {', '.join(missing)} when property {name} is present"
            yield ValidationError(text)


def _when_numeric(check: _Keyword) -> _Keyword:
    """A limit keyword that is skipped when its limit is not a number: a malformed schema is not
    the model's fault, and must not crash the tool call."""

    def guarded(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if _is_number(limit):
            yield from check(validator, limit, instance, schema)

    return guarded


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> _Errors:
    """``multipleOf`` with a float tolerance: ``0.3`` is a multiple of ``0.1`` (jsonschema and
    JavaScript's ``%`` say it is not, which only teaches the model to distrust the schema)."""
    if not (_is_number(divisor) and divisor > 0 and validator.is_type(instance, "number")):
        return
    if isinstance(instance, int) and isinstance(divisor, int):
        fits = instance % divisor == 0
    else:
        quotient = instance / divisor
        fits = math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9
    if not fits:
        yield ValidationError("multipleOf")


_Draft = jsonschema.Draft202012Validator
_PiValidator: Final = jsonschema.validators.create(
    meta_schema=_Draft.META_SCHEMA,
    validators={
        **_Draft.VALIDATORS,
        "required": _required,
        "additionalProperties": _additional_properties,
        "patternProperties": _pattern_properties,
        "pattern": _pattern,
        "items": _items,
        "minimum": _bound("exclusiveMinimum", operator.lt, operator.le),
        "maximum": _bound("exclusiveMaximum", operator.gt, operator.ge),
        "exclusiveMinimum": _exclusive(operator.le),
        "exclusiveMaximum": _exclusive(operator.ge),
        "dependentRequired": _dependent_required,
        **{keyword: _when_numeric(_Draft.VALIDATORS[keyword]) for keyword in _LIMITS},
        "multipleOf": _multiple_of,
    },
    type_checker=_Draft.TYPE_CHECKER.redefine(
        "array", lambda _checker, value: isinstance(value, list | tuple)
    ),
    id_of=DRAFT202012.id_of,  # type: ignore[arg-type]  # the stub wants str, not str | None
    applicable_validators=_in_typebox_order,  # type: ignore[arg-type]
)
"""Draft 2020-12 with the keywords above replaced; ``format`` is not checked (no checker)."""


_plain_descend = _PiValidator.descend


def _descend(
    self: Any,
    instance: Any,
    schema: Any,
    path: str | int | None = None,
    schema_path: str | int | None = None,
    resolver: Any = None,
) -> _Errors:
    """jsonschema's ``descend``, except that a ``false`` schema's error gets its path (jsonschema
    drops it: ``properties: {"a": false}`` would be reported at the object, not at ``a``)."""
    if schema is False:
        error = ValidationError("schema is false", validator="false", instance=instance)
        if path is not None:
            error.path.appendleft(path)
        yield error
        return
    yield from _plain_descend(self, instance, schema, path, schema_path, resolver)


_PiValidator.descend = _descend  # type: ignore[method-assign, assignment]


# --- TypeBox's words -----------------------------------------------------------------------------


def _limit(text: str) -> Callable[[ValidationError], str]:
    return lambda error: text.format(_spelled(error.validator_value))


def _spelled(value: Any) -> str:
    return js_number(value) if _is_number(value) else str(value)


def _type_message(error: ValidationError) -> str:
    kind = error.validator_value
    if isinstance(kind, list):
        return f"must be either {' or '.join(map(str, kind))}"
    return f"must be {kind}"


def _bound_message(exclusive_keyword: str, strict: str, loose: str) -> Callable[..., str]:
    def message(error: ValidationError) -> str:
        schema = error.schema
        exclusive = isinstance(schema, Mapping) and schema.get(exclusive_keyword) is True
        return f"must be {strict if exclusive else loose} {_spelled(error.validator_value)}"

    return message


def _contains_message(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    least, most = schema.get("minContains", 1), schema.get("maxContains")
    if most is None:
        return f"must contain at least {least} valid item(s)"
    return f"must contain at least {least} and no more than {most} valid item(s)"


_MESSAGES: Final[dict[str, Callable[[ValidationError], str]]] = {
    "type": _type_message,
    "required": lambda e: "must have required properties " + ", ".join(_missing(e)),
    "additionalProperties": lambda _: "must not have additional properties",
    "minProperties": _limit("must not have fewer than {} properties"),
    "maxProperties": _limit("must not have more than {} properties"),
    "minItems": _limit("must not have fewer than {} items"),
    "maxItems": _limit("must not have more than {} items"),
    "uniqueItems": lambda _: "must not have duplicate items",
    "minLength": _limit("must not have fewer than {} characters"),
    "maxLength": _limit("must not have more than {} characters"),
    "pattern": lambda e: f'must match pattern "{e.validator_value}"',
    "exclusiveMinimum": _limit("must be > {}"),
    "exclusiveMaximum": _limit("must be < {}"),
    "minimum": _bound_message("exclusiveMinimum", ">", ">="),
    "maximum": _bound_message("exclusiveMaximum", "<", "<="),
    "multipleOf": _limit("must be multiple of {}"),
    "const": lambda _: "must be equal to constant",
    "enum": lambda _: "must be equal to one of the allowed values",
    "not": lambda _: "must not be valid",
    "anyOf": lambda _: "must match a schema in anyOf",
    "oneOf": lambda _: "must match exactly one schema in oneOf",
    "contains": _contains_message,
    "dependentRequired": lambda e: e.message,
    "unevaluatedProperties": lambda _: "must not have unevaluated properties",
    "unevaluatedItems": lambda _: "must not have unevaluated items",
}


def _missing(error: ValidationError) -> tuple[str, ...]:
    instance, required = error.instance, error.validator_value
    return tuple(name for name in required if name not in instance)  # type: ignore[union-attr, operator]


def _issue(error: ValidationError) -> SchemaIssue:
    path = tuple(str(part) for part in error.absolute_path)
    keyword = error.validator
    if not isinstance(keyword, str) or keyword == "false":  # a ``false`` schema
        return SchemaIssue("false", path, "schema is false")
    describe = _MESSAGES.get(keyword)
    message = describe(error) if describe else f'must pass "{keyword}" keyword validation'
    missing = _missing(error) if keyword == "required" else ()
    return SchemaIssue(keyword, path, message, missing)


def _flattened(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    """TypeBox lists a failed union's member errors before the union's own error."""
    for error in errors:
        if error.validator in ("anyOf", "oneOf"):
            yield from _flattened(error.context or ())
        yield error


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
        self._checker: Validator = _PiValidator(schema, registry=_NO_FETCHING)

    def is_valid(self, value: Any) -> bool:
        return self._checker.is_valid(value)

    def errors(self, value: Any, limit: int = MAX_ERRORS) -> list[SchemaIssue]:
        """The issues of ``value`` (empty when valid), in TypeBox's order, at most ``limit``."""
        found = _flattened(self._checker.iter_errors(value))
        return [_issue(error) for error in islice(found, limit)]

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
                sub = next((s for p, s in patterns.items() if _search(p, key)), extra)
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
            if name not in _KNOWN_TYPES:
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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    """A JavaScript pattern as a Python regex; ``None`` (keyword ignored) if Python rejects it."""
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    try:
        return re.compile(translated)
    except re.error:
        return None


def _search(pattern: str, text: str) -> bool:
    regex = _regex(pattern)
    return regex is not None and regex.search(text) is not None


def _escape_pointer(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _matches_any(value: Any, types: tuple[str, ...]) -> bool:
    checker = _PiValidator.TYPE_CHECKER
    return any(kind in _KNOWN_TYPES and checker.is_type(value, kind) for kind in types)


_KNOWN_TYPES: Final = frozenset(
    {"object", "array", "string", "number", "integer", "boolean", "null"}
)


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
