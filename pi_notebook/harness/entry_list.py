"""A session's entries in file order, each kept as its line until it is first read.

Opening a file checks every line's JSON and its structure (id, parent, type, timestamp: what
the tree needs, kept in :class:`~pi_notebook.harness.session_index.SessionIndex`); the typed
entry, with its message, is built the first time it is read, and replaces the line. A line
whose content turns out not to be an entry is reported then, naming the file and line: refused
with :class:`~pi_notebook.harness.SessionFileError`, or, read leniently, kept with a
:class:`~pi_notebook.harness.SessionFileWarning` as an
:class:`~pi_notebook.harness.entries.UnknownEntry` (its fields kept, never part of the context).
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from pydantic import TypeAdapter, ValidationError

from .._gc import gc_paused
from .entries import KnownEntry, SessionEntry, UnknownEntry

__all__ = [
    "ENTRY_ADAPTER",
    "EntryList",
    "SessionFileError",
    "SessionFileWarning",
    "invalid_reason",
    "unknown_type",
    "validate_entry_json",
    "validate_entry_python",
]

ENTRY_ADAPTER: TypeAdapter[KnownEntry] = TypeAdapter(KnownEntry)
_UNKNOWN = UnknownEntry.__pydantic_validator__


class SessionFileError(ValueError):
    """A session file that cannot be read as one: names the file and (when known) the line."""

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason


class SessionFileWarning(UserWarning):
    """Something in a session file was dropped or repaired (torn last line, skipped line)."""


def unknown_type(exc: ValidationError) -> bool:
    """True when validation failed only because the entry's ``type`` is not one we know."""
    errors = exc.errors(include_url=False)
    return len(errors) == 1 and errors[0]["type"] == "union_tag_invalid"


def validate_entry_json(line: bytes) -> SessionEntry:
    """One entry line: a known entry, or an :class:`UnknownEntry` for a type we do not know."""
    try:
        entry: KnownEntry = ENTRY_ADAPTER.validator.validate_json(line)
    except ValidationError as exc:
        if not unknown_type(exc):
            raise
        unknown: UnknownEntry = _UNKNOWN.validate_json(line)
        return unknown
    return entry


def validate_entry_python(data: Any) -> SessionEntry:
    try:
        return ENTRY_ADAPTER.validate_python(data)
    except ValidationError as exc:
        if not unknown_type(exc):
            raise
        unknown: UnknownEntry = _UNKNOWN.validate_python(data)
        return unknown


def invalid_reason(exc: ValidationError) -> str:
    """What is wrong with a line, as the errors that name it say."""
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return f"not valid JSON ({error['msg']})"
    loc = ".".join(str(part) for part in error["loc"])
    return f"invalid entry: {loc}: {error['msg']}" if loc else f"invalid entry: {error['msg']}"


class EntryList(Sequence[SessionEntry]):
    """Entries by position: typed entries, or the lines of those not read yet.

    ``lines`` holds each entry's line number in ``source`` (for the errors of a line read
    late); a list made of entries alone has none. ``strict`` says whether a line whose content
    is not an entry raises when read, or is kept as an unknown entry with a warning; an
    application may turn it off after a strict open (the notebook does: a damaged line found
    by a run must not fail every run). Reading is not thread-safe beyond what the
    GIL gives: two threads may build the same entry, and either copy is kept.
    """

    __slots__ = ("_items", "_lines", "source", "strict")

    def __init__(
        self,
        items: Iterable[SessionEntry | bytes] = (),
        *,
        lines: array[int] | None = None,
        source: str = "<memory>",
        strict: bool = True,
    ) -> None:
        self._items: list[SessionEntry | bytes] = list(items)
        self._lines = lines
        self.source = source
        self.strict = strict

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, position: int) -> SessionEntry: ...
    @overload
    def __getitem__(self, position: slice) -> list[SessionEntry]: ...
    def __getitem__(self, position: int | slice) -> SessionEntry | list[SessionEntry]:
        if isinstance(position, slice):
            return self.take(range(len(self._items))[position])
        item = self._items[position]
        if type(item) is bytes:
            return self._read(position if position >= 0 else len(self._items) + position)
        return item  # type: ignore[return-value]

    def __iter__(self) -> Iterator[SessionEntry]:
        if self.cold():
            yield from self.take(range(len(self._items)))
        else:
            yield from self._items  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"<EntryList {len(self._items)} entries, {self.cold()} not read>"

    def cold(self) -> int:
        """How many entries are still lines."""
        return sum(1 for item in self._items if type(item) is bytes)

    def append(self, entry: SessionEntry) -> None:
        self._items.append(entry)
        if self._lines is not None:
            self._lines.append(0)  # not from the file: never read late

    def extend(self, entries: Iterable[SessionEntry]) -> None:
        for entry in entries:
            self.append(entry)

    def take(self, positions: Sequence[int]) -> list[SessionEntry]:
        """The entries at ``positions``, the ones not read yet built in one go (the collector
        paused: they are long-lived and hold no cycles)."""
        items = self._items
        chosen = list(map(items.__getitem__, positions))
        if bytes not in set(map(type, chosen)):
            return chosen  # type: ignore[return-value]
        # The known types straight from the validator; anything else (an unknown type, an
        # invalid line) through ``_read``, which reports it.
        validate = ENTRY_ADAPTER.validator.validate_json
        with gc_paused():
            for at, item in enumerate(chosen):
                if type(item) is bytes:
                    position = positions[at]
                    try:
                        entry = validate(item)
                    except ValidationError:
                        entry = self._read(position)
                    else:
                        items[position] = entry
                    chosen[at] = entry
        return chosen  # type: ignore[return-value]

    def _read(self, position: int) -> SessionEntry:
        line = self._items[position]
        if type(line) is not bytes:  # another thread built it meanwhile
            return line  # type: ignore[return-value]
        try:
            entry = validate_entry_json(line)
        except ValidationError as exc:
            entry = self._unreadable(position, line, invalid_reason(exc))
        self._items[position] = entry
        return entry

    def _unreadable(self, position: int, line: bytes, reason: str) -> SessionEntry:
        number = None if self._lines is None else self._lines[position] or None
        if self.strict:
            raise SessionFileError(self.source, number, reason)
        warnings.warn(
            f"{self.source}:{number}: {reason}; kept as an entry of unknown content",
            SessionFileWarning,
            stacklevel=4,
        )
        unknown: UnknownEntry = _UNKNOWN.validate_json(line)  # the structure was checked
        return unknown
