"""Scoring closed-form answers ``@name[value]``.

Normalisation, applied to both the expected and the given value before they are compared:

- surrounding whitespace, quotes (``'``, ``"``, backticks) and one trailing full stop are dropped;
  runs of whitespace become one space; letters are compared lower-case;
- ``true``/``yes`` and ``false``/``no`` are the same answer;
- a number (the expected value parses as one) matches when the given value, read as a number
  (``1,234.5`` and ``12.5%`` read as 1234.5 and 12.5), lies within half a unit of the expected
  value's last shown decimal: expected ``0.35`` accepts 0.345…0.355, expected ``12`` accepts
  11.5…12.5 — the rounding the task's format asks for;
- a list (the expected value contains ``,``) matches item by item, in order, each item by the
  rules above.

A sub-answer is right when its normalised values match; a task is right when all are.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["AnswerCheck", "normalise", "parse_answers", "score_answers", "values_match"]

_ANSWER = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)\[([^\[\]\n]*)\]")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_GROUPED = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_TRUE, _FALSE = {"true", "yes"}, {"false", "no"}


def parse_answers(text: str) -> dict[str, str]:
    """The ``@name[value]`` pairs in ``text``; a name given twice keeps its last value (a reply
    may repeat the format's example before its own answer)."""
    return {m.group(1): m.group(2) for m in _ANSWER.finditer(text)}


def normalise(value: str) -> str:
    """The text form compared: trimmed, unquoted, one space, lower-case, no final full stop."""
    text = " ".join(value.split()).strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1].strip()
    if text.endswith(".") and not _NUMBER.fullmatch(text):
        text = text[:-1].rstrip()
    text = text.lower()
    if text in _TRUE:
        return "true"
    if text in _FALSE:
        return "false"
    return text


def _as_number(text: str) -> float | None:
    cleaned = text.strip().rstrip("%").strip()
    if _GROUPED.match(cleaned):
        cleaned = cleaned.replace(",", "")
    if not _NUMBER.fullmatch(cleaned):
        return None
    value = float(cleaned)
    return value if math.isfinite(value) else None


def _decimals(text: str) -> int:
    cleaned = text.strip().rstrip("%")
    if "e" in cleaned.lower() or "." not in cleaned:
        return 0
    return len(cleaned.split(".", 1)[1])


def _item_matches(expected: str, given: str) -> bool:
    want, got = normalise(expected), normalise(given)
    number = _as_number(want)
    if number is not None:
        value = _as_number(got)
        if value is None:
            return False
        half_unit = 0.5 * 10.0 ** -_decimals(want)
        return abs(value - number) <= half_unit + 1e-9 * max(1.0, abs(number))
    return want == got


def values_match(expected: str, given: str) -> bool:
    """Whether ``given`` is the ``expected`` answer under the normalisation above."""
    if "," in expected and not _GROUPED.match(expected.strip()):
        wants = [p for p in expected.split(",")]
        gots = [p for p in given.split(",")]
        return len(wants) == len(gots) and all(map(_item_matches, wants, gots))
    return _item_matches(expected, given)


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    name: str
    expected: str
    given: str | None
    """None: the reply has no ``@name[...]``."""
    right: bool


def score_answers(expected: dict[str, str], reply: str) -> list[AnswerCheck]:
    """Check each expected answer against the reply's ``@name[value]`` of that name."""
    given = parse_answers(reply)
    return [
        AnswerCheck(name, want, given.get(name), name in given and values_match(want, given[name]))
        for name, want in expected.items()
    ]
