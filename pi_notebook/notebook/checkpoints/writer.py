"""Pickling values into the store, one object per value, named by its hash.

Each value is pickled (cloudpickle, protocol 5) straight into a temp file of the store while
its bytes are hashed, so memory stays flat whatever the value's size: a NumPy buffer goes from
the array to the file without a copy. The finished file is renamed to its hash, or dropped when
the store has that object already (the value did not change). A value that cannot be pickled
is reported with the error, one that would pass the checkpoint's cap is cut off as soon as it
does. :func:`write_values` runs wherever the snapshot is consistent: in a forked child of the
kernel, or in a worker thread (``snapshot``).
"""

from __future__ import annotations

import hashlib
import io
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from .store import CheckpointStore, SkippedValue, StoredValue

__all__ = ["WriteResult", "describe_type", "format_size", "write_values"]

PROTOCOL = 5
MIN_FREE_DISK = 1 << 30
"""Free space a checkpoint always leaves on the disk of the store."""
KEEP_IN_MEMORY = 1 << 20
"""A pickle up to this size is kept from the hashing pass and written from memory."""


def describe_type(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def format_size(size: int) -> str:
    """``1536`` → ``1.5 KB`` (powers of 1024, as ``du -h`` counts)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class _OverLimit(Exception):
    pass


class _Pickler(cloudpickle.CloudPickler):  # type: ignore[misc]  # cloudpickle is untyped
    """cloudpickle, except that an open file is refused: cloudpickle would store a file's
    contents and bring it back as a ``StringIO``, which is not the open file the cell made."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase):
            raise TypeError(f"cannot pickle an open file ({describe_type(obj)})")
        return super().reducer_override(obj)


class _Sink(io.RawIOBase):
    """A write-only stream that hashes what goes through it, stops at ``limit`` bytes, keeps
    the bytes while they are few (``kept``: None once past ``keep``) and writes them to
    ``fd`` when given one."""

    def __init__(self, limit: int, *, keep: int = 0, fd: int | None = None) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "wb", closefd=True) if fd is not None else None
        self.digest = hashlib.sha256()
        self.size = 0
        self.limit = limit
        self._keep = keep
        self.kept: bytearray | None = bytearray() if keep else None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = view.nbytes
        self.size += size
        if self.size > self.limit:
            raise _OverLimit
        self.digest.update(view)
        if self.kept is not None:
            if len(self.kept) + size > self._keep:
                self.kept = None  # checked first: a large buffer is never copied
            else:
                self.kept += view
        if self._file is not None:
            while view:
                written = self._file.write(view) or 0
                view = view[written:]
        return size

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


@dataclass
class WriteResult:
    """What one checkpoint stored: names → objects, names left out, bytes newly written."""

    values: dict[str, StoredValue] = field(default_factory=dict)
    skipped: dict[str, SkippedValue] = field(default_factory=dict)
    new_bytes: int = 0

    def to_data(self) -> dict[str, Any]:
        return {
            "values": {n: v.to_data() for n, v in self.values.items()},
            "skipped": {n: s.to_data() for n, s in self.skipped.items()},
            "new_bytes": self.new_bytes,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> WriteResult:
        values = {
            n: StoredValue(v["hash"], v["type"], int(v["size"]), v.get("alias_of"))
            for n, v in data["values"].items()
        }
        skipped = {
            n: SkippedValue(s["type"], s["reason"], bool(s["serialisable"]))
            for n, s in data["skipped"].items()
        }
        return cls(values=values, skipped=skipped, new_bytes=int(data["new_bytes"]))


def write_values(
    store: CheckpointStore, items: Sequence[tuple[str, Any]], *, max_size: int
) -> WriteResult:
    """Store each ``(name, value)`` of ``items`` (at most ``max_size`` bytes in all; a value
    that does not fit is skipped with a note, the next ones may still fit)."""
    result = WriteResult()
    store.ensure_dir(store.tmp_dir)
    used = 0
    seen: dict[int, str] = {}
    for name, value in items:
        kind = describe_type(value)
        first = seen.get(id(value))
        if first is not None and first in result.values:
            stored = result.values[first]
            result.values[name] = StoredValue(stored.hash, stored.type, stored.size, first)
            continue
        seen[id(value)] = name
        room = max_size - used
        free = shutil.disk_usage(store.root).free - MIN_FREE_DISK
        try:
            digest, size, new = _store_value(store, value, min(room, free))
        except _OverLimit:
            why = (
                f"over the checkpoint's size cap ({format_size(max_size)}"
                + (f", {format_size(room)} left" if used else "")
                + ")"
                if room <= free
                else "not enough free disk space"
            )
            result.skipped[name] = SkippedValue(kind, why)
            continue
        except Exception as exc:  # pickle raises anything a __reduce__ raises
            reason = f"cannot be pickled: {type(exc).__name__}: {exc}"
            result.skipped[name] = SkippedValue(kind, _short(reason), serialisable=False)
            continue
        result.new_bytes += size if new else 0
        used += size
        result.values[name] = StoredValue(digest, kind, size)
    return result


def _store_value(store: CheckpointStore, value: Any, limit: int) -> tuple[str, int, bool]:
    """Pickle ``value`` into the store: ``(hash, size, newly written)``. The first pass only
    hashes (keeping a small pickle's bytes); a large value the store lacks is pickled again
    into a file, so an unchanged large value costs a hash and no write."""
    probe = _Sink(limit, keep=KEEP_IN_MEMORY)
    with probe:
        _Pickler(probe, protocol=PROTOCOL).dump(value)
    digest = probe.digest.hexdigest()
    if store.has_object(digest):
        store.touch(digest)
        return digest, probe.size, False
    path, fd = store.open_temp()
    try:
        if probe.kept is not None:
            with io.FileIO(fd, "wb", closefd=True) as handle:
                handle.write(probe.kept)
            return digest, probe.size, store.adopt(path, digest)
        sink = _Sink(limit, fd=fd)
        with sink:
            _Pickler(sink, protocol=PROTOCOL).dump(value)
        # the same bytes unless the value changed in between (pickled in a thread)
        digest = sink.digest.hexdigest()
        return digest, sink.size, store.adopt(path, digest)
    finally:
        path.unlink(missing_ok=True)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
