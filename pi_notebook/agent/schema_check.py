"""jsonschema, adapted to check as TypeBox does for pi: keywords visited in TypeBox's order, one
``required`` error naming every missing property, an ``additionalProperties`` schema checked per
extra property, a ``false`` schema reported where it stands, the draft-04 spellings
(``exclusiveMinimum: true``, ``items: [...]``), JavaScript regex groups, a float-tolerant
``multipleOf``, limits that are not numbers ignored, and TypeBox's message for each keyword.

The engine is jsonschema's draft 2020-12 (as pydantic emits it; ``format`` is not checked);
``validation`` builds on this module to coerce and to word the error the model reads.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import Any, Final

import jsonschema
from jsonschema.exceptions import ValidationError
from referencing.jsonschema import DRAFT202012

__all__ = [
    "KNOWN_TYPES",
    "SchemaIssue",
    "TypeBoxValidator",
    "issues",
    "js_number",
    "pattern_matches",
]


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
TypeBoxValidator: Final = jsonschema.validators.create(
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


_plain_descend = TypeBoxValidator.descend


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


TypeBoxValidator.descend = _descend  # type: ignore[method-assign, assignment]


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


def issues(errors: Iterable[ValidationError], limit: int) -> list[SchemaIssue]:
    """jsonschema's errors as pi reports them: unions' member errors first, at most ``limit``."""
    return [_issue(error) for error in islice(_flattened(errors), limit)]


def _flattened(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    """TypeBox lists a failed union's member errors before the union's own error."""
    for error in errors:
        if error.validator in ("anyOf", "oneOf"):
            yield from _flattened(error.context or ())
        yield error


# --- helpers -------------------------------------------------------------------------------------

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


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether a JavaScript ``pattern`` finds a match in ``text`` (an unreadable one never does)."""
    regex = _regex(pattern)
    return regex is not None and regex.search(text) is not None


def _escape_pointer(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


KNOWN_TYPES: Final = frozenset(
    {"object", "array", "string", "number", "integer", "boolean", "null"}
)
