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


class _HashingFile(io.RawIOBase):
    """A write-only file that hashes what goes through it and stops at ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "wb", closefd=True)
        self.digest = hashlib.sha256()
        self.size = 0
        self.limit = limit

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.size += view.nbytes
        if self.size > self.limit:
            raise _OverLimit
        self.digest.update(view)
        size = view.nbytes
        while view:
            written = self._file.write(view) or 0
            view = view[written:]
        return size

    def close(self) -> None:
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
        limit = min(room, free)
        path, fd = store.open_temp()
        sink = _HashingFile(fd, limit)
        try:
            _Pickler(sink, protocol=PROTOCOL).dump(value)
        except _OverLimit:
            sink.close()
            path.unlink(missing_ok=True)
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
            sink.close()
            path.unlink(missing_ok=True)
            reason = f"cannot be pickled: {type(exc).__name__}: {exc}"
            result.skipped[name] = SkippedValue(kind, _short(reason), serialisable=False)
            continue
        sink.close()
        digest = sink.digest.hexdigest()
        if store.adopt(path, digest):
            result.new_bytes += sink.size
        used += sink.size
        result.values[name] = StoredValue(digest, kind, sink.size)
    return result


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
