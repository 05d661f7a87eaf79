"""A session's entries in file order, each kept as its line until it is first read.

Opening a file checks every line's JSON and its structure (id, parent, type, timestamp: what
the tree needs, kept in :class:`~pi_notebook.harness.session_index.SessionIndex`); the typed
entry, with its message, is built the first time it is read, and replaces the line. Reading a
context's messages needs the messages only: a message entry's line then gives way to its
message alone, and the entry around it is made from the index's fields when the entry itself
is first read (the same entry, holding the same message object; an entry object per message of
a long branch was a quarter of the memory and time a context cost). A line whose content turns
out not to be an entry is reported then, naming the file and line: refused with
:class:`~pi_notebook.harness.SessionFileError`, or, read leniently, kept with a
:class:`~pi_notebook.harness.SessionFileWarning` as an
:class:`~pi_notebook.harness.entries.UnknownEntry` (its fields kept, never part of the context).
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Required, get_args, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from .._gc import gc_paused
from ..ai.construct import construct
from ..ai.fields_sets import SharedFieldsSet, share_fields_sets
from ..ai.types import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from .entries import KnownEntry, MessageEntry, SessionEntry, UnknownEntry
from .messages import CustomMessage, HarnessMessage

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


@with_config(ConfigDict(extra="allow"))
class _MessageLine(TypedDict, total=False):
    """A message entry's line read for its message: the entry's own fields pass through (the
    open checked them), any other key is kept, so that a line with more than these five is
    read as a whole entry instead (its extra keys belong to the entry)."""

    type: Any
    id: Any
    parentId: Any
    timestamp: Any
    message: Required[HarnessMessage]


_MESSAGE_LINE = TypeAdapter(_MessageLine).validator.validate_json
_MESSAGE_TYPES: Final = frozenset(get_args(get_args(HarnessMessage)[0]))
"""The classes of the messages held in place of their entries."""
_ENTRY_FIELDS: Final = SharedFieldsSet(MessageEntry.model_fields)
"""The fields set of a message entry made from its message: every field is given in the file,
and entries are frozen, so one set serves all of them (a copy of an entry copies its set)."""


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


_SHARE_BATCH = 64
"""Messages read before their fields sets are shared (a batch still in the CPU's cache)."""
_LISTED: Final = frozenset(
    {SystemMessage, UserMessage, AssistantMessage, ToolResultMessage, CustomMessage}
)
"""The message classes whose ``content`` may be a list of blocks."""
_get_dict: Final = vars(BaseModel)["__dict__"].__get__


def _share_fields_sets(messages: list[HarnessMessage]) -> None:
    """Messages read to stay share their fields sets and empty extras, and those of their
    usage, cost and content blocks (see :func:`~pi_notebook.ai.fields_sets.share_fields_sets`)."""
    models: list[BaseModel] = []
    add, more, listed = models.append, models.extend, _LISTED
    for message in messages:
        add(message)
        kind = type(message)
        if kind in listed:
            values = _get_dict(message)
            content = values["content"]
            if type(content) is list:
                more(content)
            if kind is AssistantMessage:
                usage = values["usage"]
                add(usage)
                add(_get_dict(usage)["cost"])
    share_fields_sets(models)


def invalid_reason(exc: ValidationError) -> str:
    """What is wrong with a line, as the errors that name it say."""
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return f"not valid JSON ({error['msg']})"
    loc = ".".join(str(part) for part in error["loc"])
    return f"invalid entry: {loc}: {error['msg']}" if loc else f"invalid entry: {error['msg']}"


class EntryList(Sequence[SessionEntry]):
    """Entries by position: typed entries, the lines of those not read yet, or the messages
    of message entries read for a context only (:meth:`messages`; the entry is made when read).

    ``lines`` holds each entry's line number in ``source`` (for the errors of a line read
    late); a list made of entries alone has none. ``strict`` says whether a line whose content
    is not an entry raises when read, or is kept as an unknown entry with a warning; an
    application may turn it off after a strict open (the notebook does: a damaged line found
    by a run must not fail every run). Reading is not thread-safe beyond what the
    GIL gives: two threads may build the same entry, and either copy is kept.
    """

    __slots__ = ("_fields", "_items", "_lines", "source", "strict")

    def __init__(
        self,
        items: Iterable[SessionEntry | bytes] = (),
        *,
        lines: array[int] | None = None,
        source: str = "<memory>",
        strict: bool = True,
    ) -> None:
        self._items: list[SessionEntry | HarnessMessage | bytes] = list(items)
        self._lines = lines
        self.source = source
        self.strict = strict
        self._fields: tuple[list[str], list[str | None], list[str | None]] | None = None
        """The ids, parent ids and timestamps of the entries (the index's lists, see
        :meth:`hold_messages`)."""

    def hold_messages(
        self, ids: list[str], parent_ids: list[str | None], timestamps: list[str | None]
    ) -> None:
        """Let :meth:`messages` keep a message entry's message alone: its entry is made from
        these lists (the index's own, which grow with the session) when it is first read."""
        self._fields = (ids, parent_ids, timestamps)

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
        kind = type(item)
        if kind is bytes:
            return self._read(position if position >= 0 else len(self._items) + position)
        if kind in _MESSAGE_TYPES:
            return self._entry(position if position >= 0 else len(self._items) + position)
        return item  # type: ignore[return-value]

    def __iter__(self) -> Iterator[SessionEntry]:
        if self._unbuilt(self._items):
            yield from self.take(range(len(self._items)))
        else:
            yield from self._items  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"<EntryList {len(self._items)} entries, {self.cold()} not read>"

    def cold(self) -> int:
        """How many entries are still lines."""
        return sum(1 for item in self._items if type(item) is bytes)

    @staticmethod
    def _unbuilt(items: list[Any]) -> bool:
        """Whether some of ``items`` are lines or messages held without their entry."""
        kinds = set(map(type, items))
        return bytes in kinds or not kinds.isdisjoint(_MESSAGE_TYPES)

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
        chosen: list[Any] = list(map(items.__getitem__, positions))
        if not self._unbuilt(chosen):
            return chosen
        # The known types straight from the validator; anything else (an unknown type, an
        # invalid line) through ``_read``, which reports it.
        validate = ENTRY_ADAPTER.validator.validate_json
        held = _MESSAGE_TYPES
        with gc_paused():
            for at, item in enumerate(chosen):
                kind = type(item)
                if kind is bytes:
                    position = positions[at]
                    try:
                        entry = validate(item)
                    except ValidationError:
                        entry = self._read(position)
                    else:
                        items[position] = entry
                    chosen[at] = entry
                elif kind in held:
                    chosen[at] = self._entry(positions[at])
        return chosen

    def messages(self, positions: Sequence[int]) -> list[HarnessMessage] | None:
        """The messages of the message entries at ``positions`` (in that order), or ``None``
        when one of them is not a message entry (an invalid line read leniently, or a
        hand-made list). Where :meth:`hold_messages` allows it, a line not read yet is read
        for its message alone, which then stands in for the line; the entry is made when
        first read."""
        items = self._items
        chosen: list[Any] = list(map(items.__getitem__, positions))
        kinds = set(map(type, chosen))
        if kinds <= _MESSAGE_TYPES:
            return chosen
        if kinds == {MessageEntry}:
            return [entry.message for entry in chosen]
        read = _MESSAGE_LINE if self._fields is not None else None
        held = _MESSAGE_TYPES
        fresh: list[HarnessMessage] = []
        with gc_paused():
            for at, item in enumerate(chosen):
                kind = type(item)
                if kind in held:
                    continue
                if kind is bytes and read is not None:
                    try:
                        fields = read(item)
                    except ValidationError:
                        pass  # reported by the whole entry's read
                    else:
                        if len(fields) == len(_ENTRY_FIELDS):  # no key of its own
                            message = chosen[at] = items[positions[at]] = fields["message"]
                            fresh.append(message)
                            if len(fresh) == _SHARE_BATCH:  # while they are in the cache
                                _share_fields_sets(fresh)
                                fresh.clear()
                            continue
                entry = self._read(positions[at]) if kind is bytes else item
                if type(entry) is not MessageEntry:
                    return None
                chosen[at] = entry.message
            if fresh:
                _share_fields_sets(fresh)
        return chosen

    def _entry(self, position: int) -> SessionEntry:
        """The entry of a message held alone (see :meth:`messages`), made and kept."""
        message = self._items[position]
        if type(message) not in _MESSAGE_TYPES:  # another thread made it meanwhile
            return message  # type: ignore[return-value]
        assert self._fields is not None
        ids, parent_ids, timestamps = self._fields
        values = {
            "type": "message",
            "id": ids[position],
            "parent_id": parent_ids[position],
            "timestamp": timestamps[position],
            "message": message,
        }
        entry = construct(MessageEntry, values, _ENTRY_FIELDS)
        self._items[position] = entry
        return entry

    def _read(self, position: int) -> SessionEntry:
        line = self._items[position]
        if type(line) is not bytes:  # another thread built it meanwhile
            return self[position]
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
