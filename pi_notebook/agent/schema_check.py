"""Checking tool arguments as pi 1.6 does (pi-schema): a boolean check, and for a failed value an
explanation that walks the schema and reports each failing keyword at the value it failed on, in
pi-schema's words (``missing``, ``expected >= 1``, ``unknown field`` …).

The boolean check is jsonschema's draft 2020-12 with what pi reads differently: JavaScript regex
groups, draft 7's ``items: [...]`` with ``additionalItems``, limits that are not numbers ignored
(so draft 4's ``exclusiveMinimum: true`` means nothing, as in pi), a float-tolerant
``multipleOf``, ``format`` checked for the formats jsonschema knows, and a ``$ref`` that names
nothing rejecting only the values at its place. ``explain`` then gives the errors;
``validation`` builds on this module to coerce and to word the whole message.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, TypeGuard

import jsonschema
from jsonschema import _utils as jsonschema_utils
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

__all__ = [
    "KNOWN_TYPES",
    "SchemaChecker",
    "SchemaIssue",
    "explain",
    "js_number",
    "pattern_matches",
]


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


# --- the boolean check: jsonschema with the keywords pi reads differently ------------------------

_Errors = Iterator[ValidationError]
_Keyword = Callable[[Any, Any, Any, Any], _Errors]
"""A keyword function as jsonschema calls it: (validator, keyword value, instance, schema)."""

_LIMITS: Final = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> _Errors:
    """Undeclared properties (JavaScript patterns) checked against ``extra``."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [r for p in schema.get("patternProperties", {}) if (r := _regex(p)) is not None]
    for key, item in instance.items():
        if key not in declared and not any(r.search(key) for r in patterns):
            yield from validator.descend(item, extra, path=key)


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
    """``items`` as a schema (beyond ``prefixItems``) or draft 7's list with ``additionalItems``."""
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


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> _Errors:
    number = _is_number(divisor) and validator.is_type(instance, "number")
    if number and not _is_multiple(instance, divisor):
        yield ValidationError("multipleOf")


def _ref(validator: Any, ref: Any, instance: Any, schema: Any) -> _Errors:
    """``$ref``; one that names nothing rejects the value here (pi's ``unresolvedRefs: reject``)."""
    if not isinstance(ref, str):
        return
    try:
        resolved = validator._resolver.lookup(ref)
    except Unresolvable:
        yield ValidationError(f"unresolved reference {ref}")
        return
    yield from validator.descend(instance, resolved.contents, resolver=resolved.resolver)


_Draft = jsonschema.Draft202012Validator
SchemaChecker: Final = jsonschema.validators.create(
    meta_schema=_Draft.META_SCHEMA,
    validators={
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
    },
    type_checker=_Draft.TYPE_CHECKER.redefine(
        "array", lambda _checker, value: isinstance(value, list | tuple)
    ).redefine("number", lambda _checker, value: _is_number(value) and math.isfinite(value)),
    format_checker=_Draft.FORMAT_CHECKER,
    id_of=DRAFT202012.id_of,  # type: ignore[arg-type]  # the stub wants str, not str | None
)
"""Draft 2020-12 with the keywords above replaced; it checks ``format`` (pi passes its formats)."""


# --- the explanation: pi-schema's walk ---------------------------------------------------------

_Resolver = Any  # referencing's Resolver (not exported by the package)
_LISTED_VALUES: Final = 20


class _Explainer:
    """One explanation: walks ``schema`` over a failed value, collecting pi-schema's errors."""

    def __init__(self, root: Any, resolver: _Resolver) -> None:
        self.root = root
        self.resolver = resolver
        self.out: list[SchemaIssue] = []

    def ok(self, node: Any, resolver: _Resolver, value: Any) -> bool:
        return bool(self.root.evolve(schema=node, _resolver=resolver).is_valid(value))

    def push(self, keyword: str, message: str, path: tuple[str, ...]) -> None:
        self.out.append(SchemaIssue(keyword, path, message))

    def walk(self, node: Any, resolver: _Resolver, v: Any, path: tuple[str, ...]) -> None:
        if node is False:
            self.push("false", "no value is allowed here", path)
            return
        if not isinstance(node, Mapping):  # ``true`` and anything that is no schema
            return
        if "$id" in node:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        if self.ok(node, resolver, v):
            return
        start = len(self.out)
        kind = node.get("type")
        if kind is not None:
            types = kind if isinstance(kind, list) else [kind]
            if not any(isinstance(t, str) and _has_type(v, t) for t in types):
                self.push(
                    "type", f"expected {' or '.join(map(str, types))}, got {_type_name(v)}", path
                )
                return
        if isinstance(node.get("enum"), list) and not any(_equal(v, m) for m in node["enum"]):
            self.push("enum", f"expected one of {_list_values(node['enum'])}", path)
        if "const" in node and not _equal(v, node["const"]):
            self.push("const", f"expected {_json(node['const'])}", path)
        if isinstance(v, str):
            self.walk_string(node, v, path)
        if _is_number(v):
            self.walk_number(node, v, path)
        if isinstance(v, Mapping):
            self.walk_object(node, resolver, v, path)
        if isinstance(v, list | tuple):
            self.walk_array(node, resolver, v, path)
        members = node.get("allOf")
        for member in members if isinstance(members, list) else ():
            self.walk(member, resolver, v, path)
        if isinstance(node.get("anyOf"), list):
            self.walk_union(node["anyOf"], resolver, v, path, exactly_one=False)
        if isinstance(node.get("oneOf"), list):
            self.walk_union(node["oneOf"], resolver, v, path, exactly_one=True)
        if "not" in node and self.ok(node["not"], resolver, v):
            self.push("not", "must not match the schema in not", path)
        if "if" in node:
            branch = node.get("then") if self.ok(node["if"], resolver, v) else node.get("else")
            if branch is not None:
                self.walk(branch, resolver, v, path)
        if isinstance(node.get("$ref"), str):
            self.walk_ref(node["$ref"], resolver, v, path)
        if len(self.out) == start and (
            "unevaluatedProperties" in node or "unevaluatedItems" in node
        ):
            self.walk_unevaluated(node, resolver, v, path)
        if len(self.out) == start and isinstance(node.get("$dynamicRef"), str):
            self.push("$dynamicRef", "does not match the dynamically referenced schema", path)

    def walk_ref(self, ref: str, resolver: _Resolver, v: Any, path: tuple[str, ...]) -> None:
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            self.push("$ref", f"unresolved reference {ref}", path)
            return
        self.walk(resolved.contents, resolved.resolver, v, path)

    def walk_string(self, node: Mapping[str, Any], v: str, path: tuple[str, ...]) -> None:
        least, most, pattern = node.get("minLength"), node.get("maxLength"), node.get("pattern")
        if _is_number(least) and len(v) < least:
            self.push("minLength", f"expected at least {js_number(least)} characters", path)
        if _is_number(most) and len(v) > most:
            self.push("maxLength", f"expected at most {js_number(most)} characters", path)
        if (
            isinstance(pattern, str)
            and _regex(pattern) is not None
            and not pattern_matches(pattern, v)
        ):
            self.push("pattern", f"expected to match {pattern}", path)
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS.checkers and not _FORMATS.conforms(v, fmt):
            self.push("format", f"expected format {fmt}", path)

    def walk_number(self, node: Mapping[str, Any], v: float, path: tuple[str, ...]) -> None:
        checks = (
            ("minimum", ">=", operator.lt),
            ("maximum", "<=", operator.gt),
            ("exclusiveMinimum", ">", operator.le),
            ("exclusiveMaximum", "<", operator.ge),
        )
        for keyword, sign, failed in checks:
            limit = node.get(keyword)
            if _is_number(limit) and failed(v, limit):
                self.push(keyword, f"expected {sign} {js_number(limit)}", path)
        divisor = node.get("multipleOf")
        if _is_number(divisor) and not _is_multiple(v, divisor):
            self.push("multipleOf", f"expected a multiple of {js_number(divisor)}", path)

    def walk_object(
        self,
        node: Mapping[str, Any],
        resolver: _Resolver,
        v: Mapping[str, Any],
        path: tuple[str, ...],
    ) -> None:
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = node.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in v:
                self.push("required", "missing", (*path, key))
        for key, sub in properties.items():
            if key in v:
                self.walk(sub, resolver, v[key], (*path, key))
        patterns = node.get("patternProperties")
        patterns = patterns if isinstance(patterns, Mapping) else {}
        extra = node.get("additionalProperties")
        names = node.get("propertyNames")
        for key in v:
            matched = key in properties
            for pattern, sub in patterns.items():
                if pattern_matches(pattern, key):
                    matched = True
                    self.walk(sub, resolver, v[key], (*path, key))
            if not matched and extra is not None:
                if extra is False:
                    self.push("additionalProperties", "unknown field", (*path, key))
                else:
                    self.walk(extra, resolver, v[key], (*path, key))
            if names is not None and not self.ok(names, resolver, key):
                self.push("propertyNames", "invalid property name", (*path, key))
        count = len(v)
        least, most = node.get("minProperties"), node.get("maxProperties")
        if _is_number(least) and count < least:
            self.push("minProperties", f"expected at least {js_number(least)} properties", path)
        if _is_number(most) and count > most:
            self.push("maxProperties", f"expected at most {js_number(most)} properties", path)
        dependencies: dict[str, Any] = {}
        for keyword in ("dependentRequired", "dependencies"):
            if isinstance(node.get(keyword), Mapping):
                dependencies.update(node[keyword])
        for key, needed in dependencies.items():
            if key not in v:
                continue
            if not isinstance(needed, list):
                self.walk(needed, resolver, v, path)
                continue
            for name in needed:
                if name not in v:
                    self.push("dependentRequired", f"required when {key} is present", (*path, name))
        schemas = node.get("dependentSchemas")
        for key, sub in schemas.items() if isinstance(schemas, Mapping) else ():
            if key in v:
                self.walk(sub, resolver, v, path)

    def walk_array(
        self, node: Mapping[str, Any], resolver: _Resolver, v: Any, path: tuple[str, ...]
    ) -> None:
        items = node.get("items")
        prefix: list[Any]
        if isinstance(items, list):
            prefix, rest = items, node.get("additionalItems")
        else:
            given = node.get("prefixItems")
            prefix, rest = (given if isinstance(given, list) else []), items
        for index, item in enumerate(v):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is not None:
                self.walk(sub, resolver, item, (*path, str(index)))
        least, most = node.get("minItems"), node.get("maxItems")
        if _is_number(least) and len(v) < least:
            self.push("minItems", f"expected at least {js_number(least)} items", path)
        if _is_number(most) and len(v) > most:
            self.push("maxItems", f"expected at most {js_number(most)} items", path)
        if node.get("uniqueItems") is True and not _unique(v):
            self.push("uniqueItems", "expected unique items", path)
        if "contains" in node:
            low = node.get("minContains", 1)
            high = node.get("maxContains", math.inf)
            low = low if _is_number(low) else 1
            high = high if _is_number(high) else math.inf
            found = sum(1 for item in v if self.ok(node["contains"], resolver, item))
            if not low <= found <= high:
                self.push("contains", _contains_message(low, high), path)

    def walk_union(
        self,
        branches: list[Any],
        resolver: _Resolver,
        v: Any,
        path: tuple[str, ...],
        *,
        exactly_one: bool,
    ) -> None:
        matches = sum(1 for branch in branches if self.ok(branch, resolver, v))
        if matches == 1 or (not exactly_one and matches > 0):
            return
        keyword = "oneOf" if exactly_one else "anyOf"
        if matches > 1:
            self.push(keyword, "matches more than one alternative", path)
            return
        tag = self.tag_of(branches, resolver)
        if tag is not None and isinstance(v, Mapping):
            key, values = tag
            index = next((i for i, t in enumerate(values) if key in v and _equal(v[key], t)), -1)
            if index < 0:
                self.push(keyword, f"expected one of {_list_values(values)}", (*path, key))
            else:
                self.walk(branches[index], resolver, v, path)
            return
        best: tuple[list[SchemaIssue], int] | None = None
        for branch in branches:
            found = _Explainer(self.root, self.resolver)
            found.walk(branch, resolver, v, path)
            if not found.out:
                continue
            declared = self.declared_keys(branch, resolver, v) if isinstance(v, Mapping) else 0
            if (
                best is None
                or declared > best[1]
                or (declared == best[1] and len(found.out[0].path) > len(best[0][0].path))
            ):
                best = (found.out, declared)
        if best is None:
            self.push(keyword, "matches no alternative", path)
        else:
            self.out.extend(best[0])

    def resolved(self, branch: Any, resolver: _Resolver) -> Any:
        if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
            try:
                return resolver.lookup(branch["$ref"]).contents
            except Unresolvable:
                return False
        return branch

    def declared_keys(self, branch: Any, resolver: _Resolver, v: Mapping[str, Any]) -> int:
        node = self.resolved(branch, resolver)
        properties = node.get("properties") if isinstance(node, Mapping) else None
        return sum(1 for key in v if key in properties) if isinstance(properties, Mapping) else 0

    def tag_of(self, branches: list[Any], resolver: _Resolver) -> tuple[str, list[Any]] | None:
        """The property whose ``const`` differs in every branch (a tagged union), if any."""
        nodes = [self.resolved(branch, resolver) for branch in branches]
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
                if all(not isinstance(x, Mapping | list) for x in values) and len(
                    {_json(x) for x in values}
                ) == len(values):
                    return key, values
        return None

    def walk_unevaluated(
        self, node: Mapping[str, Any], resolver: _Resolver, v: Any, path: tuple[str, ...]
    ) -> None:
        checker = self.root.evolve(schema=node, _resolver=resolver)
        rest = node.get("unevaluatedProperties")
        if isinstance(v, Mapping) and rest is not None:
            seen = jsonschema_utils.find_evaluated_property_keys_by_schema(checker, v, node)
            for key in v:
                if key in seen:
                    continue
                if rest is False:
                    self.push("unevaluatedProperties", "unknown field", (*path, key))
                else:
                    self.walk(rest, resolver, v[key], (*path, key))
        rest = node.get("unevaluatedItems")
        if isinstance(v, list) and rest is not None:
            indexes = jsonschema_utils.find_evaluated_item_indexes_by_schema(checker, v, node)
            for index, item in enumerate(v):
                if index in indexes:
                    continue
                if rest is False:
                    self.push("unevaluatedItems", "unexpected item", (*path, str(index)))
                else:
                    self.walk(rest, resolver, item, (*path, str(index)))


def explain(root: Any, schema: Any, resolver: _Resolver, value: Any) -> list[SchemaIssue]:
    """pi-schema's errors of ``value`` (which failed ``root``'s check): one per failing keyword, at
    the value it failed on, in the order pi walks the schema."""
    explainer = _Explainer(root, resolver)
    explainer.walk(schema, resolver, value, ())
    return explainer.out or [SchemaIssue("schema", (), "invalid")]


# --- helpers -------------------------------------------------------------------------------------

_FORMATS: Final = _Draft.FORMAT_CHECKER


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_multiple(value: float, divisor: float) -> bool:
    """A float-tolerant multiple (``0.3`` is a multiple of ``0.1``); a divisor <= 0 never fits."""
    if divisor <= 0:
        return False
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    quotient = value / divisor
    return math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9


def _has_type(value: Any, kind: str) -> bool:
    if kind == "number":
        return _is_number(value) and math.isfinite(value)
    if kind == "integer":
        return _is_number(value) and math.isfinite(value) and float(value).is_integer()
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    return False


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


def _json(value: Any) -> str:
    """``JSON.stringify(value)`` (compact, integral floats without ``.0``)."""
    return json.dumps(_js_value(value), separators=(",", ":"), ensure_ascii=False, default=str)


def _js_value(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _js_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_value(v) for v in value]
    return value


def _list_values(values: list[Any]) -> str:
    if len(values) <= _LISTED_VALUES:
        return _json(values)
    listed = _json(values[:_LISTED_VALUES])
    return f"{listed[:-1]}, ... and {len(values) - _LISTED_VALUES} more]"


def _equal(a: Any, b: Any) -> bool:
    """JSON equality (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _unique(values: Any) -> bool:
    return all(not _equal(values[i], values[j]) for i in range(len(values)) for j in range(i))


def _contains_message(low: float, high: float) -> str:
    if high == math.inf:
        return f"expected at least {js_number(low)} matching {'item' if low == 1 else 'items'}"
    if low == 0:
        return f"expected at most {js_number(high)} matching {'item' if high == 1 else 'items'}"
    return f"expected between {js_number(low)} and {js_number(high)} matching items"


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    """A JavaScript pattern as a Python regex; ``None`` (keyword ignored) if Python rejects it."""
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    try:
        return re.compile(translated)
    except re.error:
        return None


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether a JavaScript ``pattern`` finds a match in ``text`` (an unreadable one never does)."""
    regex = _regex(pattern)
    return regex is not None and regex.search(text) is not None


KNOWN_TYPES: Final = frozenset(
    {"object", "array", "string", "number", "integer", "boolean", "null"}
)
