"""A small docstring parser: the prose description and per-parameter descriptions of Google, NumPy
and Sphinx (``:param x:``) style docstrings. Good enough for tool descriptions; not a full
reStructuredText reader."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["ParsedDocstring", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    description: str = ""
    """The prose before the first section (summary line and extended description)."""
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name → description, whitespace-normalised; ``*args``/``**kw`` without stars."""


_PARAM_SECTIONS: Final = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "other params",
    }
)
_OTHER_SECTIONS: Final = frozenset(
    {
        "attributes",
        "example",
        "examples",
        "methods",
        "note",
        "notes",
        "raises",
        "references",
        "return",
        "returns",
        "see also",
        "todo",
        "warning",
        "warnings",
        "warns",
        "yield",
        "yields",
    }
)
_SECTIONS: Final = _PARAM_SECTIONS | _OTHER_SECTIONS

_SPHINX_FIELD = re.compile(r":\w[^:]*:")
_SPHINX_PARAM = re.compile(
    r":(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\**(\w+)\s*:(.*)"
)
_GOOGLE_ENTRY = re.compile(r"\**(\w+)\s*(?:\([^)]*\))?\s*:(.*)")
_NUMPY_ENTRY = re.compile(r"(\**\w+(?:\s*,\s*\**\w+)*)\s*(?::.*)?")
_DASHES = re.compile(r"-{3,}")


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split ``doc`` into its description and its parameter descriptions (any of three styles)."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    sections = _find_sections(lines)
    first = min([start for start, _, _ in sections] + [len(lines)])
    description = "\n".join(lines[:first]).strip()
    params: dict[str, str] = {}
    for start, body, style in sections:
        if style == "sphinx":
            _sphinx_params(lines[start:body], params)
        elif _header_name(lines[start], style) in _PARAM_SECTIONS:
            block = lines[body : _section_end(lines, sections, start, style)]
            (_numpy_params if style == "numpy" else _google_params)(block, params)
    return ParsedDocstring(description, params)


def _find_sections(lines: list[str]) -> list[tuple[int, int, str]]:
    """(header line, first body line, style) for every section; a Sphinx field list counts as one
    section running to its end."""
    found: list[tuple[int, int, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if stripped.lower() in _SECTIONS and _DASHES.fullmatch(following):
            found.append((index, index + 2, "numpy"))
            index += 2
            continue
        header = stripped.endswith(":") and stripped[:-1].strip().lower() in _SECTIONS
        if header and not line[:1].isspace():
            found.append((index, index + 1, "google"))
            index += 1
            continue
        if _SPHINX_FIELD.match(stripped) and not line[:1].isspace():
            end = index + 1
            while end < len(lines) and not _ends_sphinx_list(lines, end):
                end += 1
            found.append((index, end, "sphinx"))
            index = end
            continue
        index += 1
    return found


def _ends_sphinx_list(lines: list[str], index: int) -> bool:
    """A field list ends at a blank line followed by unindented prose that is not another field."""
    if lines[index].strip():
        return False
    following = next((line for line in lines[index + 1 :] if line.strip()), None)
    if following is None:
        return True
    return not following[:1].isspace() and not _SPHINX_FIELD.match(following.strip())


def _header_name(line: str, style: str) -> str:
    name = line.strip()
    return (name[:-1] if style == "google" else name).strip().lower()


def _section_end(
    lines: list[str], sections: list[tuple[int, int, str]], start: int, style: str
) -> int:
    """Where a section's body ends: at the next section, and for Google style also at the first
    unindented line (its body is indented under the header)."""
    end = min([s for s, _, _ in sections if s > start] + [len(lines)])
    if style == "google":
        for index in range(start + 1, end):
            if lines[index].strip() and not lines[index][:1].isspace():
                return index
    return end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def _google_params(block: list[str], params: dict[str, str]) -> None:
    """Entries ``name (type): text`` at the block's base indentation; deeper lines continue."""
    content = [line for line in block if line.strip()]
    if not content:
        return
    base = min(_indent(line) for line in content)
    name: str | None = None
    parts: list[str] = []
    for line in content:
        match = _GOOGLE_ENTRY.fullmatch(line.strip()) if _indent(line) == base else None
        if match:
            if name:
                params[name] = _join(parts)
            name, parts = match.group(1), [match.group(2)]
        elif name:
            parts.append(line)
    if name:
        params[name] = _join(parts)


def _numpy_params(block: list[str], params: dict[str, str]) -> None:
    """Entries ``name : type`` (or ``a, b : type``) at base indentation, the text indented below."""
    content = [line for line in block if line.strip()]
    if not content:
        return
    base = min(_indent(line) for line in content)
    names: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        for entry in names:
            params[entry] = _join(parts)

    for line in content:
        match = _NUMPY_ENTRY.fullmatch(line.strip()) if _indent(line) == base else None
        if match:
            flush()
            names = [n.strip().lstrip("*") for n in match.group(1).split(",")]
            parts = []
        elif names:
            parts.append(line)
    flush()


def _sphinx_params(block: list[str], params: dict[str, str]) -> None:
    """``:param [type] name: text`` fields; following indented lines continue the text."""
    name: str | None = None
    parts: list[str] = []
    for line in block:
        stripped = line.strip()
        if _SPHINX_FIELD.match(stripped) and not line[:1].isspace():
            if name:
                params[name] = _join(parts)
            match = _SPHINX_PARAM.fullmatch(stripped)
            name, parts = (match.group(1), [match.group(2)]) if match else (None, [])
        elif name:
            parts.append(stripped)
    if name:
        params[name] = _join(parts)
