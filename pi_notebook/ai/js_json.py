"""Numbers and JSON as JavaScript writes them: ``String(n)`` and ``JSON.stringify``.

pi writes session files, error texts and size estimates with JavaScript, whose one number type
prints an integral value without a fraction (``1.0`` is ``1``) below 1e21 and switches to
exponent notation only outside 1e-7 ≤ |x| < 1e21. Python's ``repr`` differs in both places
(``1.0``, ``1e-05``, ``1e+20``), so everything here that must match pi byte for byte goes through
this module.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

__all__ = ["js_number", "js_value", "stringify", "stringify_owned"]

_EXPONENT_FROM: Final = 1e21
"""From here on JavaScript writes even an integral number in exponent notation."""


def js_number(value: float) -> str:
    """``String(value)``: ``1``, ``0.5``, ``0.00001``, ``1.5e-7``, ``1e+21``, ``NaN``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < _EXPONENT_FROM:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if -7 < power < 21:
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


class _NeedsSlowPath(Exception):
    """A float that ``json.dumps`` would write differently from JavaScript even as a float."""


def _js_float(value: float) -> float | int | None:
    """``value`` as the Python number ``json.dumps`` writes the way JavaScript does."""
    if value.is_integer() and abs(value) < _EXPONENT_FROM:
        return int(value)
    if not math.isfinite(value):
        return None  # JSON.stringify writes NaN and the infinities as null
    if abs(value) < 1e-4:  # Python writes 1e-05, JavaScript 0.00001
        raise _NeedsSlowPath
    return value


def _rewrite_floats(container: dict[str, Any] | list[Any]) -> None:
    """Replace, in place, the floats of JSON data by :func:`_js_float`'s numbers."""
    items = container.items() if type(container) is dict else enumerate(container)
    for key, value in items:
        kind = type(value)
        if kind is float:
            container[key] = _js_float(value)  # type: ignore[index]
        elif kind is dict or kind is list:
            _rewrite_floats(value)


def js_value(value: Any) -> Any:
    """A copy of ``value`` whose floats print as JavaScript prints them (``1.0`` → ``1``,
    NaN → ``None``); mappings and tuples become dicts and lists, keys strings."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < _EXPONENT_FROM:
            return int(value)
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): js_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [js_value(v) for v in value]
    return value


def _encode_slow(value: Any, default: Callable[[Any], Any] | None) -> str:
    if isinstance(value, dict):
        items = (
            _encode_slow(str(k), default) + ":" + _encode_slow(v, default) for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode_slow(v, default) for v in value) + "]"
    if isinstance(value, float):
        return js_number(value) if math.isfinite(value) else "null"
    return json.dumps(value, ensure_ascii=False, default=default)


def stringify_owned(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """:func:`stringify` for data the caller owns and gives up: its floats are rewritten in
    place (no copy, which the session writer, one call per entry, cannot afford)."""
    try:
        if type(value) is dict or type(value) is list:
            _rewrite_floats(value)
        elif type(value) is float:
            value = _js_float(value)
    except _NeedsSlowPath:
        return _encode_slow(value, default)
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=default
    )


def stringify(
    value: Any, *, indent: int | None = None, default: Callable[[Any], Any] | None = None
) -> str:
    """``JSON.stringify(value)`` (compact), or ``JSON.stringify(value, null, indent)``.

    ``default`` converts what JSON cannot hold (as ``json.dumps`` does); without it such a value
    raises ``TypeError``.
    """
    if indent is None:
        return stringify_owned(
            copy.deepcopy(value) if type(value) in (dict, list) else value, default=default
        )
    # Indented output is for people (error texts); a float below 1e-4 keeps Python's spelling.
    return json.dumps(js_value(value), indent=indent, ensure_ascii=False, default=default)
