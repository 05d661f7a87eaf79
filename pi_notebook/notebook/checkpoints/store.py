"""The checkpoint store: a content-addressed folder beside the session file.

``analysis.pi.jsonl`` keeps its checkpoints in ``analysis.pi.ckpt/``::

    objects/ab/cdef…        one pickled value each, named by the SHA-256 of its bytes
    manifests/000012.json   one checkpoint: the session entry it belongs to, and for each name
                            the hash, type and size of its value (or why it was not stored)
    tmp/                    values being written (renamed into objects/ when complete)

A value that did not change between checkpoints pickles to the same bytes, so its object is
written once and every later manifest only names it. Manifests are small JSON files, written
whole and renamed into place, so a crash leaves either the old set or the new one.

Loading checks every object against its hash before unpickling anything: a missing, truncated
or altered file makes :meth:`CheckpointStore.load` raise :class:`CheckpointError` and return
nothing, so a restore built on it changes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

__all__ = [
    "MANIFEST_VERSION",
    "CheckpointError",
    "CheckpointStore",
    "Loaded",
    "Manifest",
    "SkippedValue",
    "StoredValue",
    "ValueOrigin",
    "move_store",
    "store_dir_for",
]

MANIFEST_VERSION = 1
_HASH = "sha256"

Reason = Literal["run_start", "cell", "restore", "manual"]
"""Why a checkpoint was taken: an ``%%agent`` run started, the agent ran a cell, variables were
restored, or it was asked for (``Checkpoints.capture``)."""
GC_MARGIN_SECONDS = 0.1
"""Objects touched this close before a collection starts are spared (file times are taken
from a coarser clock than ``time.time()``)."""


def store_dir_for(session_path: Path) -> Path:
    """``analysis.pi.jsonl`` → ``analysis.pi.ckpt`` (in the same folder)."""
    name = session_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return session_path.with_name(stem + ".ckpt")


def move_store(old_session: Path, new_session: Path) -> None:
    """The session file was renamed (its notebook was): its checkpoints follow it, unless
    the new name's folder exists already (then they stay where they were)."""
    source, target = store_dir_for(old_session), store_dir_for(new_session)
    if source.is_dir() and not target.exists():
        with contextlib.suppress(OSError):
            source.rename(target)


class CheckpointError(Exception):
    """A checkpoint that cannot be used: missing, damaged, or not a checkpoint at all."""


@dataclass(frozen=True)
class ValueOrigin:
    """The cell that last assigned a name, from the kernel's history."""

    execution_count: int | None
    cell_id: str | None
    source: str

    def to_data(self) -> dict[str, Any]:
        return {
            "execution_count": self.execution_count,
            "cell_id": self.cell_id,
            "source": self.source,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ValueOrigin:
        count = data.get("execution_count")
        cell = data.get("cell_id")
        return cls(
            execution_count=count if isinstance(count, int) else None,
            cell_id=cell if isinstance(cell, str) else None,
            source=str(data.get("source", "")),
        )


@dataclass(frozen=True)
class StoredValue:
    """A name whose value is in the store: its object's hash, type and pickled size.
    ``alias_of`` names an earlier name bound to the very same object (restored as one)."""

    hash: str
    type: str
    size: int
    alias_of: str | None = None

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"hash": self.hash, "type": self.type, "size": self.size}
        if self.alias_of is not None:
            data["alias_of"] = self.alias_of
        return data


@dataclass(frozen=True)
class SkippedValue:
    """A name left out of a checkpoint, and why. ``serialisable`` is False for a value that
    cannot be pickled at all (an open file, a generator…); ``origin`` is then the cell that
    made it, when the history knows it, so a restore can offer to run it again, and
    ``identity`` which object it was (kernel process and ``id()``), so that a later checkpoint
    can tell the very same object from a new one made by the same code."""

    type: str
    reason: str
    serialisable: bool = True
    origin: ValueOrigin | None = None
    identity: str | None = None

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "reason": self.reason,
            "serialisable": self.serialisable,
        }
        if self.origin is not None:
            data["origin"] = self.origin.to_data()
        if self.identity is not None:
            data["identity"] = self.identity
        return data


@dataclass(frozen=True)
class Manifest:
    """One checkpoint: the namespace as it was when ``entry_id`` was the session's leaf."""

    seq: int
    """Order of the checkpoints in this store (a later one has a higher number)."""
    entry_id: str | None
    """The session entry that was the leaf when it was taken (None: an empty session)."""
    reason: Reason
    created: float
    """Seconds since the epoch."""
    values: dict[str, StoredValue] = field(default_factory=dict)
    skipped: dict[str, SkippedValue] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Bytes of the objects it names (each counted once)."""
        return sum({v.hash: v.size for v in self.values.values()}.values())

    @property
    def unserialisable(self) -> dict[str, SkippedValue]:
        """The names whose values could not be pickled (with the cells that made them)."""
        return {name: s for name, s in self.skipped.items() if not s.serialisable}

    def to_data(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "seq": self.seq,
            "entry_id": self.entry_id,
            "reason": self.reason,
            "created": self.created,
            "values": {name: v.to_data() for name, v in self.values.items()},
            "skipped": {name: s.to_data() for name, s in self.skipped.items()},
        }

    @classmethod
    def from_data(cls, data: Any) -> Manifest:
        """Read a manifest; :class:`CheckpointError` when it is not one."""
        try:
            if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
                raise ValueError("not a version 1 manifest")
            values = {
                str(name): StoredValue(
                    hash=_checked_hash(v["hash"]),
                    type=str(v["type"]),
                    size=int(v["size"]),
                    alias_of=v.get("alias_of"),
                )
                for name, v in data["values"].items()
            }
            skipped = {
                str(name): SkippedValue(
                    type=str(s["type"]),
                    reason=str(s["reason"]),
                    serialisable=bool(s.get("serialisable", True)),
                    origin=ValueOrigin.from_data(s["origin"]) if s.get("origin") else None,
                    identity=str(s["identity"]) if s.get("identity") else None,
                )
                for name, s in data["skipped"].items()
            }
            entry = data["entry_id"]
            reason = data["reason"]
            if reason not in get_args(Reason):
                raise ValueError(f"unknown reason {reason!r}")
            return cls(
                seq=int(data["seq"]),
                entry_id=entry if isinstance(entry, str) else None,
                reason=reason,
                created=float(data["created"]),
                values=values,
                skipped=skipped,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"not a valid checkpoint manifest ({exc})") from None


def _checked_hash(value: Any) -> str:
    text = str(value)
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"bad object hash {text!r}")
    return text


@dataclass(frozen=True)
class Loaded:
    """What :meth:`CheckpointStore.load` read: the values by name, and the names whose
    objects are intact but did not unpickle here (a class no longer importable…), with why.
    The manifest's ``unserialisable`` names were never stored."""

    manifest: Manifest
    values: dict[str, Any]
    failed: dict[str, str]


class CheckpointStore:
    """The checkpoints of one session file (see the module docstring for the layout).

    ``mode`` is the permission bits its files get (the session file's); folders get the same
    with the execute bit wherever a read bit is set."""

    def __init__(self, root: Path, mode: int = 0o600) -> None:
        self.root = root
        self.mode = mode & 0o777
        self._manifests: dict[int, Manifest] | None = None
        self._last_seq: int | None = None

    # --- layout ----------------------------------------------------------------------------------

    @property
    def objects_dir(self) -> Path:
        return self.root / "objects"

    @property
    def manifests_dir(self) -> Path:
        return self.root / "manifests"

    @property
    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    def object_path(self, digest: str) -> Path:
        return self.objects_dir / digest[:2] / digest[2:]

    @property
    def dir_mode(self) -> int:
        mode = self.mode
        for read, execute in ((stat.S_IRUSR, stat.S_IXUSR), (stat.S_IRGRP, stat.S_IXGRP)):
            if mode & read:
                mode |= execute
        if mode & stat.S_IROTH:
            mode |= stat.S_IXOTH
        return mode | stat.S_IRWXU

    def ensure_dir(self, path: Path) -> None:
        """Make ``path`` and its parents up to the root with the store's folder mode."""
        if path.is_dir():
            return
        if path != self.root:
            self.ensure_dir(path.parent)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=self.dir_mode)
            os.chmod(path, self.dir_mode)  # mkdir's mode is masked by the umask

    def open_temp(self) -> tuple[Path, int]:
        """A new file in ``tmp/`` opened for writing, with the store's mode."""
        self.ensure_dir(self.tmp_dir)
        name = f"{os.getpid()}-{time.monotonic_ns()}-{os.urandom(4).hex()}"
        path = self.tmp_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, self.mode)
        os.fchmod(fd, self.mode)
        return path, fd

    def has_object(self, digest: str) -> bool:
        return self.object_path(digest).is_file()

    def adopt(self, temp: Path, digest: str) -> bool:
        """Move a finished temp file to its object path (False: it was there already)."""
        target = self.object_path(digest)
        if target.is_file():
            temp.unlink(missing_ok=True)
            return False
        self.ensure_dir(target.parent)
        os.replace(temp, target)
        return True

    # --- manifests -------------------------------------------------------------------------------

    def manifests(self) -> list[Manifest]:
        """Every readable checkpoint, oldest first (a damaged manifest file is left out)."""
        if self._manifests is None:
            found: dict[int, Manifest] = {}
            for path in self._manifest_files():
                with contextlib.suppress(CheckpointError, OSError, ValueError):
                    manifest = Manifest.from_data(json.loads(path.read_bytes()))
                    found[manifest.seq] = manifest
            self._manifests = found
        return [self._manifests[seq] for seq in sorted(self._manifests)]

    def _manifest_files(self) -> Iterator[Path]:
        if self.manifests_dir.is_dir():
            yield from self.manifests_dir.glob("*.json")

    def allocate_seq(self) -> int:
        """The number of the next checkpoint (the folder is read once, then counted here)."""
        if self._last_seq is None:
            files = [int(p.stem) for p in self._manifest_files() if p.stem.isdigit()]
            self._last_seq = max([0, *files])
        self._last_seq += 1
        return self._last_seq

    def write_manifest(self, manifest: Manifest) -> Path:
        """Write ``manifest`` whole (a temp file renamed into place)."""
        self.ensure_dir(self.manifests_dir)
        path, fd = self.open_temp()
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(manifest.to_data(), separators=(",", ":")).encode())
        target = self.manifests_dir / f"{manifest.seq:06d}.json"
        os.replace(path, target)
        if self._manifests is not None:
            self._manifests[manifest.seq] = manifest
        return target

    def latest_for(self, path: list[str]) -> Manifest | None:
        """The newest checkpoint taken at the deepest entry of ``path`` that has one (``path``:
        entry ids from the root down, as ``Session.get_branch(entry_id)`` gives them)."""
        by_entry: dict[str | None, Manifest] = {}
        for manifest in self.manifests():
            by_entry[manifest.entry_id] = manifest  # oldest first: the newest wins
        for entry_id in reversed(path):
            if entry_id in by_entry:
                return by_entry[entry_id]
        return None

    # --- sizes and pruning -----------------------------------------------------------------------

    def total_size(self) -> int:
        """Bytes of the objects the checkpoints name (each object counted once)."""
        sizes: dict[str, int] = {}
        for manifest in self.manifests():
            for value in manifest.values.values():
                sizes[value.hash] = value.size
        return sum(sizes.values())

    def prune(self, max_total: int, keep: int = 1) -> list[Manifest]:
        """Drop the oldest checkpoints until the objects they name fit ``max_total`` bytes (the
        newest ``keep`` always stay), then :meth:`collect_garbage`. Returns the checkpoints
        dropped."""
        dropped: list[Manifest] = []
        manifests = self.manifests()
        while len(manifests) > keep and self.total_size() > max_total:
            oldest = manifests.pop(0)
            (self.manifests_dir / f"{oldest.seq:06d}.json").unlink(missing_ok=True)
            if self._manifests is not None:
                self._manifests.pop(oldest.seq, None)
            dropped.append(oldest)
        self.collect_garbage()
        return dropped

    def collect_garbage(self) -> int:
        """Delete objects no checkpoint names, and temp files; returns the bytes freed. Start
        it only while no checkpoint is being written: one that starts meanwhile touches the
        objects it reuses (:meth:`touch`), and what was touched since the start is spared."""
        wanted = {v.hash for m in self.manifests() for v in m.values.values()}
        recent = time.time() - GC_MARGIN_SECONDS
        freed = 0
        for folder in (self.objects_dir, self.tmp_dir):
            for path in folder.rglob("*") if folder.is_dir() else ():
                if path.is_dir() or path.parent.name + path.name in wanted:
                    continue
                with contextlib.suppress(OSError):
                    info = path.stat()
                    if info.st_mtime < recent:
                        path.unlink()
                        freed += info.st_size
        return freed

    def touch(self, digest: str) -> None:
        """Mark an object as in use now (a checkpoint reuses it: a collection that started
        before spares it)."""
        with contextlib.suppress(OSError):
            os.utime(self.object_path(digest))

    def forget(self) -> None:
        """Re-read the manifests from disk on next use (another writer changed them)."""
        self._manifests = None
        self._last_seq = None

    # --- loading ---------------------------------------------------------------------------------

    def verify(self, manifest: Manifest) -> None:
        """Check that every object ``manifest`` names is present and intact."""
        for name, value in manifest.values.items():
            self._read_object(name, value)

    def _read_object(self, name: str, value: StoredValue) -> bytes:
        path = self.object_path(value.hash)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(f"the stored value of {name!r} is missing ({path})") from None
        except OSError as exc:
            raise CheckpointError(f"cannot read the stored value of {name!r}: {exc}") from None
        if len(data) != value.size or hashlib.new(_HASH, data).hexdigest() != value.hash:
            raise CheckpointError(
                f"the stored value of {name!r} is damaged ({path}: "
                f"{len(data):,} bytes, expected {value.size:,} with another hash)"
            )
        return data

    def load(self, manifest: Manifest) -> Loaded:
        """The values of ``manifest``. Every object is read and checked first; a missing or
        damaged one raises :class:`CheckpointError` before any value is unpickled."""
        blobs = {name: self._read_object(name, v) for name, v in manifest.values.items()}
        values: dict[str, Any] = {}
        failed: dict[str, str] = {}
        for name, value in manifest.values.items():
            if value.alias_of is not None and value.alias_of in values:
                values[name] = values[value.alias_of]
                continue
            try:
                obj = pickle.loads(blobs[name])
            except Exception as exc:  # a class gone from the kernel, a library missing…
                failed[name] = f"{type(exc).__name__}: {exc}"
                continue
            values[name] = obj
        return Loaded(manifest=manifest, values=values, failed=failed)
