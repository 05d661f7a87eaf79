"""The scorer: every normalisation rule, both ways."""

from __future__ import annotations

import pytest

from pi_notebook.eval import normalise, parse_answers, score_answers, values_match


def test_parse_answers_reads_every_pair_and_keeps_the_last_of_a_name() -> None:
    text = "Format: @mean[value]\nSo: @mean[5.84] @n[150]\n@label[hello world]"
    assert parse_answers(text) == {"mean": "5.84", "n": "150", "label": "hello world"}
    assert parse_answers("no answers here [1] @ [2]") == {}
    assert parse_answers("@a[x]\n@a[]") == {"a": ""}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("  Sun  ", "sun"),  # whitespace trimmed, lower-case
        ("'sun'", "sun"),  # quotes dropped
        ('"sun"', "sun"),
        ("`sun`", "sun"),
        ("sun.", "sun"),  # one trailing full stop
        ("buick  estate\twagon", "buick estate wagon"),  # runs of whitespace become one space
        ("Yes", "true"),
        ("TRUE", "true"),
        ("no", "false"),
        ("False", "false"),
        ("3.", "3."),  # a number keeps its point
    ],
)
def test_normalise(given: str, expected: str) -> None:
    assert normalise(given) == expected


@pytest.mark.parametrize(
    ("expected", "given", "right"),
    [
        ("0.35", "0.35", True),
        ("0.35", "0.3549", True),  # within half a unit of the second decimal
        ("0.35", "0.345", True),
        ("0.35", "0.356", False),
        ("0.35", "0.3", False),
        ("12", "12.4", True),  # an integer answer: half a unit is 0.5
        ("12", "12.6", False),
        ("-0.1578", "-0.15782", True),
        ("-0.1578", "0.1578", False),  # the sign counts
        ("1226.0", "1,226.0", True),  # thousands separators
        ("1226.0", "1226", True),
        ("38.8", "38.8%", True),  # a percent sign
        ("0.001", "1e-3", True),  # scientific notation
        ("5.84", "about 5.84", False),  # extra words: not a number
        ("5.84", "", False),
        ("USA", "usa", True),
        ("USA", "United States", False),
        ("yes", "True", True),
        ("yes", "no", False),
        ("2010-05", "2010-05", True),
        ("buick estate wagon (sw)", "Buick Estate Wagon (SW).", True),
        ("a, b", "A,b", True),  # lists item by item, in order
        ("a, b", "b, a", False),
        ("1.5, 2", "1.49, 2.1", True),
        ("1.5, 2", "1.5", False),
    ],
)
def test_values_match(expected: str, given: str, right: bool) -> None:
    assert values_match(expected, given) is right


def test_score_answers_checks_every_name() -> None:
    checks = score_answers({"slope": "-0.158", "origin": "Japan"}, "@slope[-0.1578]")
    assert [(c.name, c.given, c.right) for c in checks] == [
        ("slope", "-0.1578", True),
        ("origin", None, False),
    ]
