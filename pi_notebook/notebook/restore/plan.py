"""What a restore would change, compared name by name, and the approval card that shows it.

Two checkpoints are compared: the one at the node being moved to (the nearest at or above it
on its branch) and one of the namespace as it is now. Each name is

- ``restored``: its value at the node differs from the current one (or it is gone now);
- ``removed``: it exists now but did not exist at the node;
- ``kept``: the same value (same content hash) in both, or an unpicklable value that is the
  very same object, made by the same cell run, in both: left as is;
- ``unrestorable``: its value at the node was not stored (it cannot be pickled, or was over
  the size cap) or does not load here; the cell that made it, when the history knows it, is
  offered to run again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..widgets.protocol import RestoreCard, RestoreCell, RestoreDocumentStep, RestoreVariable
from .document_revert import DocumentStep

if TYPE_CHECKING:
    from ..checkpoints.store import Manifest, SkippedValue, StoredValue, ValueOrigin

__all__ = ["Change", "RestorePlan", "VariableChange", "compare", "recreate_cells"]

Change = Literal["restored", "removed", "kept", "unrestorable"]

_card_numbers = itertools.count(1)


@dataclass(frozen=True)
class VariableChange:
    name: str
    change: Change
    type: str
    note: str = ""
    origin: ValueOrigin | None = None
    """For ``unrestorable``: the cell that made the value."""


def _size(n: int) -> str:
    if n < 1000:
        return f"{n:,} bytes"
    amount = float(n)
    for unit in ("kB", "MB", "GB"):
        amount /= 1000
        if amount < 1000 or unit == "GB":
            break
    return f"{amount:.1f} {unit}"


def _same_object(a: SkippedValue, b: SkippedValue | None) -> bool:
    """Whether an unpicklable value is still the very object it was: the same object (by the
    identity noted at each snapshot) made by the same cell run. Either alone can deceive: an
    ``id()`` is reused once its object is gone, and a cell's code may have been run again by
    other code (or the maker looked up late)."""
    return (
        b is not None
        and a.origin is not None
        and b.origin is not None
        and a.origin.execution_count == b.origin.execution_count
        and a.origin.source == b.origin.source
        and a.identity is not None
        and a.identity == b.identity
        and a.type == b.type
    )


def compare(
    target: Manifest, now: Manifest, failed: dict[str, str] | None = None
) -> list[VariableChange]:
    """Every name of either checkpoint with what a restore does to it (sorted by change, then
    name). ``failed``: names of ``target`` whose values did not load, with why."""
    failed = failed or {}
    changes: list[VariableChange] = []
    for name, value in target.values.items():
        current: StoredValue | None = now.values.get(name)
        if name in failed:
            changes.append(VariableChange(name, "unrestorable", value.type, failed[name]))
        elif current is not None and current.hash == value.hash:
            changes.append(VariableChange(name, "kept", value.type))
        else:
            note = _size(value.size)
            if current is None:
                note += ", gone now" if name not in now.skipped else ""
            changes.append(VariableChange(name, "restored", value.type, note))
    for name, skipped in target.skipped.items():
        if _same_object(skipped, now.skipped.get(name)):
            changes.append(VariableChange(name, "kept", skipped.type, "made by the same cell"))
        else:
            changes.append(
                VariableChange(name, "unrestorable", skipped.type, skipped.reason, skipped.origin)
            )
    at_target = target.values.keys() | target.skipped.keys()
    for name in sorted((now.values.keys() | now.skipped.keys()) - at_target):
        current_type = now.values[name].type if name in now.values else now.skipped[name].type
        changes.append(VariableChange(name, "removed", current_type, "did not exist there"))
    order = {"restored": 0, "removed": 1, "unrestorable": 2, "kept": 3}
    changes.sort(key=lambda c: (order[c.change], c.name))
    return changes


@dataclass(frozen=True)
class Recreate:
    """A cell to run again, and the names it makes that could not be restored."""

    origin: ValueOrigin
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        count = self.origin.execution_count
        return f"In [{count}]" if count is not None else "a cell"


def recreate_cells(changes: Iterable[VariableChange]) -> list[Recreate]:
    """The cells that re-create the unrestorable values, each once, in the order they ran."""
    by_cell: dict[tuple[int | None, str], tuple[ValueOrigin, list[str]]] = {}
    for change in changes:
        if change.change != "unrestorable" or change.origin is None:
            continue
        key = (change.origin.execution_count, change.origin.source)
        by_cell.setdefault(key, (change.origin, []))[1].append(change.name)
    ordered = sorted(by_cell.values(), key=lambda item: item[0].execution_count or 0)
    return [Recreate(origin, tuple(names)) for origin, names in ordered]


@dataclass
class RestorePlan:
    """What a move to ``target_id`` can restore. ``refusal`` says why the variables cannot be
    restored (no checkpoint, a damaged one); the document's steps stand on their own."""

    target_id: str
    target_title: str
    checkpoint: Manifest | None = None
    """The checkpoint at (or above) the node."""
    now: Manifest | None = None
    """The checkpoint of the namespace taken before the move."""
    refusal: str = ""
    variables: list[VariableChange] = field(default_factory=list)
    recreate: list[Recreate] = field(default_factory=list)
    document: list[DocumentStep] = field(default_factory=list)
    card_id: str = field(default_factory=lambda: f"restore-{next(_card_numbers)}")

    @property
    def changes_variables(self) -> bool:
        return not self.refusal and any(v.change != "kept" for v in self.variables)

    @property
    def worth_asking(self) -> bool:
        """Whether the card has anything to approve."""
        return self.changes_variables or bool(self.document)

    def card(self) -> RestoreCard:
        """The approval card's state (pending)."""
        checkpoint = ""
        if self.checkpoint is not None and not self.refusal:
            entry = self.checkpoint.entry_id or "the start"
            checkpoint = f"checkpoint #{self.checkpoint.seq} at entry {entry[:8]}"
        return {
            "id": self.card_id,
            "target_id": self.target_id,
            "title": f"Restore to “{self.target_title}”",
            "checkpoint": checkpoint,
            "refusal": self.refusal,
            "variables": [_variable(v) for v in self.variables] if not self.refusal else [],
            "cells": [_cell(r) for r in self.recreate] if not self.refusal else [],
            "document": [_step(s) for s in self.document],
            "state": "pending",
            "result": "",
        }


def _variable(change: VariableChange) -> RestoreVariable:
    return {"name": change.name, "change": change.change, "type": change.type, "note": change.note}


def _cell(recreate: Recreate) -> RestoreCell:
    names = list(recreate.names)
    return {"label": recreate.label, "source": recreate.origin.source, "names": names}


def _step(step: DocumentStep) -> RestoreDocumentStep:
    return {
        "action": step.action,
        "cell_id": step.cell_id,
        "title": step.title,
        "source": step.source,
        "problem": step.problem,
    }
