"""The JSONL codec of session files: pi's exact bytes out, validated records in, v1/v2 migrated.

Writing reproduces ``JSON.stringify``: compact separators, non-ASCII kept, and JavaScript number
formatting (``0`` not ``0.0``, ``1e-7`` not ``1e-07``). Reading validates every line with
pydantic-core straight from bytes (jiter underneath), with the garbage collector paused; a file is
read a slice at a time, and the entries' structure (ids, parents, types, timestamps) is filed a
batch of lines at a time in C-level passes, unless the batch needs the per-entry checks (a
skipped line, a repeated id, a leaf move): those go entry by entry, in line order.

Like pi 1.6, a line of an entry type this version does not know is kept (as an
:class:`~pi_notebook.harness.entries.UnknownEntry`). Unlike pi, which would loop forever on it,
a file whose parent ids form a cycle is refused naming the line (``strict=False`` repairs it:
the entry of the cycle that comes first in the file becomes a root).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from operator import attrgetter, ge
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from .._gc import gc_paused
from ..ai.js_json import stringify_owned
from .entries import (
    KnownEntry,
    LeafEntry,
    SessionEntry,
    SessionHeader,
    UnknownEntry,
    new_id,
)
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

ENTRY_ADAPTER: TypeAdapter[KnownEntry] = TypeAdapter(KnownEntry)
_UNKNOWN = UnknownEntry.__pydantic_validator__
_ID, _PARENT_ID, _TYPE, _TIMESTAMP = map(attrgetter, ("id", "parent_id", "type", "timestamp"))
_BATCH_LINES = 512
"""Lines validated before their structure is filed in one C-level pass per field."""
_SLICE_BYTES = 1 << 18
"""How much of a session file is read and cut into lines at a time."""


def _unknown_type(exc: ValidationError) -> bool:
    """True when validation failed only because the entry's ``type`` is not one we know."""
    errors = exc.errors(include_url=False)
    return len(errors) == 1 and errors[0]["type"] == "union_tag_invalid"


def validate_entry_json(line: bytes) -> SessionEntry:
    """One entry line: a known entry, or an :class:`UnknownEntry` for a type we do not know."""
    try:
        entry: KnownEntry = ENTRY_ADAPTER.validator.validate_json(line)
    except ValidationError as exc:
        if not _unknown_type(exc):
            raise
        unknown: UnknownEntry = _UNKNOWN.validate_json(line)
        return unknown
    return entry


def _validate_entry_python(data: Any) -> SessionEntry:
    try:
        return ENTRY_ADAPTER.validate_python(data)
    except ValidationError as exc:
        if not _unknown_type(exc):
            raise
        unknown: UnknownEntry = _UNKNOWN.validate_python(data)
        return unknown


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


# --- writing -------------------------------------------------------------------------------------


def encode_record(record: SessionHeader | SessionEntry) -> bytes:
    """One line of a session file, ``\\n`` included, byte-for-byte as pi would write it."""
    data = record.model_dump(mode="json", by_alias=True, exclude_none=True)
    return utf8_line(stringify_owned(data) + "\n")


# --- reading -------------------------------------------------------------------------------------


@dataclass(slots=True)
class DecodedSession:
    header: SessionHeader
    entries: list[SessionEntry]
    migrated_from: int | None
    """The file's version when it was older than 3 (the caller should rewrite it), else None."""
    index: SessionIndex
    """The entries' structure, collected while each entry was fresh from validation."""


def _reason(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return f"not valid JSON ({error['msg']})"
    loc = ".".join(str(part) for part in error["loc"])
    return f"invalid entry: {loc}: {error['msg']}" if loc else f"invalid entry: {error['msg']}"


class _Decoder:
    """Validates lines, raising (strict) or warning and skipping (lenient) in line order."""

    def __init__(self, source: str, strict: bool) -> None:
        self.source = source
        self.strict = strict
        self.entries: list[SessionEntry] = []
        self.lines: list[int] = []  # the line number of each entry
        self.ids: dict[str, int] = {}
        """Each entry's position (checks duplicates and forward parents; the index keeps it)."""
        self.id_list: list[str] = []
        self.parent_ids: list[str | None] = []
        self.types: list[str] = []
        self.timestamps: list[str | None] = []
        self.parent_positions: list[int] = []
        """Each entry's parent's position when it came earlier in the file, else -1."""
        self.forward = False
        """Some entry's parent id was not (yet) seen when it was added: only then can there be
        a cycle (a parent always earlier in the file makes one impossible)."""

    def reject(self, line: int, reason: str, stacklevel: int = 4) -> None:
        if self.strict:
            raise SessionFileError(self.source, line, reason)
        warnings.warn(
            f"{self.source}:{line}: skipped: {reason}", SessionFileWarning, stacklevel=stacklevel
        )

    def add(self, line: int, entry: SessionEntry, stacklevel: int = 4) -> None:
        """One entry, with the checks that refuse it (their messages name the line)."""
        if entry.id in self.ids:
            self.reject(line, f"duplicate entry id {entry.id!r}", stacklevel)
        elif (
            isinstance(entry, LeafEntry)
            and entry.target_id is not None
            and entry.target_id not in self.ids
        ):
            self.reject(line, f"leaf entry targets unknown entry {entry.target_id!r}", stacklevel)
        else:
            up = -1 if entry.parent_id is None else self.ids.get(entry.parent_id, -1)
            if entry.parent_id is not None and up < 0:
                self.forward = True
            self.parent_positions.append(up)
            self.ids[entry.id] = len(self.entries)
            self.entries.append(entry)
            self.lines.append(line)
            self.id_list.append(entry.id)
            self.parent_ids.append(entry.parent_id)
            self.types.append(entry.type)
            self.timestamps.append(entry.timestamp)

    def take(self, number: int, lines: Sequence[bytes]) -> None:
        """Validate the entry lines ``lines`` (the first is line ``number``) and add them.

        Each line is validated from bytes while the structure is filed a batch at a time, in
        one C-level pass per field (:meth:`_file`), when the batch needs none of :meth:`add`'s
        checks. A batch with a skipped line goes through :meth:`add` in line order, so that
        errors and warnings come out exactly in the order of the file.
        """
        validate = ENTRY_ADAPTER.validator.validate_json
        batch: list[SessionEntry] = []
        append = batch.append
        skipped: list[tuple[int, int, str | None]] | None = None
        """(entries before it, line number, reason or None for a blank line) of each line
        that is no entry."""
        for line in lines:
            try:
                append(validate(line))
            except ValidationError as exc:
                if skipped is None:
                    skipped = []
                here = number + len(batch) + len(skipped)
                if not line or line.isspace():
                    skipped.append((len(batch), here, None))
                    continue
                if _unknown_type(exc):
                    try:
                        append(_UNKNOWN.validate_json(line))
                        continue
                    except ValidationError as unknown_exc:
                        exc = unknown_exc
                skipped.append((len(batch), here, _reason(exc)))
        if skipped is None:
            if not self._file(number, batch):
                for line_number, entry in enumerate(batch, number):
                    self.add(line_number, entry, 5)
            return
        line_number, done = number, 0
        for before, here, reason in skipped:
            for entry in batch[done:before]:
                self.add(line_number, entry, 5)
                line_number += 1
            done = before
            if reason is not None:
                self.reject(here, reason, 5)
            line_number += 1
        for entry in batch[done:]:
            self.add(line_number, entry, 5)
            line_number += 1

    def _file(self, number: int, batch: list[SessionEntry]) -> bool:
        """:meth:`add` for consecutive lines, a pass per field; ``False`` (nothing added) when
        an entry needs :meth:`add`'s checks: a leaf move, or an id seen before."""
        count = len(batch)
        if not count:
            return True
        ids = list(map(_ID, batch))
        types = list(map(_TYPE, batch))
        positions = self.ids
        if LEAF_TYPE in types or not positions.keys().isdisjoint(ids):
            return False
        base = len(self.entries)
        new = range(base, base + count)
        positions.update(zip(ids, new, strict=True))
        if len(positions) != base + count:  # an id twice in the batch
            for entry_id in ids:
                positions.pop(entry_id, None)
            return False
        parents = list(map(_PARENT_ID, batch))
        # a parent's position, the entry's own or a later one is not a parent seen before it
        ups = list(map(positions.get, parents, repeat(-1)))
        if any(map(ge, ups, new)):
            ups = [-1 if up >= own else up for up, own in zip(ups, new, strict=True)]
        if ups.count(-1) != parents.count(None):
            self.forward = True
        self.entries.extend(batch)
        self.lines.extend(range(number, number + count))
        self.id_list.extend(ids)
        self.parent_ids.extend(parents)
        self.types.extend(types)
        self.timestamps.extend(map(_TIMESTAMP, batch))
        self.parent_positions.extend(ups)
        return True

    def index(self) -> SessionIndex:
        return SessionIndex.from_fields(
            self.entries,
            self.id_list,
            self.parent_ids,
            self.types,
            self.timestamps,
            self.ids,
            self.parent_positions,
        )

    def break_cycles(self) -> None:
        """Refuse (strict) or repair parent-id cycles; O(entries), one step each in a sane file."""
        entries = self.entries
        index = self.ids
        state = bytearray(len(entries))  # 0 unseen, 1 on the current walk, 2 done
        for start in range(len(entries)):
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
                parent = entries[i].parent_id
                i = None if parent is None else index.get(parent)
            for k in walk:
                state[k] = 2

    def _cycle(self, members: list[int]) -> None:
        first = min(members)
        entry = self.entries[first]
        lines = sorted(self.lines[k] for k in members)
        shown = ", ".join(map(str, lines[:5])) + (", …" if len(lines) > 5 else "")
        reason = f"parent ids form a cycle through entry {entry.id!r} (lines {shown})"
        if self.strict:
            raise SessionFileError(self.source, self.lines[first], reason)
        warnings.warn(
            f"{self.source}:{self.lines[first]}: repaired: {reason}; the entry is now a root",
            SessionFileWarning,
            stacklevel=6,
        )
        self.entries[first] = entry.model_copy(update={"parent_id": None})
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
        reason = f"invalid session header: {_reason(exc)}"
        raise SessionFileError(source, number, reason) from None
    migrated = version if version < SESSION_VERSION else None
    return DecodedSession(header, decoder.entries, migrated, decoder.index())


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
            for index, data in _migrate(lines, first, version, decoder):
                try:
                    entry = _validate_entry_python(data)
                except ValidationError as exc:
                    decoder.reject(index + 1, _reason(exc))
                    continue
                decoder.add(index + 1, entry)
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


def _migrate(
    lines: Sequence[bytes], first: int, version: int, decoder: _Decoder
) -> list[tuple[int, dict[str, Any]]]:
    """Bring v1/v2 entry dicts to v3, as pi-coding-agent does.

    v1 → v2: ids and a linear ``parentId`` chain are added; a compaction's
    ``firstKeptEntryIndex`` (an index into the file's records, header = 0) becomes
    ``firstKeptEntryId``. v2 → v3: message role ``hookMessage`` becomes ``custom``.
    """
    records: list[tuple[int, dict[str, Any]]] = []
    for index in range(first + 1, len(lines)):
        if not lines[index].strip():
            continue
        try:
            data = from_json(lines[index])
        except ValueError as exc:
            decoder.reject(index + 1, f"not valid JSON ({exc})")
            continue
        if not isinstance(data, dict):
            decoder.reject(index + 1, "not a JSON object")
            continue
        records.append((index, data))
    if version < 2:
        previous: str | None = None
        for _, data in records:
            data["id"] = new_id()
            data["parentId"] = previous
            previous = data["id"]
        for _, data in records:
            kept = data.pop("firstKeptEntryIndex", None)
            if data.get("type") != "compaction" or not isinstance(kept, int):
                continue
            if 1 <= kept <= len(records):  # an index into the file's records, header = 0
                data["firstKeptEntryId"] = records[kept - 1][1]["id"]
    for _, data in records:
        message = data.get("message")
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
    return records
