"""Descriptions from docstrings: the prose and the per-parameter text of Google, NumPy and Sphinx
(``:param x:``) docstrings, read by ``docstring_parser``. This module picks the style (the reading
that finds the most sections, as ``docstring_parser.parse`` does), teaches the Google reader the
section titles it lacks, and shapes the result for tool schemas."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from docstring_parser import Docstring, ParseError, numpydoc, rest
from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

__all__ = ["ParsedDocstring", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    description: str = ""
    """The prose before the first section (summary line and extended description)."""
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name → description, whitespace-normalised; ``*args``/``**kw`` without stars."""


# Google sections docstring_parser does not know: without them a "Note:" block would be read as
# prose, and "Keyword Args:" entries would be lost.
_GOOGLE: Final = GoogleParser(
    [
        *DEFAULT_SECTIONS,
        *(
            Section(title, "param", SectionType.MULTIPLE)
            for title in ("Keyword Args", "Keyword Arguments", "Other Parameters", "Other Params")
        ),
        *(
            Section(title, title.lower(), SectionType.SINGULAR)
            for title in ("Note", "Notes", "Warning", "Warnings", "Todo", "See Also", "References")
        ),
    ]
)


def _sphinx(text: str) -> Docstring:
    """Sphinx fields without the prose paragraphs after the field list (docstring_parser would
    append them to the last field's text)."""
    paragraphs = text.split("\n\n")
    while len(paragraphs) > 1 and not paragraphs[-1].startswith((":", " ")):
        if not any(p.startswith(":") or "\n:" in p for p in paragraphs[:-1]):
            break
        paragraphs.pop()
    return rest.parse("\n\n".join(paragraphs))


_READERS: Final[tuple[Callable[[str], Docstring], ...]] = (_sphinx, _GOOGLE.parse, numpydoc.parse)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split ``doc`` into its description and its parameter descriptions (any of three styles)."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    text = inspect.cleandoc(doc)
    readings = []
    for read in _READERS:
        try:
            readings.append(read(text))
        except ParseError:
            continue
    if not readings:  # malformed in every style: all of it is prose
        return ParsedDocstring(text)
    parsed = max(readings, key=lambda reading: len(reading.meta))  # the first on a tie
    params: dict[str, str] = {}
    for param in parsed.params:
        description = param.description or ""
        for name in param.arg_name.split(","):  # NumPy's ``x, y : float``
            params[name.strip().lstrip("*")] = " ".join(description.split())
    return ParsedDocstring((parsed.description or "").strip(), params)
