"""Tool-argument validation as pi does it (pi-ai's ``validateToolArguments``): coerce what the
model obviously meant (``schema_coercion``), check the result against the tool's JSON Schema with
jsonschema, and word each failure as pi-schema does.

The check is jsonschema's draft 2020-12 with what pi reads differently: JavaScript regex groups,
draft 7's ``items: [...]`` with ``additionalItems``, limits that are not numbers ignored (draft 4's
``exclusiveMinimum: true`` means nothing, as in pi), a float-tolerant ``multipleOf``, ``format``
checked for the formats jsonschema knows, and a ``$ref`` that names nothing rejecting only the
values at its place (pi compiles tool schemas with ``unresolvedRefs: "reject"``); references
resolve within the schema, nothing is fetched.

The explanation is jsonschema's ``iter_errors`` in pi-schema's keyword order, each error worded
by its keyword (``_WORDING``): a node whose ``type`` fails reports only that, and a union that
matches nothing reports its closest branch.
"""

from __future__ import annotations

import copy
import math
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from .js_json import js_number, stringify
from .schema_coercion import Coercion, holds_float, js_regex
from .types import Tool, ToolCall

__all__ = [
    "SchemaIssue",
    "SchemaValidator",
    "ToolArgumentsError",
    "arguments_error_for",
    "format_arguments",
    "schema_validator",
    "validate_tool_arguments",
]

_RAW_ARGUMENTS_LIMIT: Final = 2_000
_Resolver = Any  # referencing's Resolver (not exported by the package)


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """One validation failure: the keyword that failed, where, and pi's message for it."""

    keyword: str
    path: tuple[str, ...]
    message: str

    @property
    def location(self) -> str:
        """pi's rendering of the path: ``a.0.b`` (names as they are), ``root`` for the top."""
        return ".".join(self.path) or "root"


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
    """Coerce and check ``arguments`` against ``tool.parameters``; return the coerced copy (the
    tool receives it; events and messages keep the raw arguments).

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
    return stringify(arguments, indent=2, default=repr)


# --- the check: jsonschema with the keywords pi reads differently --------------------------------

_Errors = Iterator[ValidationError]
_Keyword = Callable[[Any, Any, Any, Any], _Errors]
"""A keyword function as jsonschema calls it: (validator, keyword value, instance, schema)."""


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _descend(validator: Any, instance: Any, schema: Any, path: str | int) -> _Errors:
    """``validator.descend`` into a member; jsonschema's own reports the ``false`` schema without
    the member's path."""
    if schema is False:
        yield ValidationError("no value is allowed here", validator="false", path=(path,))
    else:
        yield from validator.descend(instance, schema, path=path)


def _properties(validator: Any, properties: Any, instance: Any, schema: Any) -> _Errors:
    if validator.is_type(instance, "object"):
        for key, sub in properties.items():
            if key in instance:
                yield from _descend(validator, instance[key], sub, key)


def _prefix_items(validator: Any, prefix: Any, instance: Any, schema: Any) -> _Errors:
    if validator.is_type(instance, "array"):
        for index, (item, sub) in enumerate(zip(instance, prefix, strict=False)):
            yield from _descend(validator, item, sub, index)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> _Errors:
    """Undeclared properties (JavaScript patterns) checked against ``extra``; ``false`` reports
    each one at its own path."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [r for p in schema.get("patternProperties", {}) if (r := js_regex(p)) is not None]
    for key, item in instance.items():
        if key in declared or any(r.search(key) for r in patterns):
            continue
        if extra is False:
            yield ValidationError("unknown field", path=(key,))
        else:
            yield from _descend(validator, item, extra, key)


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> _Errors:
    if not validator.is_type(instance, "object"):
        return
    for pattern, sub in patterns.items():
        regex = js_regex(pattern)
        if regex is None:
            continue
        for key, item in instance.items():
            if regex.search(key):
                yield from _descend(validator, item, sub, key)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, str) and isinstance(pattern, str):
        regex = js_regex(pattern)
        if regex is not None and not regex.search(instance):
            yield ValidationError("pattern")


def _items(validator: Any, items: Any, instance: Any, schema: Any) -> _Errors:
    """``items`` as a schema (beyond ``prefixItems``) or draft 7's list with ``additionalItems``."""
    if not validator.is_type(instance, "array"):
        return
    if isinstance(items, list):
        for index, (item, sub) in enumerate(zip(instance, items, strict=False)):
            yield from _descend(validator, item, sub, index)
        extra = schema.get("additionalItems")
        if not isinstance(extra, bool | Mapping):
            return
        start, items = len(items), extra
    else:
        start = len(schema.get("prefixItems", ()))
    for index in range(start, len(instance)):
        yield from _descend(validator, instance[index], items, index)


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> _Errors:
    """Each missing property, at its own path (where pi reports it)."""
    if validator.is_type(instance, "object") and isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in instance:
                yield ValidationError("missing", path=(key,))


def _dependent_required(validator: Any, dependencies: Any, instance: Any, schema: Any) -> _Errors:
    if not validator.is_type(instance, "object") or not isinstance(dependencies, Mapping):
        return
    for key, needed in dependencies.items():
        if key in instance and isinstance(needed, list):
            for name in needed:
                if name not in instance:
                    yield ValidationError(f"required when {key} is present", path=(name,))


def _property_names(validator: Any, names: Any, instance: Any, schema: Any) -> _Errors:
    if validator.is_type(instance, "object"):
        for key in instance:
            if any(True for _ in validator.descend(key, names)):
                yield ValidationError("invalid property name", path=(key,))


def _unevaluated_properties(validator: Any, rest: Any, instance: Any, schema: Any) -> _Errors:
    """jsonschema's keyword, which reports every unevaluated property in one error, asked once per
    property so that each is reported (or checked against ``rest``) at its own path."""
    if not any(True for _ in _STOCK_UNEVALUATED(validator, False, instance, schema)):
        return
    properties = schema.get("properties")
    declared = properties if isinstance(properties, Mapping) else {}
    for key, item in instance.items():
        others = {other: True for other in instance if other != key}
        alone = {**schema, "properties": {**declared, **others}}
        if not any(True for _ in _STOCK_UNEVALUATED(validator, False, instance, alone)):
            continue  # evaluated by some other keyword
        if rest is False:
            yield ValidationError("unknown field", path=(key,))
        else:
            yield from _descend(validator, item, rest, key)


def _exclusive(failed: Callable[[float, float], bool]) -> _Keyword:
    def check(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if _is_number(limit) and validator.is_type(instance, "number") and failed(instance, limit):
            yield ValidationError("bound")

    return check


def _when_numeric(check: _Keyword) -> _Keyword:
    """A limit keyword skipped when its limit is not a number (a malformed schema is not the
    model's fault, and must not crash the tool call)."""

    def guarded(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if _is_number(limit):
            yield from check(validator, limit, instance, schema)

    return guarded


def _is_multiple(value: float, divisor: float) -> bool:
    """A float-tolerant multiple (``0.3`` is a multiple of ``0.1``); a divisor <= 0 never fits."""
    if divisor <= 0:
        return False
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    quotient = value / divisor
    return math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> _Errors:
    number = _is_number(divisor) and validator.is_type(instance, "number")
    if number and not _is_multiple(instance, divisor):
        yield ValidationError("multipleOf")


def _ref(validator: Any, ref: Any, instance: Any, schema: Any) -> _Errors:
    """``$ref``; one that names nothing rejects the value here."""
    if not isinstance(ref, str):
        return
    try:
        resolved = validator._resolver.lookup(ref)
    except Unresolvable:
        yield ValidationError(f"unresolved reference {ref}")
        return
    yield from validator.descend(instance, resolved.contents, resolver=resolved.resolver)


_Draft = jsonschema.Draft202012Validator
_STOCK_UNEVALUATED: Final = _Draft.VALIDATORS["unevaluatedProperties"]
_LIMITS: Final = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)
_KEYWORDS: Final[dict[str, Any]] = {
    **_Draft.VALIDATORS,
    "$ref": _ref,
    "additionalProperties": _additional_properties,
    "patternProperties": _pattern_properties,
    "pattern": _pattern,
    "items": _items,
    "minimum": _exclusive(operator.lt),
    "maximum": _exclusive(operator.gt),
    "exclusiveMinimum": _exclusive(operator.le),
    "exclusiveMaximum": _exclusive(operator.ge),
    **{keyword: _when_numeric(_Draft.VALIDATORS[keyword]) for keyword in _LIMITS},
    "multipleOf": _multiple_of,
}
"""The check: draft 2020-12 read as pi reads it."""
_EXPLAINING_KEYWORDS: Final[dict[str, Any]] = {
    **_KEYWORDS,
    "properties": _properties,
    "prefixItems": _prefix_items,
    "required": _required,
    "dependentRequired": _dependent_required,
    "propertyNames": _property_names,
    "unevaluatedProperties": _unevaluated_properties,
}
"""The same check, each error at the path where pi reports it (the check itself needs no paths:
jsonschema's own keywords are quicker)."""

# The order in which pi-schema checks a schema's keywords; its errors come out in this order.
_PI_ORDER: Final = {
    keyword: rank
    for rank, keyword in enumerate(
        """type enum const minLength maxLength pattern format
        minimum maximum exclusiveMinimum exclusiveMaximum multipleOf
        required properties patternProperties additionalProperties propertyNames
        minProperties maxProperties dependentRequired dependentSchemas
        prefixItems items additionalItems minItems maxItems uniqueItems contains
        allOf anyOf oneOf not if $ref unevaluatedProperties unevaluatedItems $dynamicRef""".split()  # noqa: SIM905
    )
}


def _in_pi_order(schema: Any) -> list[tuple[str, Any]]:
    return sorted(schema.items(), key=lambda item: _PI_ORDER.get(item[0], len(_PI_ORDER)))


def _checker_class(
    keywords: dict[str, Any], applicable: Callable[[Any], Iterable[tuple[str, Any]]]
) -> Any:
    return jsonschema.validators.create(
        meta_schema=_Draft.META_SCHEMA,
        validators=keywords,
        type_checker=_Draft.TYPE_CHECKER.redefine(
            "array", lambda _checker, value: isinstance(value, list | tuple)
        ).redefine("number", lambda _checker, value: _is_number(value) and math.isfinite(value)),
        format_checker=_Draft.FORMAT_CHECKER,
        id_of=DRAFT202012.id_of,  # type: ignore[arg-type]  # the stub wants str, not str | None
        applicable_validators=applicable,
    )


SchemaChecker: Final = _checker_class(_KEYWORDS, operator.methodcaller("items"))
"""Draft 2020-12 with the keywords above replaced; it checks ``format``."""
_ExplainingChecker: Final = _checker_class(_EXPLAINING_KEYWORDS, _in_pi_order)
"""The same check, its keywords taken in pi-schema's order (for the explanation only)."""


# --- the explanation: jsonschema's errors in pi-schema's words -----------------------------------

_LISTED_VALUES: Final = 20


def _type_name(value: Any) -> str:
    """JavaScript's name for the type of a JSON value, as pi-schema prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return js_number(value)
        return "integer" if float(value).is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _list_values(values: list[Any]) -> str:
    if len(values) <= _LISTED_VALUES:
        return stringify(values, default=str)
    listed = stringify(values[:_LISTED_VALUES], default=str)
    return f"{listed[:-1]}, ... and {len(values) - _LISTED_VALUES} more]"


def _contains(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    low, high = schema.get("minContains", 1), schema.get("maxContains", math.inf)
    low = low if _is_number(low) else 1
    high = high if _is_number(high) else math.inf
    if high == math.inf:
        return f"expected at least {js_number(low)} matching {'item' if low == 1 else 'items'}"
    if low == 0:
        return f"expected at most {js_number(high)} matching {'item' if high == 1 else 'items'}"
    return f"expected between {js_number(low)} and {js_number(high)} matching items"


def _expected_type(error: ValidationError) -> str:
    kind = error.validator_value
    types = kind if isinstance(kind, list) else [kind]
    return f"expected {' or '.join(map(str, types))}, got {_type_name(error.instance)}"


def _limit(template: str) -> Callable[[ValidationError], str]:
    return lambda error: template.format(js_number(error.validator_value))  # type: ignore[arg-type]


_WORDING: Final[dict[str, Callable[[ValidationError], str]]] = {
    "type": _expected_type,
    "enum": lambda error: f"expected one of {_list_values(error.validator_value)}",  # type: ignore[arg-type]
    "const": lambda error: f"expected {stringify(error.validator_value, default=str)}",
    "minLength": _limit("expected at least {} characters"),
    "maxLength": _limit("expected at most {} characters"),
    "pattern": lambda error: f"expected to match {error.validator_value}",
    "format": lambda error: f"expected format {error.validator_value}",
    "minimum": _limit("expected >= {}"),
    "maximum": _limit("expected <= {}"),
    "exclusiveMinimum": _limit("expected > {}"),
    "exclusiveMaximum": _limit("expected < {}"),
    "multipleOf": _limit("expected a multiple of {}"),
    "required": lambda error: "missing",
    "additionalProperties": lambda error: "unknown field",
    "unevaluatedProperties": lambda error: "unknown field",
    "unevaluatedItems": lambda error: "unexpected item",
    "propertyNames": lambda error: "invalid property name",
    "minProperties": _limit("expected at least {} properties"),
    "maxProperties": _limit("expected at most {} properties"),
    "dependentRequired": lambda error: error.message,
    "minItems": _limit("expected at least {} items"),
    "maxItems": _limit("expected at most {} items"),
    "uniqueItems": lambda error: "expected unique items",
    "contains": _contains,
    "minContains": _contains,
    "maxContains": _contains,
    "not": lambda error: "must not match the schema in not",
    "false": lambda error: error.message,
    "$ref": lambda error: error.message,  # "unresolved reference …"
    "$dynamicRef": lambda error: "does not match the dynamically referenced schema",
}


class _Explanation:
    """pi-schema's issues from jsonschema's errors of one failed value."""

    def __init__(self, resolver: _Resolver) -> None:
        self.resolver = resolver

    def issues(self, errors: Iterable[ValidationError]) -> list[SchemaIssue]:
        out: list[SchemaIssue] = []
        failed_types: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []
        for error in errors:
            where = tuple(error.absolute_schema_path)
            at = tuple(error.absolute_path)
            if any(
                where[: len(node)] == node and at[: len(path)] == path
                for node, path in failed_types
            ):
                continue  # pi checks nothing more at a node whose type failed
            path = tuple(str(part) for part in at)
            keyword: Any = error.validator  # None: the schema ``false`` at the top
            if keyword == "type":
                failed_types.append((where[:-1], at))
            if keyword in ("anyOf", "oneOf"):
                out.extend(self.union(error, path))
            elif keyword is None:
                out.append(SchemaIssue("false", path, "no value is allowed here"))
            else:
                wording = _WORDING.get(keyword)
                message = wording(error) if wording is not None else error.message
                out.append(SchemaIssue(str(keyword), path, message))
        return out

    def union(self, error: ValidationError, path: tuple[str, ...]) -> list[SchemaIssue]:
        """A union that failed: more than one match (``oneOf``), the tagged branch, or the
        branch that came closest (most properties it declares, then the deepest first issue)."""
        keyword = str(error.validator)
        branches: list[Any] = list(error.validator_value)  # type: ignore[arg-type]
        if not error.context and branches:  # only oneOf fails with no branch's errors
            return [SchemaIssue(keyword, path, "matches more than one alternative")]
        by_branch: dict[int, list[ValidationError]] = {}
        for inner in error.context:
            by_branch.setdefault(int(inner.relative_schema_path[0]), []).append(inner)
        value = error.instance
        tag = self.tag_of(branches)
        if tag is not None and isinstance(value, Mapping):
            key, tags = tag
            index = next(
                (i for i, t in enumerate(tags) if key in value and _equal(value[key], t)), -1
            )
            if index < 0:
                return [SchemaIssue(keyword, (*path, key), f"expected one of {_list_values(tags)}")]
            return self.issues(by_branch.get(index, ()))
        best: tuple[list[SchemaIssue], int] | None = None
        for index, errors in sorted(by_branch.items()):
            found = self.issues(errors)
            if not found:
                continue
            declared = self.declared_keys(branches[index], value)
            if (
                best is None
                or declared > best[1]
                or (declared == best[1] and len(found[0].path) > len(best[0][0].path))
            ):
                best = (found, declared)
        if best is None:
            return [SchemaIssue(keyword, path, "matches no alternative")]
        return best[0]

    def resolved(self, branch: Any) -> Any:
        if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
            try:
                return self.resolver.lookup(branch["$ref"]).contents
            except Unresolvable:
                return False
        return branch

    def declared_keys(self, branch: Any, value: Any) -> int:
        node = self.resolved(branch)
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(properties, Mapping) or not isinstance(value, Mapping):
            return 0
        return sum(1 for key in value if key in properties)

    def tag_of(self, branches: list[Any]) -> tuple[str, list[Any]] | None:
        """The property whose ``const`` differs in every branch (a tagged union), if any."""
        nodes = [self.resolved(branch) for branch in branches]
        first = nodes[0] if nodes else None
        if not isinstance(first, Mapping) or not isinstance(first.get("properties"), Mapping):
            return None
        for key in first["properties"]:
            values: list[Any] = []
            for node in nodes:
                props = node.get("properties") if isinstance(node, Mapping) else None
                tag = props.get(key) if isinstance(props, Mapping) else None
                if not isinstance(tag, Mapping) or "const" not in tag:
                    break
                values.append(tag["const"])
            else:
                atoms = all(not isinstance(x, Mapping | list) for x in values)
                if atoms and len({stringify(x, default=str) for x in values}) == len(values):
                    return key, values
        return None


def _equal(a: Any, b: Any) -> bool:
    """JSON equality of atoms (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b) if _is_number(a) and _is_number(b) else type(a) is type(b) and a == b


# --- the compiled validator ----------------------------------------------------------------------

_NO_FETCHING: Final[Registry[Any]] = Registry()
"""References resolve within the schema; anything else rejects its values, never a download."""
_KNOWN_TYPES: Final = frozenset(
    {"object", "array", "string", "number", "integer", "boolean", "null"}
)
# Keywords whose values are data, not schemas.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples", "required"})


class SchemaValidator:
    """A compiled JSON schema: ``parse`` (coerce, then check), ``errors`` and ``is_valid``.

    Raises ``ValueError`` at construction when a ``type`` is not a JSON type.
    """

    __slots__ = ("_checker", "_checkers", "_coerce", "_empty_object_valid", "_resolver", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        _check_types(schema)
        self._resolver: _Resolver = _NO_FETCHING.resolver_with_root(
            DRAFT202012.create_resource(schema)
        )
        self._checker: Validator = SchemaChecker(
            schema, registry=_NO_FETCHING, format_checker=SchemaChecker.FORMAT_CHECKER
        )
        self._checkers: dict[tuple[int, int], Validator] = {}
        self._coerce = Coercion(schema, self._resolver, self._passes)
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
        checker = _ExplainingChecker(
            self.schema, registry=_NO_FETCHING, format_checker=SchemaChecker.FORMAT_CHECKER
        )
        issues = _Explanation(self._resolver).issues(checker.iter_errors(value))
        return issues or [SchemaIssue("schema", (), "invalid")]

    def parse(self, value: Any) -> tuple[bool, Any]:
        """Coerce ``value``, then check it: whether the result is valid, and the result.

        A value that is already valid and holds no float comes back as it is: none of pi's rules
        changes such a value (a float may be an integral number an ``integer`` schema accepts,
        which pi truncates to an int)."""
        if not holds_float(value) and self._checker.is_valid(value):
            return True, value
        value = self._coerce(value)
        return self._checker.is_valid(value), value

    def _passes(self, node: Any, resolver: _Resolver, value: Any) -> bool:
        """Whether ``value`` passes the subschema ``node`` (checkers cached per node and scope)."""
        key = (id(node), id(resolver))
        checker = self._checkers.get(key)
        if checker is None:
            checker = self._checker.evolve(schema=node, _resolver=resolver)
            self._checkers[key] = checker
        return checker.is_valid(value)


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
            if name not in _KNOWN_TYPES:
                raise ValueError(f"Unknown type {name!r} in the parameter schema")
        stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)


_CACHE_SIZE: Final = 512
_cache: OrderedDict[int, SchemaValidator] = OrderedDict()
_cache_lock = threading.Lock()


def schema_validator(schema: Mapping[str, Any]) -> SchemaValidator:
    """The compiled validator of ``schema``, cached per schema object (LRU of 512), as pi caches
    per schema.

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
