"""The JSONL codec of session files: pi's exact bytes out, checked records in, v1/v2 migrated.

Writing reproduces ``JSON.stringify``: compact separators, non-ASCII kept, and JavaScript number
formatting (``0`` not ``0.0``, ``1e-7`` not ``1e-07``). Reading checks every line's JSON and
structure (id, parent id, type, timestamp) with pydantic-core straight from bytes (jiter
underneath), with the garbage collector paused, and keeps the lines of the common entry types
as they are: each becomes its typed entry when first read (:mod:`.entry_list`). A file is read a
slice at a time, and the entries' structure is filed a batch of lines at a time in C-level
passes, unless the batch needs the per-entry checks (a skipped line, a repeated id, a leaf
move): those go entry by entry, in line order.

Like pi 1.6, a line of an entry type this version does not know is kept (as an
:class:`~pi_notebook.harness.entries.UnknownEntry`). Unlike pi, which would loop forever on it,
a file whose parent ids form a cycle is refused naming the line (``strict=False`` repairs it:
the entry of the cycle that comes first in the file becomes a root).
"""

from __future__ import annotations

import os
import warnings
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from operator import ge
from typing import Any, Required, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json
from typing_extensions import TypedDict

from .._gc import gc_paused
from ..ai.js_json import stringify_owned
from .entries import LeafEntry, SessionEntry, SessionHeader, is_system_entry
from .entry_list import (
    ENTRY_ADAPTER,
    EntryList,
    SessionFileError,
    SessionFileWarning,
    invalid_reason,
    validate_entry_json,
    validate_entry_python,
)
from .migration import migrated_records
from .session_file import utf8_line
from .session_index import LEAF_TYPE, SessionIndex
from .stamps import SESSION_VERSION

__all__ = [
    "ENTRY_ADAPTER",
    "DecodedSession",
    "SessionFileError",
    "SessionFileWarning",
    "declared_version",
    "decode_session",
    "decode_session_file",
    "encode_record",
    "gc_paused",
    "validate_entry_json",
]

_BATCH_LINES = 512
"""Lines checked before their structure is filed in one C-level pass per field."""
_SLICE_BYTES = 1 << 18
"""How much of a session file is read and cut into lines at a time."""


class _Role(TypedDict, total=False):
    """A message read for its role alone (its other keys are skipped)."""

    role: str


class _Structure(TypedDict, total=False):
    """What opening a file reads of an entry line (the rest is read with the entry): the tree's
    fields, and a message's role (system messages are indexed: a context replays them)."""

    type: Required[str]
    id: Required[str]
    parentId: str | None
    timestamp: str | None
    message: _Role


_STRUCTURE = TypeAdapter(_Structure).validator
_READ_LATER = {
    kind: kind
    for kind in (
        "message",
        "thinking_level_change",
        "model_change",
        "active_tools_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "usage",
    )
}
"""The entry types kept as lines until read (one string object each). The others are read at
open: leaf moves, labels, names and context edits change how the tree reads, and a type this
version does not know is checked as an unknown entry there and then."""


# --- writing -------------------------------------------------------------------------------------


def encode_record(record: SessionHeader | SessionEntry) -> bytes:
    """One line of a session file, ``\\n`` included, byte-for-byte as pi would write it."""
    data = record.model_dump(mode="json", by_alias=True, exclude_none=True)
    return utf8_line(stringify_owned(data) + "\n")


# --- reading -------------------------------------------------------------------------------------


@dataclass(slots=True)
class DecodedSession:
    header: SessionHeader
    entries: EntryList
    migrated_from: int | None
    """The file's version when it was older than 3 (the caller should rewrite it), else None."""
    index: SessionIndex
    """The entries' structure, collected while each line was checked."""


class _Decoder:
    """Checks lines, raising (strict) or warning and skipping (lenient) in line order."""

    def __init__(self, source: str, strict: bool) -> None:
        self.source = source
        self.strict = strict
        self.entries: list[SessionEntry | bytes] = []
        """Typed entries, and the lines of the entries read later."""
        self.lines = array("I")  # the line number of each entry
        self.ids: dict[str, int] = {}
        """Each entry's position (checks duplicates and forward parents; the index keeps it)."""
        self.id_list: list[str] = []
        self.parent_ids: list[str | None] = []
        self.types: list[str] = []
        self.timestamps: list[str | None] = []
        self.parent_positions: list[int] = []
        """Each entry's parent's position when it came earlier in the file, else -1."""
        self.systems: list[int] = []
        """The positions of the system messages."""
        self.forward = False
        """Some entry's parent id was not (yet) seen when it was added: only then can there be
        a cycle (a parent always earlier in the file makes one impossible)."""

    def reject(self, line: int, reason: str, stacklevel: int = 4) -> None:
        if self.strict:
            raise SessionFileError(self.source, line, reason)
        warnings.warn(
            f"{self.source}:{line}: skipped: {reason}", SessionFileWarning, stacklevel=stacklevel
        )

    def add_entry(self, line: int, entry: SessionEntry, stacklevel: int = 5) -> None:
        position = len(self.entries)
        self.add(line, entry, entry.id, entry.parent_id, entry.type, entry.timestamp, stacklevel)
        if len(self.entries) > position and is_system_entry(entry):
            self.systems.append(position)

    def add(
        self,
        line: int,
        item: SessionEntry | bytes,
        entry_id: str,
        parent_id: str | None,
        kind: str,
        timestamp: str | None,
        stacklevel: int = 4,
    ) -> None:
        """One entry (or its line), with the checks that refuse it (their messages name the
        line)."""
        if entry_id in self.ids:
            self.reject(line, f"duplicate entry id {entry_id!r}", stacklevel)
        elif (
            isinstance(item, LeafEntry)
            and item.target_id is not None
            and item.target_id not in self.ids
        ):
            self.reject(line, f"leaf entry targets unknown entry {item.target_id!r}", stacklevel)
        else:
            up = -1 if parent_id is None else self.ids.get(parent_id, -1)
            if parent_id is not None and up < 0:
                self.forward = True
            self.parent_positions.append(up)
            self.ids[entry_id] = len(self.entries)
            self.entries.append(item)
            self.lines.append(line)
            self.id_list.append(entry_id)
            self.parent_ids.append(parent_id if up < 0 else self.id_list[up])
            self.types.append(kind)
            self.timestamps.append(timestamp)

    def take(self, number: int, lines: Sequence[bytes]) -> None:
        """Check the entry lines ``lines`` (the first is line ``number``) and add them.

        A line of a type in :data:`_READ_LATER` whose structure is sound is kept as it is; any
        other line is validated into its entry now. The structure is filed a batch at a time,
        in one C-level pass per field (:meth:`_file`), when the batch needs none of
        :meth:`add`'s checks. A batch with a skipped line goes through :meth:`add` in line
        order, so that errors and warnings come out exactly in the order of the file.
        """
        structure = _STRUCTURE.validate_json
        later = _READ_LATER
        items: list[SessionEntry | bytes] = []
        ids: list[str] = []
        parents: list[str | None] = []
        kinds: list[str] = []
        stamps: list[str | None] = []
        skipped: list[tuple[int, int, str | None]] | None = None
        """(entries before it, line number, reason or None for a blank line) of each line
        that is no entry."""
        systems: list[int] = []
        """Where the system messages are among ``items``."""
        for line in lines:
            try:
                fields = structure(line)
            except ValidationError:
                pass
            else:
                kind = later.get(fields["type"])
                stamp = fields.get("timestamp")
                if kind is not None and type(stamp) is str and "parentId" in fields:
                    message = fields.get("message")
                    if message is not None and message.get("role") == "system":
                        systems.append(len(items))
                    items.append(line)
                    ids.append(fields["id"])
                    parents.append(fields["parentId"])
                    kinds.append(kind)
                    stamps.append(stamp)
                    continue
            try:
                entry = validate_entry_json(line)
            except ValidationError as exc:
                if skipped is None:
                    skipped = []
                here = number + len(items) + len(skipped)
                blank = not line or line.isspace()
                skipped.append((len(items), here, None if blank else invalid_reason(exc)))
                continue
            if is_system_entry(entry):
                systems.append(len(items))
            items.append(entry)
            ids.append(entry.id)
            parents.append(entry.parent_id)
            kinds.append(entry.type)
            stamps.append(entry.timestamp)

        def add(at: int, line_number: int) -> None:
            position = len(self.entries)
            self.add(line_number, items[at], ids[at], parents[at], kinds[at], stamps[at], 6)
            if len(self.entries) > position and at in systems:
                self.systems.append(position)

        if skipped is None:
            base = len(self.entries)
            if self._file(number, items, ids, parents, kinds, stamps):
                self.systems.extend(base + at for at in systems)
            else:
                for at, line_number in enumerate(range(number, number + len(items))):
                    add(at, line_number)
            return
        line_number, done = number, 0
        for before, here, reason in skipped:
            for at in range(done, before):
                add(at, line_number)
                line_number += 1
            done = before
            if reason is not None:
                self.reject(here, reason, 5)
            line_number += 1
        for at in range(done, len(items)):
            add(at, line_number)
            line_number += 1

    def _file(
        self,
        number: int,
        items: list[SessionEntry | bytes],
        ids: list[str],
        parents: list[str | None],
        kinds: list[str],
        stamps: list[str | None],
    ) -> bool:
        """:meth:`add` for consecutive lines, a pass per field; ``False`` (nothing added) when
        an entry needs :meth:`add`'s checks: a leaf move, or an id seen before."""
        count = len(items)
        if not count:
            return True
        positions = self.ids
        if LEAF_TYPE in kinds or not positions.keys().isdisjoint(ids):
            return False
        base = len(self.entries)
        new = range(base, base + count)
        positions.update(zip(ids, new, strict=True))
        if len(positions) != base + count:  # an id twice in the batch
            for entry_id in ids:
                positions.pop(entry_id, None)
            return False
        # a parent's position, the entry's own or a later one is not a parent seen before it
        # map() with dict.get runs in C (a None parent id is no key either)
        lookup = cast("Callable[[str | None, int], int]", positions.get)
        ups = list(map(lookup, parents, repeat(-1)))
        if any(map(ge, ups, new)):
            ups = [-1 if up >= own else up for up, own in zip(ups, new, strict=True)]
        if ups.count(-1) != parents.count(None):
            self.forward = True
        self.entries.extend(items)
        self.lines.extend(range(number, number + count))
        id_list = self.id_list
        id_list.extend(ids)
        # a parent id is the parent's own id string: one string an id, not two
        self.parent_ids.extend(
            [parent if up < 0 else id_list[up] for parent, up in zip(parents, ups, strict=True)]
        )
        self.types.extend(kinds)
        self.timestamps.extend(stamps)
        self.parent_positions.extend(ups)
        return True

    def index(self) -> SessionIndex:
        entries = EntryList(self.entries, lines=self.lines, source=self.source, strict=self.strict)
        return SessionIndex.from_fields(
            entries,
            self.id_list,
            self.parent_ids,
            self.types,
            self.timestamps,
            self.ids,
            self.parent_positions,
            self.systems,
        )

    def break_cycles(self) -> None:
        """Refuse (strict) or repair parent-id cycles; O(entries), one step each in a sane file."""
        parent_ids = self.parent_ids
        index = self.ids
        state = bytearray(len(parent_ids))  # 0 unseen, 1 on the current walk, 2 done
        for start in range(len(parent_ids)):
            if state[start]:
                continue
            walk: list[int] = []
            i: int | None = start
            while i is not None and state[i] != 2:
                if state[i] == 1:
                    self._cycle(walk[walk.index(i) :])
                    break
                state[i] = 1
                walk.append(i)
                parent = parent_ids[i]
                i = None if parent is None else index.get(parent)
            for k in walk:
                state[k] = 2

    def _cycle(self, members: list[int]) -> None:
        first = min(members)
        entry_id = self.id_list[first]
        lines = sorted(self.lines[k] for k in members)
        shown = ", ".join(map(str, lines[:5])) + (", …" if len(lines) > 5 else "")
        reason = f"parent ids form a cycle through entry {entry_id!r} (lines {shown})"
        if self.strict:
            raise SessionFileError(self.source, self.lines[first], reason)
        warnings.warn(
            f"{self.source}:{self.lines[first]}: repaired: {reason}; the entry is now a root",
            SessionFileWarning,
            stacklevel=6,
        )
        item = self.entries[first]
        if type(item) is bytes:  # read it now, to repair it
            one = array("I", [self.lines[first]])
            item = EntryList([item], lines=one, source=self.source, strict=False)[0]
        assert not isinstance(item, bytes)
        self.entries[first] = item.model_copy(update={"parent_id": None})
        self.parent_ids[first] = None
        self.parent_positions[first] = -1


def _parse_header(line: bytes, source: str) -> dict[str, Any]:
    try:
        data = from_json(line)
    except ValueError as exc:
        raise SessionFileError(source, 1, f"no session header: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("type") != "session":
        reason = 'no session header (the first line is not {"type":"session",…})'
        raise SessionFileError(source, 1, reason)
    return data


def _checked_version(raw_header: dict[str, Any], number: int, source: str) -> int:
    version = raw_header.get("version", 1)
    if type(version) is not int or version > SESSION_VERSION:
        raise SessionFileError(
            source, number, f"unsupported session version {version!r} (this reads 1 to 3)"
        )
    return version


def _find_header(lines: Sequence[bytes], source: str) -> tuple[int, dict[str, Any], int]:
    """``(index, raw header, version)`` of the first non-blank line, which must be the header."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise SessionFileError(source, None, "empty file (no session header)")
    raw_header = _parse_header(lines[first], source)
    return first, raw_header, _checked_version(raw_header, first + 1, source)


def _find_header_in(data: bytes, source: str) -> tuple[int, int, dict[str, Any], int]:
    """:func:`_find_header` of a whole file's bytes: ``(offset after the header line, its line
    number, raw header, version)``."""
    start, number, size = 0, 1, len(data)
    while start < size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        line = data[start:end]
        if line.strip():
            raw_header = _parse_header(line, source)
            return end + 1, number, raw_header, _checked_version(raw_header, number, source)
        start, number = end + 1, number + 1
    raise SessionFileError(source, None, "empty file (no session header)")


def declared_version(lines: Sequence[bytes] | bytes, *, source: str) -> int:
    """The version a session file's header declares (1 when it has none); ``lines`` may be
    the file's lines or its bytes."""
    if isinstance(lines, bytes):
        return _find_header_in(lines, source)[3]
    return _find_header(lines, source)[2]


def _file_lines(fd: int, size: int) -> Iterator[bytes]:
    """The lines (``\\n`` stripped) of the first ``size`` bytes of an open file, read a slice
    at a time with ``pread``: the lines of a 70 MB file never exist at once (each slice's
    memory is reused, still warm, by the next), and each line is found with ``memchr``
    (``bytes.split`` compares byte by byte: a tenth of an open's own work)."""
    start, want = 0, _SLICE_BYTES
    while start < size:
        chunk = os.pread(fd, min(want, size - start), start)
        if not chunk:  # the file is shorter than it was
            return
        if start + len(chunk) < size:
            stop = chunk.rfind(b"\n") + 1  # the partial last line is read again
            if not stop:  # a line longer than the slice
                want *= 2
                continue
            want = _SLICE_BYTES
        else:
            stop = len(chunk)
        find, at = chunk.find, 0
        while (end := find(b"\n", at, stop)) >= 0:
            yield chunk[at:end]
            at = end + 1
        if at < stop:  # the file's last line, without its newline
            yield chunk[at:stop]
        start += stop


def _finish(
    decoder: _Decoder, raw_header: dict[str, Any], number: int, version: int, source: str
) -> DecodedSession:
    # Only a file with a forward (or unknown) parent id can hold a cycle: the walk is skipped
    # otherwise (bench.session_bench --profile 10k: 15 % of an open); the walk stays the
    # reference in tests/harness/test_decode_shortcuts.py.
    if decoder.forward:
        decoder.break_cycles()
    try:
        header = SessionHeader.model_validate(raw_header)
    except ValidationError as exc:
        reason = f"invalid session header: {invalid_reason(exc)}"
        raise SessionFileError(source, number, reason) from None
    migrated = version if version < SESSION_VERSION else None
    index = decoder.index()
    return DecodedSession(header, index.entries, migrated, index)


def decode_session(lines: Sequence[bytes], *, source: str, strict: bool = True) -> DecodedSession:
    """Validate a session file's complete lines (``\\n`` stripped; blank lines are ignored).

    Versions 1 and 2 are migrated in memory (``migrated_from`` says so); versions above 3 are
    refused. ``strict=False`` skips malformed entry lines with a :class:`SessionFileWarning`.
    """
    first, raw_header, version = _find_header(lines, source)
    decoder = _Decoder(source, strict)
    with gc_paused():
        if version == SESSION_VERSION:
            for start in range(first + 1, len(lines), _BATCH_LINES):
                decoder.take(start + 1, lines[start : start + _BATCH_LINES])
        else:
            raw_header["version"] = SESSION_VERSION
            for index, data in migrated_records(lines, first, version, decoder.reject):
                try:
                    entry = validate_entry_python(data)
                except ValidationError as exc:
                    decoder.reject(index + 1, invalid_reason(exc))
                    continue
                decoder.add_entry(index + 1, entry)
        return _finish(decoder, raw_header, first + 1, version, source)


def decode_session_file(fd: int, size: int, *, source: str, strict: bool = True) -> DecodedSession:
    """:func:`decode_session` of the first ``size`` bytes of an open version 3 session file
    (the caller has checked the version), read with ``pread`` a slice at a time."""
    decoder = _Decoder(source, strict)
    lines = _file_lines(fd, size)
    number = 0
    with gc_paused():
        for line in lines:
            number += 1
            if line.strip():
                break
        else:
            raise SessionFileError(source, None, "empty file (no session header)")
        raw_header = _parse_header(line, source)
        version = _checked_version(raw_header, number, source)
        if version != SESSION_VERSION:
            raise ValueError(f"{source}: a version {version} file needs decode_session")
        first = number + 1
        while batch := list(islice(lines, _BATCH_LINES)):
            decoder.take(first, batch)
            first += len(batch)
        return _finish(decoder, raw_header, number, version, source)
